"""Benchmark: time to the first token through the widget's endpoint
(``POST /api/widget/{id}/chat/stream``) against the web UI's chat stream
(``POST /api/workspaces/default/chat/stream``), the same question, the same model: the
scripted OpenAI-compatible server answering at once with a fixed 50 ms before each chunk,
no tool call (so the numbers measure the endpoints, not a search). Rounds alternate
between the two so that drift hits both alike; medians reported. Goal (issue 22): the
widget within 10 % of the web UI.

Run with `pytest -m bench -s tests/bench/test_widget_bench.py`."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from autorag.api.app import create_app
from autorag.auth.service import create_user
from autorag.context import open_context
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text
from tests.workspaces import new_workspace

ROUNDS = 30
ORIGIN = "https://shop.example.test"
PASSWORD = "a long enough password"
ANSWER = "Items may be returned within 30 days of delivery."


def _first_token_ms(client: httpx.Client, url: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    with client.stream("POST", url, json={"message": "How long may I return items?"},
                       headers=headers) as response:  # fmt: skip
        assert response.status_code == 200
        first = None
        for line in response.iter_lines():  # read to the end, as a client does
            if first is None and line == "event: token":
                first = (time.perf_counter() - started) * 1000
    if first is None:
        raise AssertionError("no token")
    return first


@pytest.mark.bench
def test_widget_time_to_first_token(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "kb")
    context = open_context(workspace)
    create_user(context.catalog, "root", PASSWORD, "admin")
    context.close()
    with ScriptedOpenAI() as model:
        provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                    "default_model": "gpt-test", "local": True}  # fmt: skip
        app = create_app(
            workspace,
            llm={"providers": [provider], "default": "scripted"},
            agent={"enabled_skills": []},
        )
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                token = client.post(
                    "/api/auth/login", json={"username": "root", "password": PASSWORD}
                ).json()["access_token"]
                auth = {"Authorization": f"Bearer {token}"}
                made = client.post(
                    "/api/workspaces/default/widgets",
                    json={"name": "bench", "allowedOrigins": [ORIGIN],
                          "visitorPerMinute": 10_000, "widgetPerMinute": 10_000},
                    headers=auth,
                ).json()  # fmt: skip
                wid = made["publicId"]
                widget = (f"/api/widget/{wid}/chat/stream",
                          {"Origin": ORIGIN, "X-Widget-Id": wid})  # fmt: skip
                web = ("/api/workspaces/default/chat/stream", auth)
                times: dict[str, list[float]] = {"widget": [], "web": []}
                for round_ in range(ROUNDS + 2):  # two warm-up rounds, not counted
                    for name, (path, headers) in (("widget", widget), ("web", web)):
                        model.reset([Text(ANSWER, delay_s=0.05)])
                        ms = _first_token_ms(client, path, headers)
                        if round_ >= 2:
                            times[name].append(ms)
        finally:
            server.should_exit = True
            thread.join(10)
    widget_ms, web_ms = (statistics.median(times[n]) for n in ("widget", "web"))
    print(
        f"\nTTFT median over {ROUNDS} rounds: widget {widget_ms:.1f} ms, web UI {web_ms:.1f} ms "
        f"({(widget_ms / web_ms - 1) * 100:+.1f} %)"
    )
    assert widget_ms <= web_ms * 1.10
