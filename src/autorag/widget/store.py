"""The ``widgets`` table (migration 0019) and all of its SQL; rows leave as ``Widget``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError

from autorag.store.catalog.models import utcnow
from autorag.times import as_utc_or_none
from autorag.widget.models import DEFAULT_THEME, Widget

_metadata = MetaData()
_WS = Table(  # only what a widget's answer needs of its workspace
    "workspaces",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False),
)
W = Table(
    "widgets",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("public_id", String(64), nullable=False, unique=True),
    Column("workspace_id", Integer, ForeignKey("workspaces.id", ondelete="CASCADE")),
    Column("name", String(100), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("allowed_origins", Text, nullable=False),
    Column("model", String(300)),
    Column("greeting", Text, nullable=False),
    Column("theme", Text, nullable=False),
    Column("visitor_per_minute", Integer, nullable=False),
    Column("widget_per_minute", Integer, nullable=False),
    Column("rag_context", Text),
    Column("created_by", String(200)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
_SELECT = select(W, _WS.c.name.label("workspace")).join(_WS, _WS.c.id == W.c.workspace_id)


def insert_widget(engine: Engine, workspace_id: int, values: Mapping[str, Any]) -> bool:
    """A new widget; False when its name is taken in the workspace."""
    now = utcnow()
    row = {**_encoded(values), "workspace_id": workspace_id, "created_at": now, "updated_at": now}
    try:
        with engine.begin() as conn:
            conn.execute(insert(W).values(**row))
    except IntegrityError:
        return False
    return True


def update_widget(
    engine: Engine, workspace_id: int, public_id: str, values: Mapping[str, Any]
) -> bool:
    """Change the given columns; False when the widget is not in the workspace. Raises
    ``IntegrityError`` for a name taken."""
    changes = {**_encoded(values), "updated_at": utcnow()}
    query = update(W).where(W.c.workspace_id == workspace_id, W.c.public_id == public_id)
    with engine.begin() as conn:
        return conn.execute(query.values(**changes)).rowcount > 0


def delete_widget(engine: Engine, workspace_id: int, public_id: str) -> bool:
    query = delete(W).where(W.c.workspace_id == workspace_id, W.c.public_id == public_id)
    with engine.begin() as conn:
        return conn.execute(query).rowcount > 0


def list_widgets(engine: Engine, workspace_id: int) -> list[Widget]:
    query = _SELECT.where(W.c.workspace_id == workspace_id).order_by(W.c.name)
    with engine.connect() as conn:
        return [_widget(row) for row in conn.execute(query)]


def load_widget(engine: Engine, public_id: str, workspace_id: int | None = None) -> Widget | None:
    """The widget with this public id (in this workspace, when given)."""
    query = _SELECT.where(W.c.public_id == public_id)
    if workspace_id is not None:
        query = query.where(W.c.workspace_id == workspace_id)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return _widget(row) if row is not None else None


def _encoded(values: Mapping[str, Any]) -> dict[str, Any]:
    row = dict(values)
    if "allowed_origins" in row:
        row["allowed_origins"] = json.dumps(list(row["allowed_origins"]))
    if "theme" in row:
        row["theme"] = json.dumps(dict(row["theme"]), sort_keys=True)
    return row


def _widget(row: Row[Any]) -> Widget:
    origins = json.loads(row.allowed_origins or "[]")
    theme = {**DEFAULT_THEME, **json.loads(row.theme or "{}")}
    return Widget(
        public_id=row.public_id,
        workspace=row.workspace,
        name=row.name,
        enabled=bool(row.enabled),
        allowed_origins=tuple(str(o) for o in origins),
        model=row.model,
        greeting=row.greeting,
        theme=theme,
        visitor_per_minute=row.visitor_per_minute,
        widget_per_minute=row.widget_per_minute,
        rag_context=row.rag_context,
        created_by=row.created_by,
        created_at=as_utc_or_none(row.created_at),
        updated_at=as_utc_or_none(row.updated_at),
    )
