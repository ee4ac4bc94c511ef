"""The MCP server over streamable HTTP, for the API's ``/mcp`` route.

The route authenticates the request as every API route does, then hands it here with
the call it acts for (``McpCall``), which travels in the request's ASGI scope to the
tools. Stateless: each POST is answered on its own (one JSON reply), so no session
outlives its credentials and a session id names nobody.

Browser pages are refused unless their origin is allowed (``server.cors_origins``, or
a loopback page). A request that reached the server on a loopback address also has its
Host header checked, with the SDK's DNS-rebinding protection: a page of another name
that resolves to 127.0.0.1 is refused. The check is made per request, on the address the
request came in on, since ``autorag serve --host`` binds where the settings do not say.
"""

from __future__ import annotations

import ipaddress
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from autorag.config import Settings
from autorag.errors import Forbidden, Unauthorized
from autorag.mcp_server.access import McpCall
from autorag.mcp_server.server import build_server

CALL_KEY = "autorag.mcp_call"  # in the ASGI scope's "state": the call a request acts for
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
# The route checks first; the SDK's own copy of the check would see no other request.
_CHECKED_BY_THE_ROUTE = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class HttpMcp:
    """The SDK's server and session manager behind ``/mcp``. One per app: the manager
    runs once, inside the app's lifespan (``running``)."""

    def __init__(self, settings: Settings) -> None:
        self.origins = [*LOOPBACK_ORIGINS, *settings.server.cors_origins]
        hosts = [*LOOPBACK_HOSTS, *(urlsplit(o).netloc for o in settings.server.cors_origins)]
        self._loopback_guard = TransportSecurityMiddleware(
            TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[h for h in hosts if h],
                allowed_origins=self.origins,
            )
        )
        self.server: MCPServer[Any] = build_server(call_of)
        # Builds the session manager; the Starlette app it answers is not mounted: the
        # API's route calls the manager after its own authentication and checks.
        self.server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=_CHECKED_BY_THE_ROUTE
        )
        self.manager = self.server.session_manager

    def running(self) -> AbstractAsyncContextManager[None]:
        return self.manager.run()

    async def check(self, request: Request) -> None:
        """Refuse a browser page of an origin not allowed, and on a loopback address a
        Host that is none of the server's names (what a DNS-rebinding attack sends)."""
        origin = request.headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.origins):
            raise Forbidden("a page of this origin may not call /mcp", code="origin_not_allowed")
        if _on_loopback(request):
            refused = await self._loopback_guard.validate_request(request, is_post=False)
            if refused is not None:
                raise Forbidden(
                    "this server is not reached by that name (Host header); list the name's"
                    " origin in server.cors_origins",
                    code="host_not_allowed",
                )

    async def handle(self, scope: Scope, receive: Receive, send: Send, call: McpCall) -> None:
        state = {**scope.get("state", {}), CALL_KEY: call}
        await self.manager.handle_request({**scope, "state": state}, receive, send)


def call_of(context: Context) -> McpCall:
    """The call the API's route authenticated, from the request the SDK hands the tool."""
    request = context.request_context.request
    scope = getattr(request, "scope", None)
    call = scope.get("state", {}).get(CALL_KEY) if isinstance(scope, dict) else None
    if not isinstance(call, McpCall):  # never reached through the route: fail closed
        raise Unauthorized("authentication required")
    return call


def origin_allowed(origin: str, allowed: list[str]) -> bool:
    """Exactly, or ``scheme://host:*`` for that host on any port: what follows the host
    is digits only, so ``http://127.0.0.1:1.evil.example`` is no loopback page."""
    for pattern in allowed:
        if origin == pattern:
            return True
        if pattern.endswith(":*") and origin.startswith(pattern[:-2] + ":"):
            port = origin[len(pattern) - 1 :]
            if port.isascii() and port.isdigit() and len(port) <= 5:
                return True
    return False


def _on_loopback(request: Request) -> bool:
    """Whether the request came in on a loopback address of this server (or on one it
    cannot tell: checked as strictly)."""
    server = request.scope.get("server")
    host = server[0] if server else None
    if not isinstance(host, str):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return True
