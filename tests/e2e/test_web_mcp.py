"""Settings → Tool servers (MCP) in the browser (issue 22): an admin installs the
SDK-written double ``tests/doubles/mcp_tool_server.py`` from the form, allows one more
tool and saves, tests the server, sees an install that cannot start refused with the
reason under its field, and removes the server; after each step the API and the model's
requests agree with what the page said.

A real ``autorag serve`` (its model a scripted OpenAI double) and Debian's Chromium
through Playwright (skipped where they are missing). The agent's use of installed tools
is ``tests/integration/test_mcp_tools.py``'s."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator

import pytest

from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text
from tests.e2e.web_helpers import Server, browser_page, page_errors, playwright_sync_api, sign_in
from tests.mcp_world import DOUBLE, LOOKUP, PASSWORD, Api, mcp_workspace, offered

sync_api = playwright_sync_api()
expect = sync_api.expect


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("web-mcp")
    with ScriptedOpenAI() as model:
        workspace = mcp_workspace(root / "kb", model)
        server = Server(workspace, root / "serve.log")
        try:
            yield Api.login(server.url, workspace, model)
        finally:
            server.stop()


def _tools_offered(api: Api) -> set[str]:
    api.model.reset([Text("Nothing to call.")])
    api.ask("Anything?")
    return {name for name in offered(api.model.requests[0]) if name.startswith("mcp__")}


def test_install_allow_test_refuse_and_remove_from_the_page(api: Api) -> None:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(30_000)
        errors = page_errors(page)
        sign_in(page, api.url + "/#/mcp", "root", PASSWORD)
        expect(page.get_by_role("heading", level=1)).to_have_text("Tool servers (MCP)")
        expect(page.get_by_text("No tool servers yet")).to_be_visible()

        # Installed from the form: the command as a shell would split it, one tool allowed.
        form = page.get_by_role("form", name="Install a tool server")
        form.get_by_label("Name", exact=True).fill("library")
        form.get_by_label("Command", exact=True).fill(shlex.join([sys.executable, DOUBLE]))
        form.get_by_label("Allowed tools").fill("lookup")
        form.get_by_role("button", name="Install").click()
        expect(page.get_by_text("library installed: the assistant may use lookup.")).to_be_visible()
        page.get_by_role("button", name="Dismiss").click()  # toasts cover the form's button
        card = page.get_by_role("article", name="library")
        expect(card).to_contain_text(DOUBLE)
        assert api.ok("GET", "/library")["command"] == [sys.executable, DOUBLE]
        assert _tools_offered(api) == {LOOKUP}

        # One more tool allowed and saved.
        expect(card.get_by_label("Allow lookup")).to_be_checked()
        expect(card.get_by_label("Allow ignored")).not_to_be_checked()
        card.get_by_label("Allow ignored").check()
        card.get_by_role("button", name="Save allowed tools").click()
        expect(page.get_by_text("library: the assistant may use lookup, ignored.")).to_be_visible()
        page.get_by_role("button", name="Dismiss").click()
        assert api.ok("GET", "/library")["allowed"] == ["ignored", "lookup"]
        assert _tools_offered(api) == {LOOKUP, "mcp__library__ignored"}

        card.get_by_role("button", name="Test library").click()
        expect(page.get_by_text("library answered in")).to_be_visible()
        page.get_by_role("button", name="Dismiss").click()

        # A server that cannot start: refused, the reason under the command.
        form.get_by_label("Name", exact=True).fill("ghost")
        form.get_by_label("Command", exact=True).fill("'/nonexistent/mcp server' --flag")
        form.get_by_label("Allowed tools").fill("")
        form.get_by_role("button", name="Install").click()
        expect(form).to_contain_text("No such file or directory: '/nonexistent/mcp server'")
        assert [s["name"] for s in api.ok("GET", "")["servers"]] == ["library"]

        card.get_by_role("button", name="Remove library").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(page.get_by_text("No tool servers yet")).to_be_visible()
        # The refused install's 400 is the browser's only complaint.
        assert [e for e in errors if "status of 400" not in e] == []
    assert [e["server"] for e in api.events("mcp.installed")] == ["library"]
    (removed,) = api.events("mcp.uninstalled")
    assert removed == {"workspace": "default", "actor": "root", "server": "library"}
    assert _tools_offered(api) == set()
