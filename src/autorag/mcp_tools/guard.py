"""Where an HTTP MCP server may be (SSRF): checked at install and before every connection.

The rule is webhooks' (``autorag.webhooks.guard.refusal``): http(s) only, no credentials
in the URL, and every address the host resolves to public, unless
``mcp_tools.allow_private``. It is restated here because the webhooks package sits in a
layer above this one; ``tests/integration/test_mcp_tools.py`` checks the two agree.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from autorag.errors import InvalidInput

MAX_URL = 2000
_SCHEMES = {"http": 80, "https": 443}


def check_url(url: str, *, allow_private: bool) -> str:
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
        addresses = [str(i[4][0]).split("%", 1)[0] for i in socket.getaddrinfo(host, port)]
    except (OSError, UnicodeError) as exc:
        raise _invalid(f"the host {host!r} cannot be resolved ({exc})") from None
    if not allow_private:
        for address in addresses:
            reason = refusal(address)
            if reason is not None:
                raise InvalidInput(
                    f"MCP servers may not be reached at {host!r}: it resolves to {address}, "
                    f"{reason} (set mcp_tools.allow_private = true to allow private servers)",
                    code="mcp_url_refused",
                )
    return url


def refusal(address: str) -> str | None:
    """Why ``address`` may not be reached (None: it is public)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not an address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            return refusal(str(embedded))
    checks = (
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "not a public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="mcp_url_invalid")
