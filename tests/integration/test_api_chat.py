"""The chat API on a real server: SSE answers with citations, chats, models, limits."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from starlette.types import ASGIApp
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh

QUESTION = "How long is the refund window?"


@dataclass(frozen=True)
class Api:
    url: str
    key: str
    other_key: str  # another member of the same workspace
    manager_key: str

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.key}"}

    def call(self, method: str, path: str, key: str | None = None, **kw: Any) -> httpx.Response:
        return httpx.request(method, self.url + path, headers=self.headers(key), timeout=60, **kw)


@dataclass
class Streamed:
    events: list[tuple[str, Any]]

    def of(self, name: str) -> list[Any]:
        return [data for event, data in self.events if event == name]

    @property
    def text(self) -> str:
        return "".join(d["text"] for d in self.of("token"))

    @property
    def done(self) -> dict[str, Any]:
        (done,) = self.of("done")
        return dict(done)


def stream(api: Api, body: dict[str, Any], workspace: str = "default") -> Streamed:
    events: list[tuple[str, Any]] = []
    with (
        httpx.Client(timeout=60) as client,
        connect_sse(
            client,
            "POST",
            f"{api.url}/api/workspaces/{workspace}/chat/stream",
            json=body,
            headers=api.headers(),
        ) as source,
    ):
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = [(sse.event, sse.json()) for sse in source.iter_sse()]
    return Streamed(events)


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    module_catalog_url: str | None,
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("chat")
    write_corpus(root / "docs")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(root / "docs")])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    keys = []
    for name, role in (("reader", "member"), ("other", "member"), ("boss", "manager")):
        create_user(context.catalog, name, "a long enough password", role)
        add_membership(context.catalog, name, "default")
        keys.append(create_api_key(context.catalog, name, "tests", [])[1])
    context.close()
    yield Api(serve_asgi(create_app(workspace)), *keys)


def test_stream_answers_with_tokens_citations_and_done(api: Api) -> None:
    streamed = stream(api, {"message": QUESTION})
    names = [event for event, _ in streamed.events]
    assert names.index("status") < names.index("token") < names.index("citations")
    assert names[-1] == "done"
    assert "thirty days" in streamed.text
    (citations,) = streamed.of("citations")
    sent = {s["number"] for s in citations["sources"]}
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", streamed.text)}
    assert cited and cited <= sent  # every [n] refers to a source that was sent
    source = next(s for s in citations["sources"] if s["number"] in cited)
    assert source["source"].endswith("refunds.pdf") and source["page"] == 2
    assert source["match"] in ("semantic+keyword", "vector", "fts")
    assert source["url"] == f"/api/workspaces/default/documents/{source['documentId']}"
    done = streamed.done
    assert done["modelUsed"] == "extractive/extractive"
    assert done["providerUsed"] == "extractive"
    assert done["abortReason"] == "done" and done["chatId"] and done["messageId"]


def test_chat_is_stored_and_continued(api: Api) -> None:
    first = stream(api, {"message": QUESTION}).done
    second = stream(api, {"message": "Which courier carries parcels?", "chatId": first["chatId"]})
    assert second.done["chatId"] == first["chatId"]
    assert "Zephyr" in second.text
    chat = api.call("GET", f"/api/workspaces/default/chats/{first['chatId']}").json()
    roles = [m["role"] for m in chat["messageList"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert chat["messageList"][1]["sources"] and chat["messageList"][1]["modelUsed"]
    listed = api.call("GET", "/api/workspaces/default/chats").json()
    assert first["chatId"] in [c["id"] for c in listed]


def test_chats_are_private_to_their_user(api: Api) -> None:
    chat_id = stream(api, {"message": QUESTION}).done["chatId"]
    other = api.call("GET", f"/api/workspaces/default/chats/{chat_id}", key=api.other_key)
    assert other.status_code == 404
    hijack = api.call(
        "POST",
        "/api/workspaces/default/chat",
        key=api.other_key,
        json={"message": "hello", "chatId": chat_id},
    )
    assert hijack.status_code == 404


def test_non_streaming_answer_matches_the_stream(api: Api) -> None:
    response = api.call("POST", "/api/workspaces/default/chat", json={"message": QUESTION})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == stream(api, {"message": QUESTION}).text
    assert body["sources"] and body["abortReason"] == "done"
    assert body["usage"]["promptTokens"] > 0


def test_chat_model_can_be_set_and_is_validated(api: Api) -> None:
    chat_id = stream(api, {"message": QUESTION}).done["chatId"]
    path = f"/api/workspaces/default/chats/{chat_id}/model"
    unknown = api.call("PATCH", path, json={"model": "nosuch/model"})
    assert unknown.status_code == 400 and "nosuch" in unknown.json()["detail"]
    assert api.call("PATCH", path, json={"model": "extractive"}).json()["model"] == "extractive"
    assert api.call("PATCH", path, json={"model": None}).json()["model"] is None


def test_models_lists_extractive_with_labels(api: Api) -> None:
    body = api.call("GET", "/api/models?refresh=true").json()
    (model,) = [m for m in body["models"] if m["provider"] == "extractive"]
    assert model["id"] == "extractive/extractive" and model["available"] is True
    assert "local-only" in model["capabilities"]
    assert body["defaults"]["environment"] == "extractive"


def test_bad_requests_are_refused_before_streaming(api: Api) -> None:
    path = "/api/workspaces/default/chat/stream"
    assert api.call("POST", path, json={"message": ""}).status_code == 422
    assert api.call("POST", path, json={"message": "x", "chatId": 999999}).status_code == 404
    bad_type = api.call("POST", path, json={"message": "x", "documentTypes": ["exe"]})
    assert bad_type.status_code == 400
    assert (
        api.call("POST", "/api/workspaces/nope/chat/stream", json={"message": "x"}).status_code
        == 404
    )
    anonymous = httpx.post(api.url + path, json={"message": "x"})
    assert anonymous.status_code == 401


def test_token_usage_is_recorded_per_workspace(api: Api) -> None:
    before = _requests_today(api)
    stream(api, {"message": QUESTION})
    assert _requests_today(api) == before + 1


def _requests_today(api: Api) -> int:
    rows = api.call("GET", "/api/workspaces/default/usage").json()
    return int(rows[0]["requests"]) if rows else 0


def test_concurrency_slot_is_freed_after_each_answer(api: Api) -> None:
    # More sequential answers than the per-user limit: each frees its slot.
    for _ in range(4):
        assert stream(api, {"message": QUESTION}).done["abortReason"] == "done"


def _first_event_then_leave(api: Api) -> int:
    """Open an answer's stream, read its first event and hang up: the status it got."""
    with (
        httpx.Client(timeout=60) as client,
        connect_sse(
            client,
            "POST",
            f"{api.url}/api/workspaces/default/chat/stream",
            json={"message": QUESTION},
            headers=api.headers(),
        ) as source,
    ):
        if source.response.status_code == 200:
            next(iter(source.iter_sse()))
        return source.response.status_code


def test_abort_mid_stream_frees_the_slot(api: Api) -> None:
    """Closing the connection after the first event stops the answer and frees its slot:
    the user asks again, more times than the limit (3 at once) allows without it. The
    server learns of a hang-up when it next writes, so a new question may briefly find
    the slots taken (429): it is asked again until one is free (a wait, not a measure)."""
    deadline = time.monotonic() + 120
    for _ in range(4):
        while (status := _first_event_then_leave(api)) == 429 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200
    while time.monotonic() < deadline:
        response = api.call("POST", "/api/workspaces/default/chat", json={"message": QUESTION})
        if response.status_code != 429:
            break
        time.sleep(0.05)
    assert response.status_code == 200


def attach(api: Api, chat_id: int, name: str, data: bytes) -> dict[str, Any]:
    """Attach a file as a client does: 202 ``processing``, then polled until read."""
    path = f"/api/workspaces/default/chats/{chat_id}/attachments"
    accepted = api.call("POST", path, files={"file": (name, data, "application/octet-stream")})
    assert accepted.status_code == 202, accepted.text
    attachment: dict[str, Any] = accepted.json()
    assert attachment["status"] == "processing" and attachment["chunks"] == 0
    deadline = time.monotonic() + 60
    while attachment["status"] == "processing" and time.monotonic() < deadline:
        time.sleep(0.1)
        attachment = api.call("GET", f"{path}/{attachment['id']}").json()
    return attachment


def test_a_file_attached_to_a_chat_is_answered_from_there_only(api: Api, tmp_path: Any) -> None:
    chat_id = stream(api, {"message": QUESTION}).done["chatId"]
    note = "The submarine Nautilus was launched from the Lisbon yard in 1911.\n"
    attached = attach(api, chat_id, "nautilus.txt", note.encode())
    assert attached["status"] == "ready", attached
    assert attached["name"] == "nautilus.txt" and attached["chunks"] == 1
    assert attached["reason"] is None and attached["message"] is None
    answered = stream(api, {"message": "Where was the Nautilus launched?", "chatId": chat_id})
    assert "Lisbon" in answered.text
    (citations,) = answered.of("citations")
    assert any(s["title"] == "nautilus.txt" and s["url"] is None for s in citations["sources"])
    # Not in the workspace: search does not find it, another chat does not see it.
    hits = api.call(
        "POST", "/api/workspaces/default/search", json={"query": "Nautilus submarine Lisbon"}
    ).json()["hits"]
    assert all("nautilus" not in h["source"] for h in hits)
    elsewhere = stream(api, {"message": "Where was the Nautilus launched?"})
    assert "Lisbon" not in elsewhere.text
    listed = api.call("GET", f"/api/workspaces/default/chats/{chat_id}/attachments").json()
    path = f"/api/workspaces/default/chats/{chat_id}/attachments/{listed[0]['id']}"
    assert api.call("DELETE", path).status_code == 204
    other = api.call(
        "GET", f"/api/workspaces/default/chats/{chat_id}/attachments", key=api.other_key
    )
    assert other.status_code == 404


def test_bad_attachments_are_refused_with_reasons(api: Api) -> None:
    chat_id = stream(api, {"message": QUESTION}).done["chatId"]
    path = f"/api/workspaces/default/chats/{chat_id}/attachments"
    empty = api.call("POST", path, files={"file": ("empty.txt", b"", "text/plain")})
    assert empty.status_code == 400
    exe = api.call("POST", path, files={"file": ("tool.exe", b"MZ\x90\x00", "application/x")})
    assert exe.status_code == 415
    # Refused when read: the job marks it failed with the reason, the chat keeps it listed.
    broken = attach(api, chat_id, "broken.pdf", b"%PDF-1.4 garbage")
    assert broken["status"] == "failed" and broken["chunks"] == 0, broken
    assert broken["reason"] == "corrupt" and "broken.pdf" in broken["message"]
    assert [a["status"] for a in api.call("GET", path).json()] == ["failed"]
    answered = stream(api, {"message": "What does the broken file say?", "chatId": chat_id})
    assert answered.done["chatId"] == chat_id
    missing = api.call("GET", f"{path}/{broken['id'] + 1000}")
    assert missing.status_code == 404


def test_agent_config_is_validated_and_applied(api: Api) -> None:
    path = "/api/workspaces/default/agent"
    assert api.call("GET", path).json()["citationRequired"] is True
    assert api.call("PATCH", path, json={"planMode": True}).status_code == 403  # a member
    unknown = api.call("PATCH", path, key=api.manager_key, json={"enabledSkills": ["telepathy"]})
    assert unknown.status_code == 400 and "telepathy" in unknown.json()["detail"]
    changed = api.call("PATCH", path, key=api.manager_key, json={"planMode": True})
    assert changed.json()["planMode"] is True and changed.json()["citationRequired"] is True
    try:
        planned = stream(api, {"message": QUESTION})
        assert planned.of("plan") and "thirty days" in planned.text
    finally:
        api.call("PATCH", path, key=api.manager_key, json={"planMode": False})
    skills = api.call("GET", "/api/workspaces/default/skills").json()
    names = {s["name"]: s for s in skills}
    assert set(names) >= {"rag_search", "workspace_memory", "document_temp_process"}
    assert names["rag_search"]["parameters"]["required"] == ["query"]


def test_memory_and_custom_instructions(api: Api) -> None:
    put = api.call(
        "PUT", "/api/workspaces/default/memory/fiscal-year", key=api.manager_key,
        json={"value": "starts in April"},
    )  # fmt: skip
    assert put.status_code == 200
    listed = api.call("GET", "/api/workspaces/default/memory").json()
    assert {"key": "fiscal-year", "value": "starts in April"}.items() <= listed[0].items()
    assert api.call("DELETE", "/api/workspaces/default/memory/fiscal-year").status_code == 403
    gone = api.call("DELETE", "/api/workspaces/default/memory/fiscal-year", key=api.manager_key)
    assert gone.status_code == 204
    mine = api.call("PUT", "/api/auth/me/instructions", json={"instructions": "Answer briefly."})
    assert mine.json() == {"instructions": "Answer briefly."}
    other = api.call("GET", "/api/auth/me/instructions", key=api.other_key).json()
    assert other == {"instructions": ""}
