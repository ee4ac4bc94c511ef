"""The official ``openai`` SDK as a client of our OpenAI-compatible API."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import openai
import pytest
from starlette.types import ASGIApp
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.ops.workspaces import create_workspace

QUESTION = "How long is the refund window?"


@dataclass(frozen=True)
class Clients:
    member: openai.OpenAI  # a member of "default" only
    outsider: openai.OpenAI  # a member of "private" only


@pytest.fixture(scope="module")
def clients(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    module_catalog_url: str | None,
) -> Iterator[Clients]:
    root = tmp_path_factory.mktemp("openai")
    write_corpus(root / "docs")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(root / "docs")])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    create_workspace(context.catalog, "private")
    keys = []
    for name, ws in (("member", "default"), ("outsider", "private")):
        create_user(context.catalog, name, "a long enough password", "member")
        add_membership(context.catalog, name, ws)
        keys.append(create_api_key(context.catalog, name, "sdk", [])[1])
    context.close()
    url = serve_asgi(create_app(workspace)) + "/v1"
    yield Clients(*(openai.OpenAI(base_url=url, api_key=k, max_retries=0) for k in keys))


def test_models_are_the_workspaces_the_key_can_read(clients: Clients) -> None:
    assert [m.id for m in clients.member.models.list()] == ["default"]
    assert [m.id for m in clients.outsider.models.list()] == ["private"]


def test_completion_answers_with_citations(clients: Clients) -> None:
    completion = clients.member.chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}]
    )
    text = completion.choices[0].message.content or ""
    assert "thirty days" in text and completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.total_tokens > 0
    citations = (completion.model_extra or {})["citations"]
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    assert cited <= {c["number"] for c in citations}
    assert any(c["source"].endswith("refunds.pdf") for c in citations)


def test_streaming_completion_streams_the_same_answer(clients: Clients) -> None:
    whole = clients.member.chat.completions.create(
        model="default", messages=[{"role": "user", "content": QUESTION}]
    )
    stream = clients.member.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishing[-1].choices[0].finish_reason == "stop"
    assert (finishing[-1].model_extra or {})["citations"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_conversation_history_and_system_messages_are_used(clients: Clients) -> None:
    completion = clients.member.chat.completions.create(
        model="default",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "Thirty days [1]."},
            {"role": "user", "content": "Which courier carries parcels?"},
        ],
    )
    assert "Zephyr" in (completion.choices[0].message.content or "")


def test_a_workspace_outside_the_key_is_not_found(clients: Clients) -> None:
    with pytest.raises(openai.NotFoundError):
        clients.outsider.chat.completions.create(
            model="default", messages=[{"role": "user", "content": QUESTION}]
        )


def test_bad_requests_raise_sdk_errors(clients: Clients) -> None:
    with pytest.raises(openai.BadRequestError):
        clients.member.chat.completions.create(
            model="default", messages=[{"role": "assistant", "content": "no question"}]
        )
    with pytest.raises(openai.BadRequestError):
        clients.member.chat.completions.create(
            model="default@nosuch/model", messages=[{"role": "user", "content": QUESTION}]
        )
    bad = openai.OpenAI(
        base_url=str(clients.member.base_url), api_key="ark_not_a_real_key", max_retries=0
    )
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
