"""Where an HTTP MCP server may be (SSRF): checked at install and before every connection.

http(s) only, no credentials in the URL, and every address the host resolves to public
(``autorag.net_guard``: the one rule of webhooks, push endpoints and MCP servers), unless
``mcp_tools.allow_private``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from autorag.errors import InvalidInput
from autorag.net_guard import first_refused, refusal, system_resolver

__all__ = ["MAX_URL", "check_url", "refusal"]

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
        addresses = system_resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise _invalid(f"the host {host!r} cannot be resolved ({exc})") from None
    refused = None if allow_private else first_refused(addresses)
    if refused is not None:
        address, reason = refused
        raise InvalidInput(
            f"MCP servers may not be reached at {host!r}: it resolves to {address}, "
            f"{reason} (set mcp_tools.allow_private = true to allow private servers)",
            code="mcp_url_refused",
        )
    return url


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="mcp_url_invalid")
