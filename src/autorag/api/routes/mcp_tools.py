"""A workspace's MCP tool servers over HTTP (issue 22): list, install, read, change the
allowlist, test, uninstall.

Installing one makes a command run on this machine (or a URL reached) whenever the
agent calls its tools: every route needs ``mcp:admin`` in the workspace (admins), which
is protected (a password login, or an API key with the ``admin:protection`` scope). The
service (``autorag.mcp_tools.service``) does the work; these routes only translate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import WorkspaceDep
from autorag.api.routes.archives import CamelIn
from autorag.auth.permissions import MCP_ADMIN
from autorag.mcp_tools.guard import MAX_URL
from autorag.mcp_tools.models import NAME_PATTERN, McpServer, skill_name
from autorag.mcp_tools.service import (
    MAX_ARG_CHARS,
    MAX_ARGV,
    MAX_HEADERS,
    MAX_TIMEOUT_S,
    McpToolService,
)
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(prefix="/api/workspaces/{workspace}/mcp-servers", tags=["mcp-tools"])

Admin = Annotated[Principal, Depends(require(MCP_ADMIN))]
Name = Annotated[str, Path(min_length=1, max_length=32, pattern=NAME_PATTERN)]
ToolNames = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]],
    Field(max_length=200, description="The tools the agent may call (the allowlist)"),
]

TimeoutS = Annotated[
    float,
    Field(
        gt=0,
        le=MAX_TIMEOUT_S,
        description="How long a call may take once the server is up (the skill timeout "
        "bounds every call whatever this says)",
    ),
]


class Out(BaseModel):
    model_config = ConfigDict(**CAMEL_CASE)


class ToolOut(Out):
    name: str
    description: str
    input_schema: dict[str, Any]
    allowed: bool
    skill: str  # the name the agent calls it by


class ServerOut(Out):
    name: str
    transport: Literal["stdio", "http"]
    command: list[str]  # the argv of a stdio server
    url: str | None
    header_names: list[str]  # values are sealed, never shown
    tools: list[ToolOut]
    allowed: list[str]
    timeout_s: float | None
    created_at: datetime
    updated_at: datetime


class ServerListOut(Out):
    servers: list[ServerOut]


class TestOut(Out):
    ok: bool
    tools: list[str]
    missing: list[str]  # allowed tools the server no longer lists
    latency_ms: int
    error: str | None


class ServerIn(CamelIn):
    name: str = Field(min_length=1, max_length=32, pattern=NAME_PATTERN)
    command: list[Annotated[str, Field(max_length=MAX_ARG_CHARS)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ARGV,
        description="A stdio server's argv (run without a shell); or give url",
    )
    url: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_URL,
        description="A streamable-HTTP server; private hosts refused unless "
        "mcp_tools.allow_private",
    )
    headers: dict[str, Annotated[str, Field(max_length=4000)]] = Field(
        default_factory=dict, max_length=MAX_HEADERS, description="HTTP only; stored sealed"
    )
    tools: ToolNames | None = Field(
        default=None, description="The allowlist; omitted: every tool the server lists now"
    )
    timeout_s: TimeoutS | None = None


class ServerPatch(CamelIn):
    """Only the keys given change; ``timeoutS: null`` clears the server's own bound."""

    tools: ToolNames | None = None
    timeout_s: TimeoutS | None = None


def _service(context: WorkspaceDep) -> McpToolService:
    return McpToolService(context)


Servers = Annotated[McpToolService, Depends(_service)]


def _out(server: McpServer) -> ServerOut:
    tools = [
        ToolOut(
            name=t.name, description=t.description, input_schema=t.input_schema,
            allowed=t.name in server.allowed, skill=skill_name(server.name, t.name),
        )
        for t in server.tools
    ]  # fmt: skip
    return ServerOut(
        name=server.name, transport=server.transport, command=list(server.command),
        url=server.url, header_names=list(server.header_names), tools=tools,
        allowed=list(server.allowed), timeout_s=server.timeout_s,
        created_at=server.created_at,
        updated_at=server.updated_at,
    )  # fmt: skip


@router.get("", response_model=ServerListOut)
def list_servers(principal: Admin, servers: Servers) -> ServerListOut:
    """The workspace's MCP servers, with their tools and allowlists."""
    return ServerListOut(servers=[_out(s) for s in servers.list()])


@router.post("", status_code=201, response_model=ServerOut)
async def install_server(principal: Admin, servers: Servers, body: ServerIn) -> ServerOut:
    """Install a server: it is reached once and its tools listed. 400 for a bad command or
    URL, a refused host, an unknown tool, or a server that cannot be reached
    (``mcp_server_unreachable``); 409 for a name taken."""
    server = await run_in_threadpool(
        lambda: servers.install(
            body.name, command=body.command, url=body.url, headers=body.headers,
            tools=body.tools, timeout_s=body.timeout_s, actor=principal.username,
        )
    )  # fmt: skip
    return _out(server)


@router.get("/{name}", response_model=ServerOut)
def get_server(principal: Admin, servers: Servers, name: Name) -> ServerOut:
    return _out(servers.get(name))


@router.patch("/{name}", response_model=ServerOut)
def update_server(principal: Admin, servers: Servers, name: Name, body: ServerPatch) -> ServerOut:
    """Replace the allowlist (each tool one the server lists) or the call bound."""
    given = body.model_fields_set
    clear = "timeout_s" in given and body.timeout_s is None
    return _out(servers.update(name, tools=body.tools, timeout_s=body.timeout_s,
                               clear_timeout=clear))  # fmt: skip


@router.delete("/{name}", status_code=204, response_class=Response)
def uninstall_server(principal: Admin, servers: Servers, name: Name) -> None:
    servers.uninstall(name, actor=principal.username)


@router.post("/{name}/test", response_model=TestOut)
async def test_server(principal: Admin, servers: Servers, name: Name) -> TestOut:
    """Reach the server again and list its tools (kept); ``ok`` false with the reason
    when it cannot be reached."""
    outcome = await run_in_threadpool(servers.test, name)
    return TestOut(
        ok=outcome.ok, tools=list(outcome.tools), missing=list(outcome.missing),
        latency_ms=outcome.latency_ms, error=outcome.error,
    )  # fmt: skip
