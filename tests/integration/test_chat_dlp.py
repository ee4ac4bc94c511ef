"""DLP on the chat: the question on the way in, tokens and sources on the way out.

A real server; the model is a scripted OpenAI-compatible server that streams secrets cut
at awkward places, so what the client receives can be checked frame by frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool
from tests.sse import post_sse
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh

PASSWORD = "a long enough password"
CARD = "4111 1111 1111 1111"
KEY = "sk-Abc123Def456Ghi789Jkl012"
EMAIL = "jane.doe@example.com"


@dataclass(frozen=True)
class Api:
    url: str
    server: ScriptedOpenAI
    member: str  # login tokens
    admin: str

    def call(self, method: str, path: str, token: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kw)

    def stream(self, body: dict[str, Any]) -> list[tuple[str, Any]]:
        headers = {"Authorization": f"Bearer {self.member}"}
        return post_sse(f"{self.url}/api/workspaces/default/chat/stream", body, headers)


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    module_catalog_url: str | None,
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("chatdlp")
    docs = root / "docs"
    docs.mkdir()
    (docs / "billing.md").write_text(
        f"# Billing\n\nBilling questions go to {EMAIL} during office hours.\n"
    )
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(docs)])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    create_user(context.catalog, "boss", PASSWORD, "admin")
    create_user(context.catalog, "reader", PASSWORD, "member")
    add_membership(context.catalog, "reader", "default")
    context.close()
    with ScriptedOpenAI() as server:
        provider = {"name": "scripted", "kind": "openai", "base_url": server.base_url,
                    "default_model": "gpt-test", "local": True}  # fmt: skip
        url = serve_asgi(
            create_app(workspace, llm={"providers": [provider], "default": "scripted"})
        )
        tokens = [_login(url, name) for name in ("reader", "boss")]
        yield Api(url, server, *tokens)


def _login(url: str, username: str) -> str:
    response = httpx.post(
        f"{url}/api/auth/login", json={"username": username, "password": PASSWORD}
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def _tokens(events: list[tuple[str, Any]]) -> list[str]:
    return [data["text"] for event, data in events if event == "token"]


def _done(events: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(next(data for event, data in events if event == "done"))


def test_a_secret_streamed_in_pieces_never_reaches_the_client(api: Api) -> None:
    answer = f"Use the key {KEY} and the card {CARD} to pay. That is all."
    api.server.reset([Text(answer)])  # streamed in word-ish pieces
    events = api.stream({"message": "How do I pay?"})
    frames = _tokens(events)
    text = "".join(frames)
    for secret in (KEY, CARD, KEY[3:12], "1111 1111"):
        assert all(secret not in frame for frame in frames)
        assert secret not in text
    assert text.count("[REDACTED]") == 2 and "to pay. That is all." in text
    done = _done(events)
    assert done["dlp_warning"] is True
    chat = api.call("GET", f"/api/workspaces/default/chats/{done['chatId']}", api.member).json()
    assert KEY not in str(chat) and "[REDACTED]" in chat["messageList"][1]["content"]


def test_the_question_is_redacted_before_the_model_sees_it(api: Api) -> None:
    api.server.reset([Text("I cannot help with card numbers.")])
    events = api.stream({"message": f"Is my card {CARD} still valid?"})
    sent = api.server.requests[0]["messages"][-1]["content"]
    assert CARD not in sent and "[REDACTED]" in sent
    assert _done(events)["dlp_warning"] is True
    chats = api.call("GET", "/api/workspaces/default/chats", api.member).json()
    assert all(CARD not in c["title"] for c in chats)  # titled with what was sent


def test_sources_are_redacted_and_the_admin_can_reveal_the_original(api: Api) -> None:
    api.server.reset(
        [Tool("rag_search", {"query": "billing contact"}), Text(f"Write to {EMAIL} [1].")]
    )
    events = api.stream({"message": "Who handles billing?"})
    (citations,) = [data for event, data in events if event == "citations"]
    assert citations["sources"] and EMAIL not in str(citations)
    assert EMAIL not in "".join(_tokens(events))
    done = _done(events)
    ref = f"message:{done['messageId']}"
    refused = api.call("POST", "/api/dlp/reveal", api.member, json={"ref": ref})
    assert refused.status_code in (403, 404)
    revealed = api.call("POST", "/api/dlp/reveal", api.admin, json={"ref": ref})
    assert revealed.status_code == 200, revealed.text
    assert EMAIL in revealed.json()["original"]


def test_a_clean_answer_carries_no_warning(api: Api) -> None:
    api.server.reset([Text("Office hours are nine to five.")])
    assert _done(api.stream({"message": "When are you open?"}))["dlp_warning"] is False


def test_the_openai_api_redacts_too(api: Api, tmp_path: Path) -> None:
    import openai

    api.server.reset([Text(f"The key is {KEY}.")])
    client = openai.OpenAI(base_url=f"{api.url}/v1", api_key=api.member, max_retries=0)
    completion = client.chat.completions.create(
        model="default", messages=[{"role": "user", "content": "Which key?"}]
    )
    assert KEY not in (completion.choices[0].message.content or "")
    assert (completion.model_extra or {})["dlp_warning"] is True
