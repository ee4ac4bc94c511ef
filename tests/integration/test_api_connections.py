"""Model connections through the API: add, test (before and after saving), list its
models, change, remove, detect; the key never comes back; the chat answers with a
connected model at once, without a restart.

A real server and catalog (SQLite and PostgreSQL); the models are an Ollama double and a
key-protected OpenAI-compatible double on loopback, speaking their wire protocols.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text
from tests.ports import free_port

from autorag.auth.service import add_membership, create_user
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

PASSWORD = "a long enough password"
KEY = "sk-conn-Abc123Def456Ghi789"
BASE = "/api/models/connections"


@dataclass(frozen=True)
class World:
    api: ApiServer
    admin: str
    member: str
    ollama: ScriptedOllama
    openai: ScriptedOpenAI

    def call(self, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        return self.api.call(method, path, token or self.admin, **kw)


def _users(context: AppContext) -> None:
    create_user(context.catalog, "boss", PASSWORD, "admin")
    create_user(context.catalog, "reader", PASSWORD, "member")
    add_membership(context.catalog, "reader", "default")


def _login(api: ApiServer, username: str) -> str:
    response = api.call(
        "POST", "/api/auth/login", json={"username": username, "password": PASSWORD}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Iterator[World]:
    with (
        ScriptedOllama(models=["llama3.2:3b", "qwen3:8b"], default=Text("From the box.")) as ollama,
        ScriptedOpenAI(models=["gpt-test"], api_key=KEY) as openai,
    ):
        api = launch_api(tmp_path_factory.mktemp("connections") / "kb", _users)
        yield World(api, _login(api, "boss"), _login(api, "reader"), ollama, openai)


def test_an_unsaved_server_is_tested_and_its_failures_are_told_in_words(world: World) -> None:
    ok = world.call(
        "POST", f"{BASE}/test", json={"kind": "ollama", "baseUrl": world.ollama.base_url}
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["ok"] and [m["id"] for m in ok.json()["models"]] == ["llama3.2:3b", "qwen3:8b"]

    refused = {"kind": "ollama", "baseUrl": f"http://127.0.0.1:{free_port()}"}
    body = world.call("POST", f"{BASE}/test", json=refused).json()
    assert (body["ok"], body["problem"]) == (False, "refused")
    assert "is the server running?" in body["message"]

    wrong = {"kind": "openai", "baseUrl": world.openai.base_url, "apiKey": "sk-wrong-0000"}
    body = world.call("POST", f"{BASE}/test", json=wrong).json()
    assert body["problem"] == "bad_key" and "sk-wrong" not in str(body)

    bad = world.call("POST", f"{BASE}/test", json={"kind": "ollama", "baseUrl": "file:///etc"})
    assert bad.status_code == 400
    assert "must start with http:// or https://" in bad.json()["detail"]


def test_a_connection_is_added_used_changed_and_removed(world: World) -> None:
    body = {"name": "hosted", "kind": "openai", "baseUrl": world.openai.base_url, "apiKey": KEY}
    added = world.call("POST", BASE, json=body)
    assert added.status_code == 201, added.text
    assert added.json()["apiKeySet"] is True and KEY not in added.text
    listed = world.call("GET", BASE)
    assert [c["name"] for c in listed.json()] == ["hosted"] and KEY not in listed.text
    assert world.call("POST", BASE, json=body).status_code == 409

    tested = world.call("POST", f"{BASE}/hosted/test").json()
    assert tested["ok"] and [m["id"] for m in tested["models"]] == ["gpt-test"]
    models = world.call("GET", f"{BASE}/hosted/models")
    assert [m["id"] for m in models.json()] == ["gpt-test"]
    offered = world.call("GET", "/api/models?refresh=true", world.member).json()
    assert "hosted/gpt-test" in {m["id"] for m in offered["models"]}

    changed = world.call("PATCH", f"{BASE}/hosted", json={"apiKey": "sk-not-it"})
    assert changed.status_code == 200 and changed.json()["apiKeySet"] is True
    assert world.call("POST", f"{BASE}/hosted/test").json()["problem"] == "bad_key"
    cleared = world.call("PATCH", f"{BASE}/hosted", json={"apiKey": None}).json()
    assert cleared["apiKeySet"] is False

    assert world.call("DELETE", f"{BASE}/hosted").status_code == 204
    assert world.call("DELETE", f"{BASE}/hosted").status_code == 404
    offered = world.call("GET", "/api/models", world.member).json()
    assert "hosted" not in {p["name"] for p in offered["providers"]}


def test_the_chat_answers_with_a_connected_model_without_a_restart(world: World) -> None:
    body = {"name": "box", "kind": "ollama", "baseUrl": world.ollama.base_url}
    assert world.call("POST", BASE, json=body).status_code == 201
    question = {"message": "What does the box say?", "model": "box/qwen3:8b"}
    answer = world.call("POST", "/api/workspaces/default/chat", world.member, json=question)
    assert answer.status_code == 200, answer.text
    assert answer.json()["modelUsed"] == "box/qwen3:8b"
    assert "From the box." in answer.json()["answer"]
    assert world.ollama.requests[-1]["model"] == "qwen3:8b"


def test_members_may_not_manage_connections(world: World) -> None:
    assert world.call("GET", BASE, world.member).status_code == 403
    body = {"name": "sneaky", "kind": "ollama", "baseUrl": world.ollama.base_url}
    assert world.call("POST", BASE, world.member, json=body).status_code == 403


def test_ollama_is_detected_within_a_second(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", world.ollama.base_url)
    found = world.call("GET", f"{BASE}/detect").json()
    assert found["found"] and found["baseUrl"] == world.ollama.base_url
    assert "llama3.2:3b" in {m["id"] for m in found["models"]}
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{free_port()}")
    assert world.call("GET", f"{BASE}/detect").json() == {
        "found": False, "kind": None, "baseUrl": None, "models": [], "connectedAs": None,
    }  # fmt: skip
