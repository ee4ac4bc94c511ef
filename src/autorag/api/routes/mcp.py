"""``/mcp``: the MCP server over streamable HTTP (``autorag.mcp_server``), behind the
API's own authentication.

A request is authenticated as every route's is (``Authorization: Bearer`` with a login
token or an API key; 401 without), then handed to the SDK with whom it acts for: the
tools check that caller's permissions and workspaces as the API routes do. A browser
page of an origin not allowed, or a name the server does not answer to, is refused
(403; see ``autorag.mcp_server.http``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from autorag.agent.skills.base import Caller
from autorag.api.auth import Principal, PrincipalDep
from autorag.api.deps import ServerDep
from autorag.api.state import ServerState
from autorag.auth.service import custom_instructions
from autorag.mcp_server.access import McpCall, McpUser, Services
from autorag.mcp_server.http import HttpMcp

router = APIRouter(tags=["mcp"])


class _HandOver(Response):
    """The response is the SDK's: the request, body unread, goes to its manager."""

    def __init__(self, mcp: HttpMcp, call: McpCall) -> None:
        super().__init__()
        self._mcp, self._call = mcp, call

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._mcp.handle(scope, receive, send, self._call)


# POST only: the server is stateless, so there is no session to stream from (GET) or
# to end (DELETE). Not in the OpenAPI document: MCP is JSON-RPC with its own schema.
@router.post("/mcp", include_in_schema=False)
async def mcp_endpoint(request: Request, principal: PrincipalDep, server: ServerDep) -> Response:
    """The MCP streamable HTTP endpoint: one JSON-RPC message, one JSON reply."""
    mcp: HttpMcp = request.app.state.mcp
    await mcp.check(request)
    call = await run_in_threadpool(_call, server, principal)
    return _HandOver(mcp, call)


def _call(server: ServerState, principal: Principal) -> McpCall:
    caller = Caller(principal.role, principal.via, principal.workspaces)
    instructions = custom_instructions(server.context.catalog, principal.user_id)
    user = McpUser(principal.user_id, caller, instructions)
    return McpCall(Services(server.context, server.chat, server.dlp), user)
