"""What the MCP client's tests share (issue 22): a workspace whose model is a scripted
OpenAI double and whose admin is ``root``, a client for its server's MCP routes and chat,
and readers of what the model was sent. The server is the caller's: in-process for
``tests/integration/test_mcp_tools.py``, a real ``autorag serve`` for
``tests/e2e/test_web_mcp.py``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from autorag.auth import service
from autorag.context import open_context
from autorag.workspace import Workspace
from tests.doubles.openai_server import ScriptedOpenAI
from tests.sse import post_sse
from tests.workspaces import catalog_sql, new_workspace

PASSWORD = "a long enough password"
URL = "/api/workspaces/default/mcp-servers"
DOUBLE = str(Path(__file__).parent / "doubles" / "mcp_tool_server.py")
# Every skill call's bound, the server's start-up included: generous, so a loaded machine
# never fails a call that works. The server's own bound on a call once it is up
# (CALL_TIMEOUT_S) is what stops the hanging tool.
SKILL_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 1.5
LOOKUP = "mcp__library__lookup"


def mcp_workspace(root: Path, model: ScriptedOpenAI) -> Workspace:
    """A workspace answering with ``model``, with an admin ``root`` (``PASSWORD``)."""
    provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                "default_model": "gpt-test", "local": True, "timeout_s": 10}  # fmt: skip
    workspace = new_workspace(
        root, llm={"providers": [provider], "default": "scripted"},
        agent={"skill_timeout_s": SKILL_TIMEOUT_S},
        server={"login_attempts_per_minute": 10_000},
    )  # fmt: skip
    context = open_context(workspace)
    try:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    return workspace


@dataclass
class Api:
    """The admin's calls to a running server of an ``mcp_workspace``."""

    url: str
    workspace: Workspace
    token: str
    model: ScriptedOpenAI

    @classmethod
    def login(cls, url: str, workspace: Workspace, model: ScriptedOpenAI) -> Api:
        response = httpx.post(
            f"{url}/api/auth/login", json={"username": "root", "password": PASSWORD}, timeout=30
        )
        assert response.status_code == 200, response.text
        return cls(url, workspace, response.json()["access_token"], model)

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, self.url + URL + path, headers=headers, timeout=60, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.call(method, path, **kw)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def ask(self, question: str) -> dict[str, list[dict[str, Any]]]:
        """The answer's SSE events by name, in order."""
        events: dict[str, list[dict[str, Any]]] = {}
        url = f"{self.url}/api/workspaces/default/chat/stream"
        headers = {"Authorization": f"Bearer {self.token}"}
        for name, data in post_sse(url, {"message": question}, headers):
            events.setdefault(name, []).append(data)
        assert "error" not in events, events["error"]
        return events

    def events(self, name: str) -> list[dict[str, Any]]:
        """The event log's ``name`` events: workspace, actor and data."""
        with catalog_sql(self.workspace) as conn:
            rows = conn.execute(
                text("SELECT workspace, actor, data FROM events WHERE name = :n ORDER BY id"),
                {"n": name},
            ).all()
        return [{"workspace": r[0], "actor": r[1], **json.loads(r[2])} for r in rows]


def offered(request: dict[str, Any]) -> set[str]:
    """The names of the tools a chat completion request offered the model."""
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]
