"""The chat widget in Chromium, embedded in a page of another origin: a host page served
on its own loopback port carries the one script tag; the bubble opens, shows the
greeting in the widget's colour, a question is answered streamed with its source, a
redacted answer brings the PII warning, the host page's cookie and globals are left as
they were, and the panel fits a phone. The same page opened as another origin
(``localhost`` instead of ``127.0.0.1``), which the widget does not allow, is refused:
the widget says so. And the web UI's Chat widgets page: a widget created there (bad input
refused on its field), its copied tag answering on a page of the site, changed, switched
off, removed.

The API runs in this process (uvicorn on loopback), the model is the scripted
OpenAI-compatible server; Debian's Chromium driven by Playwright."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from autorag.api.app import create_app
from autorag.auth.service import create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.e2e.web_helpers import PHONE, browser_page, page_errors, playwright_sync_api, sign_in
from tests.workspaces import new_workspace

sync_api = playwright_sync_api()
expect = sync_api.expect

PASSWORD = "a long enough password"
GREETING = "Hello! Ask me about returns."
PRIMARY = "#aa2200"
HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title>
<script>document.cookie = "host=1; path=/"; window.before = Object.keys(window);</script>
</head><body><h1>The shop</h1>
<script src="{api}/widget.js" data-widget-id="{widget}" async></script>
</body></html>
"""


@dataclass(frozen=True)
class World:
    api: str
    host_port: int
    model: ScriptedOpenAI
    site: Path  # the host site's folder, served at host_port

    def page_url(self, host: str) -> str:
        return f"http://{host}:{self.host_port}/host.html"


def _serve_api(app: Any) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the API did not start"
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, thread


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("web-widget")
    docs, site = root / "docs", root / "site"
    docs.mkdir()
    site.mkdir()
    (docs / "returns.md").write_text("# Returns\n\nItems may be returned within 30 days.\n")
    workspace = new_workspace(root / "kb", search_paths=[str(docs)])
    context = open_context(workspace)
    try:
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
        create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    host = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(site)))
    threading.Thread(target=host.serve_forever, daemon=True).start()
    host_port = host.server_address[1]
    with ScriptedOpenAI() as model:
        provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                    "default_model": "gpt-test", "local": True}  # fmt: skip
        app = create_app(workspace, llm={"providers": [provider], "default": "scripted"})
        api, server, thread = _serve_api(app)
        try:
            widget = _make_widget(api, f"http://127.0.0.1:{host_port}")
            page = HOST_PAGE.format(api=api, widget=widget)
            (site / "host.html").write_text(page)
            yield World(api, host_port, model, site)
        finally:
            server.should_exit = True
            thread.join(10)
            host.shutdown()


def _make_widget(api: str, origin: str) -> str:
    login = httpx.post(f"{api}/api/auth/login", json={"username": "root", "password": PASSWORD})
    headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
    body = {"name": "shop", "allowedOrigins": [origin], "greeting": GREETING,
            "theme": {"primary": PRIMARY}}  # fmt: skip
    made = httpx.post(f"{api}/api/workspaces/default/widgets", json=body, headers=headers)
    assert made.status_code == 201, made.text
    return str(made.json()["publicId"])


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_widget_answers_on_an_allowed_site_and_refuses_another(world: World) -> None:
    world.model.reset(
        [
            Tool("rag_search", {"query": "returns"}),
            Text("Items may be returned within 30 days [1].", delay_s=0.02),
            Text("Write to jane.doe@example.com for help."),
        ]
    )
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(world.page_url("127.0.0.1"))
        page.get_by_role("button", name="Open chat").click()
        bubble = page.get_by_role("button", name="Close chat", exact=True).last
        panel = page.get_by_role("dialog", name="Ask us")
        expect(panel.get_by_text(GREETING)).to_be_visible()
        colour = bubble.evaluate("b => getComputedStyle(b).backgroundColor")
        assert colour == "rgb(170, 34, 0)"  # the widget's primary colour

        box = panel.get_by_role("textbox")
        expect(box).to_be_focused()  # the keyboard lands in the question box
        box.fill("How long do I have to return an item?")
        box.press("Enter")
        expect(panel.get_by_text("Items may be returned within 30 days [1].")).to_be_visible()
        expect(panel.get_by_role("list", name="Sources")).to_contain_text("[1] Returns")

        box.fill("Who can help me?")
        box.press("Enter")
        warning = panel.get_by_role("alert")
        expect(warning).to_contain_text("personal data")
        expect(panel.get_by_text("[REDACTED]", exact=False)).to_be_visible()
        warning.get_by_role("button", name="Understood").click()
        expect(warning).to_be_hidden()

        leaked = page.evaluate(
            "() => Object.keys(window).filter(k => !window.before.includes(k) && k !== 'before')"
        )
        assert leaked == []  # no global of the widget's
        assert page.evaluate("document.cookie") == "host=1"
        assert [c["name"] for c in page.context.cookies()] == ["host"]

        page.set_viewport_size(PHONE)
        width = panel.evaluate("p => p.getBoundingClientRect().width")
        assert width <= PHONE["width"]
        page.keyboard.press("Escape")
        expect(panel).to_be_hidden()

        page.goto(world.page_url("localhost"))  # another origin: not allowed
        page.get_by_role("button", name="Open chat").click()
        expect(page.get_by_text("This chat is not available here")).to_be_visible()
        expect(page.get_by_role("dialog").get_by_role("textbox")).to_be_disabled()
        assert errors == []


def test_an_admin_creates_changes_and_removes_a_widget_in_the_web_ui(world: World) -> None:
    """Settings → Chat widgets: a widget made in the web UI (a bad site and a bad colour
    refused on their fields first) answers on the host page with its greeting; changed,
    only what changed is saved; switched off; removed. The fixture's widget is left be."""
    origin = f"http://127.0.0.1:{world.host_port}"
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(15_000)
        errors = page_errors(page)
        sign_in(page, world.api + "/#/widgets", "root", PASSWORD)
        expect(page.get_by_role("heading", level=1)).to_have_text("Chat widgets")
        expect(page.get_by_role("article", name="shop")).to_be_visible()

        form = page.get_by_role("form", name="New widget")
        form.get_by_label("Name", exact=True).fill("docs")
        form.get_by_label("Sites allowed").fill("not a site")
        form.get_by_label("Accent colour").fill("blue")
        form.get_by_role("button", name="Create").click()
        expect(form.get_by_text("A colour as #rrggbb")).to_be_visible()  # checked here first
        form.get_by_label("Accent colour").fill("#0055AA")
        form.get_by_role("button", name="Create").click()
        expect(form.get_by_text("bad origin 'not a site'")).to_be_visible()  # the server's word
        form.get_by_label("Sites allowed").fill(origin)
        form.get_by_label("Greeting").fill("Hi from the docs widget.")
        form.get_by_role("button", name="Create").click()
        expect(page.get_by_text("docs created")).to_be_visible()

        card = page.get_by_role("article", name="docs")
        expect(card).to_contain_text(origin)
        snippet = card.get_by_role("textbox", name="docs's script tag").input_value()
        widget_id = card.get_attribute("data-widget")
        assert widget_id and f'data-widget-id="{widget_id}"' in snippet
        assert snippet.startswith(f'<script src="{world.api}/widget.js"')
        made = _admin(world.api, "GET", f"/api/workspaces/default/widgets/{widget_id}")
        assert made["theme"]["primary"] == "#0055aa" and made["model"] is None

        host = page.context.new_page()  # the tag, as a site would carry it
        (world.site / "docs.html").write_text(f"<!doctype html><title>Docs</title>{snippet}")
        host.goto(origin + "/docs.html")
        host.get_by_role("button", name="Open chat").click()
        expect(host.get_by_text("Hi from the docs widget.")).to_be_visible()
        host.close()

        card.get_by_role("button", name="Change docs").click()
        dialog = page.get_by_role("dialog", name="Change docs")
        dialog.get_by_label("Greeting").fill("Welcome back.")
        dialog.get_by_label("Questions a minute, per visitor").fill("3")
        dialog.get_by_role("button", name="Save").click()
        expect(page.get_by_text("docs saved.")).to_be_visible()
        changed = _admin(world.api, "GET", f"/api/workspaces/default/widgets/{widget_id}")
        assert changed["greeting"] == "Welcome back." and changed["visitorPerMinute"] == 3
        assert changed["theme"] == made["theme"]  # untouched
        expect(card).to_contain_text("3 questions a minute per visitor")

        card.get_by_label("docs answers visitors").uncheck()
        expect(page.get_by_text("docs is off")).to_be_visible()
        assert not _admin(world.api, "GET", f"/api/workspaces/default/widgets/{widget_id}")[
            "enabled"
        ]

        card.get_by_role("button", name="Remove docs").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(page.get_by_text("docs removed.")).to_be_visible()
        expect(page.get_by_role("article", name="docs")).to_have_count(0)
        expect(page.get_by_role("article", name="shop")).to_be_visible()
        refused = "Failed to load resource: the server responded with a status of 400"
        assert [e for e in errors if not e.startswith(refused)] == []
        assert len(errors) == 1  # the bad site, refused once by the server


def _admin(api: str, method: str, path: str) -> Any:
    login = httpx.post(f"{api}/api/auth/login", json={"username": "root", "password": PASSWORD})
    headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
    response = httpx.request(method, api + path, headers=headers)
    assert response.is_success, response.text
    return response.json()
