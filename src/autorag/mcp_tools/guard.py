"""Where an HTTP MCP server may be (SSRF): checked at install and before every connection.

http(s) only, no credentials in the URL, and every address the host resolves to public
(``autorag.net_guard``: the one rule of webhooks, push endpoints and MCP servers), unless
``mcp_tools.allow_private``.

``check_url`` gives the early, specific error; ``GuardedBackend`` is what keeps it true.
It is the network backend of the client's connection pool: each connection resolves the
host once, checks every address and connects to the address it checked (TLS still
verifies the certificate against the host's name). A name that answers a public address
for the check and a private one a moment later (DNS rebinding) gains nothing, and neither
does a redirect within the server's origin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
import httpcore2

from autorag.errors import InvalidInput
from autorag.net_guard import Resolver, first_refused, refusal, system_resolver

__all__ = ["MAX_URL", "GuardedBackend", "check_url", "guarded_transport", "refusal"]

MAX_URL = 2000
_SCHEMES = {"http": 80, "https": 443}


def check_url(url: str, *, allow_private: bool, resolver: Resolver | None = None) -> str:
    """``url`` when it may be reached; ``InvalidInput`` (``mcp_url_refused`` for a private
    address) saying why not."""
    if not url or len(url) > MAX_URL or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise _invalid("an MCP server URL is one http(s) URL of at most 2000 characters")
    try:
        parts = urlsplit(url)
        port = parts.port or _SCHEMES.get(parts.scheme, 0)
    except ValueError as exc:
        raise _invalid(f"not a valid URL: {exc}") from None
    if parts.scheme not in _SCHEMES or not parts.hostname:
        raise _invalid("an MCP server URL starts with https:// or http:// and names a host")
    if "@" in parts.netloc:
        raise _invalid("an MCP server URL carries no user name or password: use a header")
    host = parts.hostname.lower()
    try:
        addresses = (resolver or system_resolver)(host, port)
    except (OSError, UnicodeError) as exc:
        raise _invalid(f"the host {host!r} cannot be resolved ({exc})") from None
    refused = None if allow_private else first_refused(addresses)
    if refused is not None:
        raise InvalidInput(_refused_message(host, *refused), code="mcp_url_refused")
    return url


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses the rule allows, to the very address it checked."""

    def __init__(self, *, allow_private: bool, resolver: Resolver | None = None) -> None:
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver
        self.inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await anyio.to_thread.run_sync(self.resolver, host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore2.ConnectError(f"the host {host!r} cannot be resolved ({exc})") from None
        if not addresses:
            raise httpcore2.ConnectError(f"the host {host!r} resolves to no address")
        refused = None if self.allow_private else first_refused(addresses)
        if refused is not None:
            # A connection error: the SDK reports it as the call's failure, with this text.
            raise httpcore2.ConnectError(_refused_message(host, *refused))
        failure: httpcore2.ConnectError | None = None
        for address in addresses:  # each one checked; the next when one does not answer
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options,
                )  # fmt: skip
            except httpcore2.ConnectError as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("MCP servers are reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def guarded_transport(*, allow_private: bool, resolver: Resolver | None = None) -> Any:
    """An ``httpx2`` transport (the MCP SDK's HTTP client) whose every connection goes
    through ``GuardedBackend``. No proxy from the environment: a proxy would connect
    where this guard never looked."""
    import httpx2

    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    pool = getattr(transport, "_pool", None)
    # httpx2 offers no public way to choose the pool's network backend. Fail closed if
    # its insides change: never hand out a transport that connects unguarded.
    if not isinstance(pool, httpcore2.AsyncConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpx2's transport changed: the MCP connection guard cannot apply")
    pool._network_backend = GuardedBackend(allow_private=allow_private, resolver=resolver)
    return transport


def _refused_message(host: str, address: str, reason: str) -> str:
    return (
        f"MCP servers may not be reached at {host!r}: it resolves to {address}, "
        f"{reason} (set mcp_tools.allow_private = true to allow private servers)"
    )


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="mcp_url_invalid")
