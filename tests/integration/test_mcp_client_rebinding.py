"""An HTTP MCP server reached through the SSRF guard: every connection goes to the
address the guard checked, so a name that rebinds to a private address between the
check and the connection is refused (the server never sees the request).

The server is the tool double (``tests/doubles/mcp_tool_server.py``) over streamable
HTTP on loopback; names resolve through a resolver the test controls, as a hostile DNS
server would answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send
from tests.doubles.mcp_tool_server import server as tool_server

from autorag.errors import InvalidInput, Unavailable
from autorag.mcp_tools import client
from autorag.mcp_tools.models import Endpoint

TIMEOUT_S = 30.0


@dataclass
class Counted:
    """The app, counting the HTTP requests that reach it."""

    app: ASGIApp
    requests: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests += 1
        await self.app(scope, receive, send)


@dataclass
class Dns:
    """Answers each lookup with the next of ``answers`` (the last one repeats)."""

    answers: list[list[str]]
    asked: list[str] = field(default_factory=list)

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


@dataclass
class Served:
    port: int
    counted: Counted


@pytest.fixture(scope="module")
def served(serve_asgi: Callable[[ASGIApp], str]) -> Iterator[Served]:
    # The double checks no Host header: the test reaches it under made-up names.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    counted = Counted(tool_server.streamable_http_app(transport_security=security))
    url = serve_asgi(counted)
    yield Served(int(url.rsplit(":", 1)[1]), counted)


def _list(served: Served, dns: Dns, *, allow_private: bool) -> list[str]:
    endpoint = Endpoint("http", url=f"http://tools.example:{served.port}/mcp")
    listed = client.list_tools(
        endpoint, timeout_s=TIMEOUT_S, allow_private=allow_private, where="tools",
        resolver=dns,
    )  # fmt: skip
    return [tool.name for tool in listed]


def test_the_connection_goes_to_the_address_checked(served: Served) -> None:
    # tools.example exists in no DNS: the tools come back only because the connection
    # went to the address the guard's lookup gave.
    dns = Dns([["127.0.0.1"]])
    assert "lookup" in _list(served, dns, allow_private=True)
    assert set(dns.asked) == {"tools.example"}


def test_a_name_rebound_to_a_private_address_is_refused_at_connection(served: Served) -> None:
    dns = Dns([["93.184.216.34"], ["127.0.0.1"]])  # public for the check, then loopback
    before = served.counted.requests
    with pytest.raises(Unavailable) as refused:
        _list(served, dns, allow_private=False)
    assert "may not be reached at 'tools.example'" in refused.value.message
    assert "127.0.0.1, a loopback address" in refused.value.message
    assert len(dns.asked) >= 2
    assert served.counted.requests == before  # nothing reached the server


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fe80::1", "::ffff:10.0.0.1",
     "100.64.0.1", "0.0.0.0", "224.0.0.1", "64:ff9b::a00:1"],
)  # fmt: skip
def test_a_private_address_is_refused_before_any_connection(served: Served, address: str) -> None:
    before = served.counted.requests
    with pytest.raises(InvalidInput) as refused:
        _list(served, Dns([["93.184.216.34", address]]), allow_private=False)
    assert refused.value.code == "mcp_url_refused"
    assert served.counted.requests == before
