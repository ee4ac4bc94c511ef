"""Benchmark: time to the first token through the widget's endpoint
(``POST /api/widget/{id}/chat/stream``, with its Origin and X-Widget-Id) against the web
UI's chat stream (``POST /api/workspaces/default/chat/stream``, a password login): the
same question, the same model (the scripted OpenAI-compatible server on loopback), the
same indexed document, on one real server (uvicorn on loopback, in this process).

Two scripts, each a realistic turn of the agent:

* ``search``: the model calls ``rag_search`` (a real hybrid search of the workspace),
  then streams a cited answer of 180 characters, 10 ms before each chunk. The first
  token leaves when the agent commits to the answer (120 characters, the buffered
  replay), so this is what a person waits for.
* ``direct``: the model answers at once, no pause between chunks: the time is the
  endpoints' and the agent's own (authentication or the widget's checks, the chat
  stored or not, DLP, the stream).

Rounds alternate between the two endpoints, so drift hits both alike; two warm-up
rounds are not counted; medians (and p90) reported. Goal (issue 22): the widget within
10 % of the web UI, on the ``search`` turn.

Run with `pytest -m bench -s tests/bench/test_widget_bench.py`."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from autorag.api.app import create_app
from autorag.auth.service import create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool, Turn
from tests.workspaces import new_workspace

ROUNDS = 30
WARM_UP = 2
ORIGIN = "https://shop.example.test"
PASSWORD = "a long enough password"
QUESTION = "How long may I return items?"
ANSWER = (
    "Items may be returned within 30 days of delivery [1]. They must be unused and in "
    "their original packaging, with the receipt; the refund goes back to the card used [1]."
)
SCRIPTS: dict[str, list[Turn]] = {
    "search": [Tool("rag_search", {"query": "return items"}), Text(ANSWER, delay_s=0.01)],
    "direct": [Text(ANSWER)],
}


def _first_token_ms(client: httpx.Client, url: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    with client.stream("POST", url, json={"message": QUESTION}, headers=headers) as response:
        assert response.status_code == 200, response.read()
        first = None
        for line in response.iter_lines():  # read to the end, as a client does
            if first is None and line == "event: token":
                first = (time.perf_counter() - started) * 1000
    if first is None:
        raise AssertionError("no token")
    return first


@contextmanager
def _served(app: ASGIApp) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


@pytest.mark.bench
def test_widget_time_to_first_token(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "returns.md").write_text(
        "# Returns\n\nItems may be returned within 30 days of delivery, unused, in their "
        "original packaging and with the receipt. Refunds go back to the card used.\n"
    )
    workspace = new_workspace(tmp_path / "kb", search_paths=[str(docs)])
    context = open_context(workspace)
    try:
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
        create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    times = {(script, face): [] for script in SCRIPTS for face in ("widget", "web")}
    with ScriptedOpenAI() as model:
        provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                    "default_model": "gpt-test", "local": True}  # fmt: skip
        app = create_app(workspace, llm={"providers": [provider], "default": "scripted"})
        with _served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            token = client.post(
                "/api/auth/login", json={"username": "root", "password": PASSWORD}
            ).json()["access_token"]
            made = client.post(
                "/api/workspaces/default/widgets",
                json={"name": "bench", "allowedOrigins": [ORIGIN],
                      "visitorPerMinute": 10_000, "widgetPerMinute": 10_000},
                headers={"Authorization": f"Bearer {token}"},
            ).json()  # fmt: skip
            wid = made["publicId"]
            faces = {
                "widget": (f"/api/widget/{wid}/chat/stream",
                           {"Origin": ORIGIN, "X-Widget-Id": wid}),
                "web": ("/api/workspaces/default/chat/stream",
                        {"Authorization": f"Bearer {token}"}),
            }  # fmt: skip
            for round_ in range(WARM_UP + ROUNDS):
                for script, turns in SCRIPTS.items():
                    for face, (path, headers) in faces.items():
                        model.reset(list(turns))
                        ms = _first_token_ms(client, path, headers)
                        if round_ >= WARM_UP:
                            times[script, face].append(ms)
    print(f"\nTime to first token over {ROUNDS} rounds (median, p90):")
    medians = {}
    for script in SCRIPTS:
        widget, web = times[script, "widget"], times[script, "web"]
        medians[script] = (statistics.median(widget), statistics.median(web))
        print(
            f"  {script:6}: widget {medians[script][0]:6.1f} ms (p90 {_p90(widget):6.1f}),"
            f" web UI {medians[script][1]:6.1f} ms (p90 {_p90(web):6.1f}):"
            f" {(medians[script][0] / medians[script][1] - 1) * 100:+.1f} %"
        )
    widget_ms, web_ms = medians["search"]
    assert widget_ms <= web_ms * 1.10
