"""``/mcp``'s browser checks, decided per request on the address it came in on: Origin
everywhere, Host (DNS rebinding) where the request reached a loopback address. The
loopback case runs on a real server in tests/integration/test_mcp_server.py; a
network address is what a test machine cannot reach, so here the request is built."""

from __future__ import annotations

import anyio
import pytest
from starlette.requests import Request

from autorag.config import Settings
from autorag.errors import Forbidden
from autorag.mcp_server.http import HttpMcp


def _request(server: tuple[str, int] | None, **headers: str) -> Request:
    raw = [(name.lower().encode(), value.encode()) for name, value in headers.items()]
    return Request({"type": "http", "method": "POST", "path": "/mcp", "headers": raw,
                    "server": server})  # fmt: skip


def _refusal(guard: HttpMcp, request: Request) -> str | None:
    try:
        anyio.run(guard.check, request)
    except Forbidden as exc:
        return exc.code
    return None


@pytest.fixture(scope="module")
def guard() -> HttpMcp:
    return HttpMcp(Settings(server={"cors_origins": ["https://kb.example.com"]}))


def test_on_a_network_address_any_name_but_only_allowed_origins(guard: HttpMcp) -> None:
    lan = ("192.168.1.20", 8000)
    assert _refusal(guard, _request(lan, Host="kb.internal:8000")) is None
    allowed = _request(lan, Host="kb.internal", Origin="https://kb.example.com")
    assert _refusal(guard, allowed) is None
    foreign = _request(lan, Host="kb.internal", Origin="https://evil.example")
    assert _refusal(guard, foreign) == "origin_not_allowed"


def test_on_loopback_only_its_names_and_the_configured_ones(guard: HttpMcp) -> None:
    for server in (("127.0.0.1", 8000), ("::1", 8000), None):  # None: unknown, strict
        assert _refusal(guard, _request(server, Host="127.0.0.1:8000")) is None
        assert _refusal(guard, _request(server, Host="localhost:8000")) is None
        assert _refusal(guard, _request(server, Host="kb.example.com")) is None  # a proxy
        assert _refusal(guard, _request(server, Host="evil.example:8000")) == "host_not_allowed"
    page = _request(("127.0.0.1", 8000), Host="127.0.0.1:8000", Origin="http://127.0.0.1:3000")
    assert _refusal(guard, page) is None  # a loopback page (the SDK's default too)


@pytest.mark.parametrize(
    "origin",
    ["http://127.0.0.1:1.evil.example", "http://127.0.0.1:80@evil.example",
     "http://127.0.0.1:", "http://127.0.0.1.evil.example:80", "null",
     "https://kb.example.com.evil.example", "http://kb.example.com"],
)  # fmt: skip
def test_an_origin_is_matched_exactly_or_by_its_port_alone(guard: HttpMcp, origin: str) -> None:
    page = _request(("192.168.1.20", 8000), Host="kb.internal", Origin=origin)
    assert _refusal(guard, page) == "origin_not_allowed"
