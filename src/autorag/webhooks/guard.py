"""Where a webhook may POST (SSRF): checked when it is registered AND before every attempt.

A URL is http or https, names a host, carries no credentials; its host is resolved and
every address it resolves to must be public (``autorag.net_guard``, the rule this server
keeps for every URL someone else chose), unless ``webhooks.allow_private``. The request
then goes to the very address checked (``Target.pinned_url``, with the host in ``Host``
and in TLS's SNI), so a name that resolves to a public address for the check and to a
private one for the connection (DNS rebinding) gains nothing. Redirects are never
followed (the delivery counts one as a failure): a public URL cannot bounce a POST into
the LAN.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from autorag.errors import InvalidInput
from autorag.net_guard import Resolver, first_refused, refusal, system_resolver

__all__ = ["MAX_URL", "Resolver", "Target", "display_url", "refusal", "resolve_target"]

MAX_URL = 2000
_SCHEMES = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Target:
    """A URL that passed the guard, and the address its request must go to."""

    url: str
    scheme: str
    host: str  # as written (lowercase), without brackets
    port: int
    path: str  # path and query, at least "/"
    address: str  # the checked address

    @property
    def pinned_url(self) -> str:
        """The URL with its host replaced by the checked address."""
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.scheme}://{shown}:{self.port}{self.path}"

    @property
    def host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port == _SCHEMES[self.scheme] else f"{shown}:{self.port}"


def display_url(url: str) -> str:
    """``scheme://host[:port]``: what logs show of a webhook's URL (its path and query
    may hold a token, as many services' hook URLs do)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return "(an invalid URL)"


def checked_url(url: str) -> SplitResult:
    """The URL's parts, or InvalidInput saying what is wrong with its form."""
    if len(url) > MAX_URL:
        raise _invalid(f"a webhook URL has at most {MAX_URL} characters")
    if any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
        raise _invalid("a webhook URL has no spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError as exc:
        raise _invalid(f"not a valid URL: {exc}") from None
    if parts.scheme not in _SCHEMES:
        raise _invalid("a webhook URL starts with https:// or http://")
    if "@" in parts.netloc:
        raise _invalid("a webhook URL carries no user name or password: the secret signs it")
    if not parts.hostname:
        raise _invalid("a webhook URL names a host")
    if parts.fragment:
        raise _invalid("a webhook URL has no #fragment")
    return parts


def resolve_target(url: str, *, allow_private: bool, resolver: Resolver | None = None) -> Target:
    """``url`` checked and resolved (see the module docstring); InvalidInput (code
    ``webhook_url_refused`` for an address refused) otherwise."""
    parts = checked_url(url)
    host = (parts.hostname or "").lower()
    port = parts.port or _SCHEMES[parts.scheme]
    try:
        addresses = list((resolver or system_resolver)(host, port))
    except (OSError, UnicodeError) as exc:
        raise _invalid(f"the host {host!r} cannot be resolved ({exc})") from None
    if not addresses:
        raise _invalid(f"the host {host!r} resolves to no address")
    refused = None if allow_private else first_refused(addresses)
    if refused is not None:
        address, reason = refused
        raise InvalidInput(
            f"webhooks may not reach {host!r}: it resolves to {address}, {reason} "
            "(set webhooks.allow_private = true to allow private targets)",
            code="webhook_url_refused",
        )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(url, parts.scheme, host, port, path, addresses[0])


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="webhook_url_invalid")
