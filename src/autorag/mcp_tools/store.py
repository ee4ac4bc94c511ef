"""The ``mcp_servers`` table (migration 0020) and all of its SQL.

A server is installed or uninstalled in one transaction with its event
(``mcp.installed`` / ``mcp.uninstalled``, the outbox). Headers of an HTTP server are
sealed (``autorag.secretbox``) bound to the row's id, so they are sealed after the row
exists, in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError

from autorag.mcp_tools.models import (
    INSTALLED_EVENT,
    UNINSTALLED_EVENT,
    McpServer,
    ToolInfo,
    Transport,
)
from autorag.store.catalog import outbox
from autorag.store.catalog.models import utcnow
from autorag.times import as_utc

_metadata = MetaData()
S = Table(
    "mcp_servers",
    _metadata,
    Column("id", Integer, primary_key=True),
    # A foreign key to workspaces (ON DELETE CASCADE) in the migration: a workspace's
    # servers go with it.
    Column("workspace_id", Integer, nullable=False),
    Column("name", String(64), nullable=False),
    Column("transport", String(16), nullable=False),
    Column("command", Text, nullable=False),  # JSON argv list; [] for HTTP
    Column("url", Text),
    Column("header_names", Text, nullable=False),  # JSON list of names
    Column("headers_sealed", Text),  # JSON object of headers, sealed
    Column("tools", Text, nullable=False),  # JSON list of {name, description, inputSchema}
    Column("allowed", Text, nullable=False),  # JSON list of tool names
    Column("timeout_s", Float),  # a call's bound once the server is up; NULL: the skill's
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("workspace_id", "name", name="uq_mcp_servers_workspace_name"),
)
Sealer = Callable[[str, str], str]  # (plaintext, bound_to) -> sealed


@dataclass(frozen=True)
class StoredServer:
    id: int
    server: McpServer
    headers_sealed: str | None


@dataclass(frozen=True)
class NewServer:
    name: str
    transport: Transport
    command: Sequence[str]
    url: str | None
    headers: Mapping[str, str]
    tools: Sequence[ToolInfo]
    allowed: Sequence[str]
    timeout_s: float | None = None


def insert_server(
    engine: Engine,
    workspace_id: int,
    workspace: str,
    new: NewServer,
    *,
    seal: Sealer,
    actor: str | None,
) -> bool:
    """The server and its ``mcp.installed`` event; False when the name is taken."""
    now = utcnow()
    values = {
        "workspace_id": workspace_id, "name": new.name, "transport": new.transport,
        "command": json.dumps(list(new.command)), "url": new.url,
        "header_names": json.dumps(sorted(new.headers)), "tools": _tools_json(new.tools),
        "allowed": json.dumps(sorted(set(new.allowed))), "timeout_s": new.timeout_s,
        "created_at": now, "updated_at": now,
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            row_id = conn.execute(insert(S).values(**values).returning(S.c.id)).scalar_one()
            if new.headers:
                sealed = seal(json.dumps(dict(new.headers)), str(row_id))
                conn.execute(update(S).where(S.c.id == row_id).values(headers_sealed=sealed))
            data = {"server": new.name, "transport": new.transport, "tools": sorted(new.allowed)}
            outbox.emit(conn, INSTALLED_EVENT, data, workspace=workspace, actor=actor)
    except IntegrityError:
        return False
    return True


def set_allowed(engine: Engine, workspace_id: int, name: str, allowed: Sequence[str]) -> bool:
    return _update(engine, workspace_id, name, {"allowed": json.dumps(sorted(set(allowed)))})


def set_timeout(engine: Engine, workspace_id: int, name: str, timeout_s: float | None) -> bool:
    return _update(engine, workspace_id, name, {"timeout_s": timeout_s})


def set_tools(engine: Engine, workspace_id: int, name: str, tools: Sequence[ToolInfo]) -> bool:
    return _update(engine, workspace_id, name, {"tools": _tools_json(tools)})


def _update(engine: Engine, workspace_id: int, name: str, values: Mapping[str, Any]) -> bool:
    statement = (
        update(S)
        .where(S.c.workspace_id == workspace_id, S.c.name == name)
        .values(**values, updated_at=utcnow())
    )
    with engine.begin() as conn:
        return conn.execute(statement).rowcount == 1


def delete_server(
    engine: Engine, workspace_id: int, workspace: str, name: str, *, actor: str | None
) -> bool:
    """The server gone and its ``mcp.uninstalled`` event; False when there was none."""
    with engine.begin() as conn:
        gone = conn.execute(delete(S).where(S.c.workspace_id == workspace_id, S.c.name == name))
        if gone.rowcount != 1:
            return False
        outbox.emit(conn, UNINSTALLED_EVENT, {"server": name}, workspace=workspace, actor=actor)
    return True


def load_server(
    engine: Engine, workspace_id: int, workspace: str, name: str
) -> StoredServer | None:
    found = _servers(engine, workspace_id, workspace, name)
    return found[0] if found else None


def list_servers(engine: Engine, workspace_id: int, workspace: str) -> list[StoredServer]:
    return _servers(engine, workspace_id, workspace, None)


def _servers(
    engine: Engine, workspace_id: int, workspace: str, name: str | None
) -> list[StoredServer]:
    query = select(S).where(S.c.workspace_id == workspace_id)
    if name is not None:
        query = query.where(S.c.name == name)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(S.c.name)).all()
    return [_stored(row, workspace) for row in rows]


def _stored(row: Row[Any], workspace: str) -> StoredServer:
    tools = tuple(
        ToolInfo(t["name"], t.get("description", ""), t.get("inputSchema", {}))
        for t in json.loads(row.tools or "[]")
    )
    server = McpServer(
        name=row.name, workspace=workspace, transport=cast("Transport", row.transport),
        command=tuple(json.loads(row.command or "[]")), url=row.url,
        header_names=tuple(json.loads(row.header_names or "[]")), tools=tools,
        allowed=tuple(json.loads(row.allowed or "[]")),
        timeout_s=None if row.timeout_s is None else float(row.timeout_s),
        created_at=as_utc(row.created_at), updated_at=as_utc(row.updated_at),
    )  # fmt: skip
    return StoredServer(int(row.id), server, row.headers_sealed)


def _tools_json(tools: Sequence[ToolInfo]) -> str:
    return json.dumps(
        [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
         for t in tools]
    )  # fmt: skip
