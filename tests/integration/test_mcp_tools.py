"""Installed MCP tool servers (issue 22, the MCP client), end to end on a real server:
an admin installs the SDK-written double ``tests/doubles/mcp_tool_server.py`` (stdio)
into a workspace; the scripted model calls its tools through the agent; the answer cites
the resource link the tool returned and ``done.mcpSources`` lists it; a hanging tool is
stopped at the skill timeout and the answer goes on; a crashing one fails its call only;
no AUTORAG_* variable reaches the server; a tool outside the allowlist is not offered;
``mcp.installed`` / ``mcp.uninstalled`` are in the event log; a removed server's tools are
offered no more. The web page is ``tests/e2e/test_web_mcp.py``'s.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.mcp_world import (
    CALL_TIMEOUT_S,
    DOUBLE,
    LOOKUP,
    Api,
    mcp_workspace,
    offered,
    tool_results,
)

from autorag.api.app import create_app


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    with ScriptedOpenAI() as model:
        workspace = mcp_workspace(tmp_path_factory.mktemp("mcp-tools") / "kb", model)
        yield Api.login(serve_asgi(create_app(workspace)), workspace, model)


@pytest.fixture(scope="module")
def installed(api: Api) -> dict[str, Any]:
    tools = ["lookup", "hang", "crash", "env_probe"]
    body = {"name": "library", "command": [sys.executable, DOUBLE], "tools": tools,
            "timeoutS": CALL_TIMEOUT_S}  # fmt: skip
    made: dict[str, Any] = api.ok("POST", "", 201, json=body)
    return made


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
    (event,) = api.events("mcp.installed")
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
    tools = offered(api.model.requests[0])
    assert {LOOKUP, "mcp__library__hang"} <= tools and "mcp__library__ignored" not in tools
    (result,) = tool_results(api.model.requests[1])
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
    (result,) = tool_results(api.model.requests[1])
    assert (
        result == "error: the tool 'hang' of the MCP server 'library' did not answer within 1.5 s"
    )
    (done,) = events["done"]
    assert done["answer"].startswith("The tool did not answer.") and done["mcpSources"] == []


def test_a_crash_fails_its_call_only(api: Api, installed: dict[str, Any]) -> None:
    api.model.reset([Tool("mcp__library__crash"), Text("Done.")])
    events = api.ask("Crash.")
    (crashed,) = tool_results(api.model.requests[1])
    assert crashed.startswith("error: the tool 'crash' of the MCP server 'library' failed")
    assert events["done"][0]["answer"].startswith("Done.")


def test_the_allowlist_decides_what_isoffered(api: Api, installed: dict[str, Any]) -> None:
    changed = api.ok("PATCH", "/library", json={"tools": ["lookup"]})
    assert changed["allowed"] == ["lookup"]
    unknown = api.call("PATCH", "/library", json={"tools": ["nope"]})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "mcp_unknown_tool")
    api.model.reset([Tool("mcp__library__hang"), Text("No such tool here.")])
    api.ask("Try the hanging tool again.")
    assert offered(api.model.requests[0]) >= {LOOKUP}
    assert "mcp__library__hang" not in offered(api.model.requests[0])
    (result,) = tool_results(api.model.requests[1])
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


def test_a_removed_server_is_offered_no_more(api: Api, installed: dict[str, Any]) -> None:
    """Runs last: it removes the server."""
    api.ok("DELETE", "/library", 204)
    (event,) = api.events("mcp.uninstalled")
    assert event == {"workspace": "default", "actor": "root", "server": "library"}
    api.model.reset([Text("Nothing to call.")])
    api.ask("Anything?")
    assert not any(name.startswith("mcp__") for name in offered(api.model.requests[0]))
