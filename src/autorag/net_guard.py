"""Which network addresses this server may call on its own (SSRF): the one rule.

Webhooks, push endpoints and HTTP MCP servers are URLs someone else chose, which this
server then POSTs to. Unless the installation allows private targets, every address a
host resolves to must be public: loopback, private, link-local (the cloud metadata
address 169.254.169.254 among them), multicast, reserved, unspecified and shared (CGNAT)
addresses are refused, and so are IPv4 addresses written inside IPv6 (IPv4-mapped
``::ffff:a.b.c.d``, 6to4, Teredo, NAT64 ``64:ff9b::a.b.c.d``), which would reach the same
machines. A name is resolved once and the caller connects to an address it checked (see
``autorag.webhooks.guard.Target``), so a name that answers a public address for the check
and a private one for the connection (DNS rebinding) gains nothing.

Callers word their own errors: the messages name what the URL is for and which setting
allows private targets.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# (host, port) → the addresses it resolves to, as text; tests pass their own.
Resolver = Callable[[str, int], Sequence[str]]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (an address written as one: itself, without
    asking the resolver); ``OSError``/``UnicodeError`` when it does not resolve."""
    literal = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return [str(ipaddress.ip_address(literal))]
    except ValueError:
        pass  # a name, or a form only the C library reads (2130706433, 0x7f.1): ask it
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # A link-local address's %zone is dropped: the address is what is judged.
    return [str(info[4][0]).split("%", 1)[0] for info in infos]


def refusal(address: str) -> str | None:
    """Why ``address`` may not be called (None: it may, it is public)."""
    try:
        ip: IPAddress = ipaddress.ip_address(address)
    except ValueError:
        return "not an address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
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


def first_refused(addresses: Iterable[str]) -> tuple[str, str] | None:
    """The first of ``addresses`` that may not be called, with why; None when all may."""
    for address in addresses:
        reason = refusal(address)
        if reason is not None:
            return address, reason
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client's address (the server's is the relay's)
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None
