"""The model servers' HTTP seam: statuses and transport failures mapped onto the error
tree, keys scrubbed from every quote, error-body snippets, retries, the pooled client and
its timeouts. The transport is an ``httpx.MockTransport`` (and, for a refused connection,
a closed loopback port)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.http_client import (
    ERROR_SNIPPET_CHARS,
    ModelServer,
    RetryPolicy,
    display_url,
    error_text,
    snippet,
)

KEY = "sk-test-DO-NOT-LEAK-0123456789"
BASE = "http://gpu-box:8000/v1"
NO_WAIT = RetryPolicy(retries=2, base_delay=0, max_delay=0)
Handler = Callable[[httpx.Request], httpx.Response]


def _server(
    handler: Handler, *, api_key: str | None = KEY, base_url: str = BASE, **options: Any
) -> ModelServer:
    options.setdefault("timeout_s", 5)
    return ModelServer(
        "LLM provider 'lab'",
        base_url,
        api_key=api_key,
        not_found_hint="Check the model name.",
        transport=httpx.MockTransport(handler),
        **options,
    )


def _answer(status: int, body: Any = None, **headers: str) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers=headers)
        return httpx.Response(status, json=body if body is not None else {}, headers=headers)

    return handle


def _raise(exc: Exception) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        raise exc

    return handle


def _failure(server: ModelServer, path: str = "/models") -> AutoragError:
    with pytest.raises(AutoragError) as caught:
        server.get_json(path)
    return caught.value


# -- statuses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "code", "words"),
    [
        (400, InvalidInput, "invalid_input", "refused the request (HTTP 400: nope)"),
        (422, InvalidInput, "invalid_input", "refused the request (HTTP 422: nope)"),
        (404, InvalidInput, "invalid_input", "answered /models with HTTP 404: nope. Check the"),
        (401, Unavailable, "llm_unauthorized", "refused the credentials (HTTP 401: nope): check"),
        (403, Unavailable, "llm_unauthorized", "refused the credentials (HTTP 403: nope)"),
        (429, Unavailable, "llm_rate_limited", "is rate limiting (HTTP 429: nope)"),
        (500, Unavailable, "unavailable", "failed (HTTP 500: nope)"),
        (503, Unavailable, "unavailable", "failed (HTTP 503: nope)"),
    ],
)
def test_statuses_map_onto_the_error_tree(
    status: int, kind: type[AutoragError], code: str, words: str
) -> None:
    error = _failure(_server(_answer(status, {"error": "nope"})))
    assert type(error) is kind and error.code == code
    assert error.message.startswith(f"LLM provider 'lab' at {BASE} ")
    assert words in error.message


def test_refused_credentials_say_whether_a_key_was_sent() -> None:
    assert "check its api_key" in _failure(_server(_answer(401))).message
    assert "it needs an api_key" in _failure(_server(_answer(401), api_key=None)).message


# -- transport failures -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        (httpx.ConnectError("refused"), Unavailable, "cannot be reached (ConnectError: refused)"),
        (httpx.ConnectTimeout(""), Unavailable, "did not accept a connection within 5s"),
        (httpx.ReadTimeout("slow"), Unavailable, "did not answer within 5s (ReadTimeout: slow)"),
        (httpx.RemoteProtocolError("cut"), Unavailable, "connection failed (RemoteProtocolError"),
        (httpx.UnsupportedProtocol("ftp"), InvalidInput, "has a bad URL (UnsupportedProtocol"),
    ],
)
def test_transport_failures_map_onto_the_error_tree(
    exc: Exception, kind: type[AutoragError], words: str
) -> None:
    error = _failure(_server(_raise(exc)))
    assert type(error) is kind and words in error.message


def test_a_closed_port_cannot_be_reached() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = ModelServer("LLM provider 'lab'", url, timeout_s=5)
    with pytest.raises(Unavailable, match=rf"'lab' at {url} cannot be reached .*running\?"):
        server.get_json("/models")


def test_a_url_httpx_cannot_use_is_invalid_input() -> None:
    server = ModelServer("LLM provider 'lab'", "localhost:11434", timeout_s=5)
    with pytest.raises(InvalidInput, match=r"bad URL .* check its base_url"):
        server.get_json("/api/tags")


# -- the key is never quoted ------------------------------------------------------------


def test_an_echoed_key_is_scrubbed_from_status_errors() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}."}}
    error = _failure(_server(_answer(401, body)))
    assert KEY not in error.message and "provided: ***" in error.message


def test_a_key_across_the_snippet_cut_leaves_no_prefix() -> None:
    body = "x" * (ERROR_SNIPPET_CHARS - 20) + " " + KEY
    error = _failure(_server(_answer(500, body)))
    assert KEY[:12] not in error.message


def test_the_key_is_scrubbed_from_transport_and_stream_errors() -> None:
    error = _failure(_server(_raise(httpx.ConnectError(f"proxy refused {KEY}"))))
    assert KEY not in error.message and "proxy refused ***" in error.message
    server = _server(_answer(200))
    assert KEY not in server.reported_error({"message": f"bad key {KEY}"}).message
    with pytest.raises(Unavailable, match="not valid JSON") as caught:
        server.decode(f"<html>{KEY}</html>")
    assert KEY not in caught.value.message


def test_credentials_in_the_base_url_are_not_named() -> None:
    error = _failure(_server(_answer(500), base_url="http://me:hunter2@gpu-box:8000/v1"))
    assert "hunter2" not in error.message and "at http://gpu-box:8000/v1 " in error.message
    assert display_url("https://me@[::1]:8000/v1?a=b@c") == "https://[::1]:8000/v1?a=b@c"


# -- the error-body snippet -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"error": {"message": "model not loaded", "type": "server_error"}}, "model not loaded"),
        ({"error": "model not loaded"}, "model not loaded"),
        ({"detail": "model not loaded"}, "model not loaded"),
        ({"status": "down"}, '{"status": "down"}'),
        ("plain text", "plain text"),
    ],
    ids=["openai", "ollama", "fastapi", "other-json", "text"],
)
def test_error_text_finds_the_human_part(body: Any, text: str) -> None:
    assert error_text(body) == text


def test_a_snippet_is_one_short_line() -> None:
    page = "<html>\n  <body>\n" + "Bad gateway. " * 100 + "</body></html>"
    quoted = snippet(page)
    assert "\n" not in quoted and "  " not in quoted and len(quoted) <= ERROR_SNIPPET_CHARS
    assert snippet("Model crashed.") == "Model crashed"
    assert snippet(" \n ") == "no details"


def test_an_html_error_page_is_quoted_as_a_snippet() -> None:
    page = "<html>\n<h1>502 Bad Gateway</h1>\n" + "padding " * 200 + "</html>"
    error = _failure(_server(_answer(502, page)))
    assert "(HTTP 502: <html> <h1>502 Bad Gateway</h1> padding" in error.message
    assert len(error.message) < ERROR_SNIPPET_CHARS + 100


def test_a_success_that_is_not_json_is_unavailable() -> None:
    with pytest.raises(Unavailable, match=r"not valid JSON: <html>a proxy page</html>"):
        _server(_answer(200, "<html>a proxy page</html>")).get_json("/models")


def test_an_error_reported_in_an_answer() -> None:
    server = _server(_answer(200))
    missing = server.reported_error('model "llava" not found, try pulling it first')
    assert isinstance(missing, InvalidInput) and missing.message.endswith("Check the model name.")
    failed = server.reported_error({"message": "CUDA out of memory"})
    assert isinstance(failed, Unavailable)
    assert failed.message.endswith("failed while answering: CUDA out of memory")


# -- retries ----------------------------------------------------------------------------


class _Script:
    """Answers its statuses in order, then 200 with ``{"ok": true}``; counts requests."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        if self.statuses:
            return httpx.Response(self.statuses.pop(0), json={"error": "busy"})
        return httpx.Response(200, json={"ok": True})


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_failures_are_retried(status: int) -> None:
    script = _Script(status, status)
    assert _server(script, retry=NO_WAIT).post_json("/embed", {"input": ["x"]}) == {"ok": True}
    assert len(script.seen) == 3
    assert all(json.loads(r.content) == {"input": ["x"]} for r in script.seen)


def test_retries_give_up_saying_how_often_they_tried() -> None:
    script = _Script(503, 503, 503, 503)
    with pytest.raises(Unavailable, match=r"failed \(after 3 attempts: HTTP 503: busy\)"):
        _server(script, retry=NO_WAIT).post_json("/embed", {})
    assert len(script.seen) == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_refusals_are_not_retried(status: int) -> None:
    script = _Script(status)
    with pytest.raises(AutoragError):
        _server(script, retry=NO_WAIT).post_json("/embed", {})
    assert len(script.seen) == 1


def test_without_a_retry_policy_one_attempt_is_made() -> None:
    script = _Script(503)
    with pytest.raises(Unavailable, match=r"failed \(HTTP 503: busy\)"):
        _server(script).get_json("/models")
    assert len(script.seen) == 1


def test_retry_after_wins_when_longer_but_never_past_the_cap() -> None:
    policy = RetryPolicy(retries=3, base_delay=0.1, max_delay=5)
    assert 0.05 <= policy.delay(1) <= 0.1
    assert policy.delay(1, retry_after=2) == 2
    assert policy.delay(1, retry_after=60) == 5
    with pytest.raises(InvalidInput):
        RetryPolicy(retries=-1)


# -- streams ----------------------------------------------------------------------------


def test_stream_lines_gives_the_lines_and_maps_a_failed_start() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/down"):
            return httpx.Response(500, json={"error": "model crashed"})
        return httpx.Response(200, text='{"a": 1}\n{"b": 2}\n')

    server = _server(handle)
    with server.stream_lines("/chat", {"stream": True}) as lines:
        assert [server.decode(line) for line in lines] == [{"a": 1}, {"b": 2}]
    with (
        pytest.raises(Unavailable, match=r"failed \(HTTP 500: model crashed\)"),
        server.stream_lines("/down", {}),
    ):
        pass


# -- the client: made once, shared, closed, with one timeout rule -----------------------


def test_one_client_is_made_on_first_use_and_shared_by_threads() -> None:
    made: list[httpx.Client] = []
    original = httpx.Client.__init__

    def counting(client: httpx.Client, *args: Any, **kwargs: Any) -> None:
        made.append(client)
        original(client, *args, **kwargs)

    server = _server(_answer(200, {"ok": True}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx.Client, "__init__", counting)
        assert made == []  # building the server makes no client
        threads = [threading.Thread(target=server.get_json, args=("/models",)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(made) == 1
        server.close()
        server.get_json("/models")  # closed: the next call reconnects
        assert len(made) == 2


def test_requests_carry_the_key_and_one_timeout_rule() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    _server(handle, timeout_s=120).get_json("/models")
    _server(handle, timeout_s=3, api_key=None).get_json("/models")
    slow, quick = (request.extensions["timeout"] for request in seen)
    assert slow == {"connect": 10.0, "read": 120, "write": 120, "pool": 120}
    assert quick == {"connect": 3, "read": 3, "write": 3, "pool": 3}
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in seen[1].headers
