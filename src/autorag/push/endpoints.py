"""A subscription's endpoint is hostile input: the URL a browser's push service gave it,
or any URL a caller claims it got. This server POSTs to it, so it must not become a way
into the LAN (SSRF).

An endpoint must be ``https``, carry no credentials, and resolve only to public
addresses (``autorag.net_guard``, the rule of every URL this server is given). With
``webhooks.allow_private`` (the installation's one switch for "this server may call
private addresses") private addresses are allowed, and so is plain ``http`` to
loopback, which only a push service on this machine can be (tests, a local relay). It
is checked when a browser subscribes and again before every send, and the send goes to
the very address checked (``push.wire``: the host stays in ``Host`` and in TLS's SNI and
certificate check), so a name that resolves to a public address for the check and to a
private one for the connection (DNS rebinding) gains nothing.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from autorag.errors import InvalidInput
from autorag.net_guard import first_refused, system_resolver

MAX_ENDPOINT_CHARS = 2000


def check_endpoint(url: str, *, allow_private: bool) -> str:
    """The address to send to if this server may send to ``url``, else InvalidInput
    saying why."""
    if len(url) > MAX_ENDPOINT_CHARS:
        raise InvalidInput(f"a push endpoint has at most {MAX_ENDPOINT_CHARS} characters")
    if any(ch.isspace() or ord(ch) < 32 or ch == "\\" for ch in url):
        # What one URL parser and another read differently: never a push service's URL.
        raise InvalidInput("a push endpoint has no spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput("the push endpoint is not a URL") from None
    host = parts.hostname
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidInput("a push endpoint is an https:// URL")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput("a push endpoint carries no credentials")
    addresses = _resolve(host, port)
    if parts.scheme == "http" and not (
        allow_private and all(ipaddress.ip_address(address).is_loopback for address in addresses)
    ):
        raise InvalidInput("a push endpoint is an https:// URL")
    refused = None if allow_private else first_refused(addresses)
    if refused is not None:
        raise InvalidInput(
            f"the push endpoint's host {host} resolves to {refused[0]}, {refused[1]}: "
            "refused (webhooks.allow_private allows it)"
        )
    return addresses[0]


def _resolve(host: str, port: int | None) -> list[str]:
    try:
        addresses = system_resolver(host, port or 443)
    except (OSError, UnicodeError):
        raise InvalidInput(f"the push endpoint's host {host} does not resolve") from None
    if not addresses:
        raise InvalidInput(f"the push endpoint's host {host} does not resolve")
    return addresses
