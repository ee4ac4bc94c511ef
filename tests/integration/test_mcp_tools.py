"""Installed MCP tool servers (issue 22, the MCP client), end to end on a real server:
an admin installs the SDK-written double ``tests/doubles/mcp_tool_server.py`` (stdio)
into a workspace; the scripted model calls its tools through the agent; the answer cites
the resource link the tool returned and ``done.mcpSources`` lists it; a hanging tool is
stopped at the skill timeout and the answer goes on; a crashing one fails its call only;
no AUTORAG_* variable reaches the server; a tool outside the allowlist is not offered;
``mcp.installed`` / ``mcp.uninstalled`` are in the event log. Last, the web page (Debian's
Chromium, Playwright; skipped where they are missing) on the same server: the allowlist
ticked and saved, the server tested, an install refused with the reason under its
field, the server removed (its tools then offered no more).

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from sqlalchemy import text
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.integration.conftest import ApiServer
from tests.workspaces import catalog_sql, new_workspace

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import open_context

PASSWORD = "a long enough password"
URL = "/api/workspaces/default/mcp-servers"
DOUBLE = str(Path(__file__).parents[1] / "doubles" / "mcp_tool_server.py")
# Every skill call's bound, the server's start-up included: generous, so a loaded machine
# never fails a call that works. The server's own bound on a call once it is up
# (CALL_TIMEOUT_S) is what stops the hanging tool.
SKILL_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 1.5
LOOKUP = "mcp__library__lookup"


@dataclass
class Api:
    server: ApiServer
    token: str
    model: ScriptedOpenAI

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.server.call(method, URL + path, self.token, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.call(method, path, **kw)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def ask(self, question: str) -> dict[str, list[dict[str, Any]]]:
        """The answer's SSE events by name, in order."""
        events: dict[str, list[dict[str, Any]]] = {}
        with (
            httpx.Client(timeout=60) as client,
            connect_sse(
                client,
                "POST",
                f"{self.server.url}/api/workspaces/default/chat/stream",
                json={"message": question},
                headers={"Authorization": f"Bearer {self.token}"},
            ) as source,  # fmt: skip
        ):
            assert source.response.status_code == 200, source.response.read()
            for sse in source.iter_sse():
                events.setdefault(sse.event, []).append(sse.json())
        assert "error" not in events, events["error"]
        return events


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("mcp-tools")
    with ScriptedOpenAI() as model:
        provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                    "default_model": "gpt-test", "local": True, "timeout_s": 10}  # fmt: skip
        workspace = new_workspace(
            root / "kb", llm={"providers": [provider], "default": "scripted"},
            agent={"skill_timeout_s": SKILL_TIMEOUT_S},
        )  # fmt: skip
        context = open_context(workspace)
        try:
            service.create_user(context.catalog, "root", PASSWORD, "admin")
        finally:
            context.close()
        app = create_app(workspace, server={"login_attempts_per_minute": 10_000})
        server = ApiServer(serve_asgi(app), app, workspace, None)
        login = server.call("POST", "/api/auth/login",
                            json={"username": "root", "password": PASSWORD})  # fmt: skip
        yield Api(server, login.json()["access_token"], model)


@pytest.fixture(scope="module")
def installed(api: Api) -> dict[str, Any]:
    tools = ["lookup", "hang", "crash", "env_probe"]
    body = {"name": "library", "command": [sys.executable, DOUBLE], "tools": tools,
            "timeoutS": CALL_TIMEOUT_S}  # fmt: skip
    made: dict[str, Any] = api.ok("POST", "", 201, json=body)
    return made


def _events(api: Api, name: str) -> list[dict[str, Any]]:
    with catalog_sql(api.server.workspace) as conn:
        rows = conn.execute(
            text("SELECT workspace, actor, data FROM events WHERE name = :n ORDER BY id"),
            {"n": name},
        ).all()
    return [{"workspace": r[0], "actor": r[1], **json.loads(r[2])} for r in rows]


def _offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def _tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_install_lists_the_tools_and_writes_the_event(api: Api, installed: dict[str, Any]) -> None:
    assert (installed["name"], installed["transport"]) == ("library", "stdio")
    assert installed["command"] == [sys.executable, DOUBLE]
    assert installed["timeoutS"] == CALL_TIMEOUT_S
    tools = {t["name"]: t for t in installed["tools"]}
    assert set(tools) == {"lookup", "env_probe", "hang", "crash", "ignored"}
    assert not tools["ignored"]["allowed"] and tools["lookup"]["allowed"]
    assert tools["lookup"]["skill"] == LOOKUP
    assert tools["lookup"]["inputSchema"]["required"] == ["branch"]
    assert [s["name"] for s in api.ok("GET", "")["servers"]] == ["library"]
    (event,) = _events(api, "mcp.installed")
    assert event == {
        "workspace": "default", "actor": "root", "server": "library", "transport": "stdio",
        "tools": ["crash", "env_probe", "hang", "lookup"],
    }  # fmt: skip


def test_a_tool_answer_is_cited_and_listed_in_mcp_sources(
    api: Api, installed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORAG_MCP_TEST_SECRET", "do-not-leak")  # the server's environment
    api.model.reset([Tool(LOOKUP, {"branch": "north"}), Text("It opens at 9:00 [1].")])
    events = api.ask("When does the north branch open?")
    offered = _offered(api.model.requests[0])
    assert {LOOKUP, "mcp__library__hang"} <= offered and "mcp__library__ignored" not in offered
    (result,) = _tool_results(api.model.requests[1])
    assert "opens at 9:00 and closes at 17:30" in result and "not instructions" in result
    assert "leaked: none" in result  # no AUTORAG_* variable reached the server
    assert "[1] Opening hours: north <https://library.example/branches/north>" in result
    (done,) = events["done"]
    assert done["mcpSources"] == [{
        "server": "library", "tool": "lookup", "uri": "https://library.example/branches/north",
        "title": "Opening hours: north", "number": 1, "cited": True,
    }]  # fmt: skip
    (source,) = events["citations"][-1]["sources"]
    assert (source["source"], source["sourceId"], source["cited"]) == (
        "https://library.example/branches/north", "/mcp/library/lookup/1", True,
    )  # fmt: skip
    assert "".join(t["text"] for t in events["token"]) == "It opens at 9:00 [1]."


def test_a_hanging_tool_fails_its_call_and_the_answer_goes_on(
    api: Api, installed: dict[str, Any]
) -> None:
    api.model.reset([Tool("mcp__library__hang"), Text("The tool did not answer.")])
    began = time.monotonic()
    events = api.ask("Try the hanging tool.")
    assert time.monotonic() - began >= CALL_TIMEOUT_S  # stopped by the timeout, not before
    (result,) = _tool_results(api.model.requests[1])
    assert (
        result == "error: the tool 'hang' of the MCP server 'library' did not answer within 1.5 s"
    )
    (done,) = events["done"]
    assert done["answer"].startswith("The tool did not answer.") and done["mcpSources"] == []


def test_a_crash_fails_its_call_only(api: Api, installed: dict[str, Any]) -> None:
    api.model.reset([Tool("mcp__library__crash"), Text("Done.")])
    events = api.ask("Crash.")
    (crashed,) = _tool_results(api.model.requests[1])
    assert crashed.startswith("error: the tool 'crash' of the MCP server 'library' failed")
    assert events["done"][0]["answer"].startswith("Done.")


def test_the_allowlist_decides_what_is_offered(api: Api, installed: dict[str, Any]) -> None:
    changed = api.ok("PATCH", "/library", json={"tools": ["lookup"]})
    assert changed["allowed"] == ["lookup"]
    unknown = api.call("PATCH", "/library", json={"tools": ["nope"]})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "mcp_unknown_tool")
    api.model.reset([Tool("mcp__library__hang"), Text("No such tool here.")])
    api.ask("Try the hanging tool again.")
    assert _offered(api.model.requests[0]) >= {LOOKUP}
    assert "mcp__library__hang" not in _offered(api.model.requests[0])
    (result,) = _tool_results(api.model.requests[1])
    assert "there is no tool named 'mcp__library__hang'" in result


def test_refusals(api: Api, installed: dict[str, Any]) -> None:
    missing = api.call("POST", "", json={"name": "ghost", "command": ["/nonexistent/mcp-server"]})
    assert (missing.status_code, missing.json()["code"]) == (400, "mcp_server_unreachable")
    local = api.call("POST", "", json={"name": "local", "url": "http://127.0.0.1:9/mcp"})
    assert (local.status_code, local.json()["code"]) == (400, "mcp_url_refused")
    both = api.call("POST", "", json={"name": "both", "command": ["x"], "url": "https://a.example"})
    assert both.status_code == 400
    taken = api.call("POST", "", json={"name": "library", "command": [sys.executable, DOUBLE]})
    assert (taken.status_code, taken.json()["code"]) == (409, "mcp_server_exists")
    assert api.call("POST", "", json={"name": "Bad_Name", "command": ["x"]}).status_code == 422
    assert api.call("GET", "/ghost").status_code == 404


def test_the_page_allows_tests_refuses_and_removes(api: Api, installed: dict[str, Any]) -> None:
    """Runs last: it removes the server."""
    from tests.e2e.web_helpers import browser_page, playwright_sync_api

    sync_api = playwright_sync_api()
    expect = sync_api.expect
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(20_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(api.server.url + "/#/mcp")
        page.get_by_label("Username").fill("root")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Tool servers (MCP)")

        card = page.get_by_role("article", name="library")
        expect(card).to_contain_text(DOUBLE)
        expect(card.get_by_label("Allow lookup")).to_be_checked()  # as the allowlist test left it
        expect(card.get_by_label("Allow ignored")).not_to_be_checked()
        card.get_by_label("Allow ignored").check()
        card.get_by_role("button", name="Save allowed tools").click()
        expect(page.get_by_text("library: the assistant may use lookup, ignored.")).to_be_visible()
        page.get_by_role("button", name="Dismiss").click()  # toasts cover the form's button
        assert api.ok("GET", "/library")["allowed"] == ["ignored", "lookup"]

        card.get_by_role("button", name="Test library").click()
        expect(page.get_by_text("library answered in")).to_be_visible()
        page.get_by_role("button", name="Dismiss").click()  # toasts cover the form's button

        form = page.get_by_role("form", name="Install a tool server")
        form.get_by_label("Name", exact=True).fill("ghost")
        command = form.get_by_label("Command", exact=True)
        command.fill("'/nonexistent/mcp server' --flag")  # quoted words stay one argument
        form.get_by_role("button", name="Install").click()
        expect(form).to_contain_text("No such file or directory: '/nonexistent/mcp server'")

        card.get_by_role("button", name="Remove library").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(page.get_by_text("No tool servers yet")).to_be_visible()
        # The refused install's 400 is the browser's only complaint.
        assert [e for e in errors if "status of 400" not in e] == []
    (event,) = _events(api, "mcp.uninstalled")
    assert event == {"workspace": "default", "actor": "root", "server": "library"}
    api.model.reset([Text("Nothing to call.")])
    api.ask("Anything?")
    assert not any(name.startswith("mcp__") for name in _offered(api.model.requests[0]))
