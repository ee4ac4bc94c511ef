"""The official ``openai`` SDK as a client of our OpenAI-compatible API."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from starlette.types import ASGIApp
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.llm.extractive import NO_ANSWER
from autorag.ops.workspaces import create_workspace

QUESTION = "How long is the refund window?"
EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # the default embedding model


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


def test_streaming_completion_streams_the_same_answer_token_by_token(clients: Clients) -> None:
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
    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(deltas) > 5  # a chunk per word, not the whole text in one
    assert "".join(deltas) == whole.choices[0].message.content
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finishing) == 1 and finishing[0].choices[0].finish_reason == "stop"
    assert (finishing[0].model_extra or {})["citations"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


def test_max_tokens_cuts_the_answer_with_finish_reason_length(clients: Clients) -> None:
    ask = [{"role": "user", "content": QUESTION}]
    cut = clients.member.chat.completions.create(model="default", messages=ask, max_tokens=3)
    assert cut.choices[0].finish_reason == "length"
    assert len((cut.choices[0].message.content or "").split()) == 3
    streamed = clients.member.chat.completions.create(
        model="default", messages=ask, max_completion_tokens=2, stream=True
    )
    chunks = list(streamed)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len(text.split()) == 2
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"


def test_stop_sequences_end_the_answer_before_them(clients: Clients) -> None:
    ask = [{"role": "user", "content": QUESTION}]
    full = clients.member.chat.completions.create(model="default", messages=ask)
    assert "thirty days" in (full.choices[0].message.content or "")
    for stop in ("thirty", ["nothing like it", "window is"]):
        cut = clients.member.chat.completions.create(model="default", messages=ask, stop=stop)
        text = cut.choices[0].message.content or ""
        assert "thirty" not in text and text.strip() and cut.choices[0].finish_reason == "stop"
        assert (full.choices[0].message.content or "").startswith(text)


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"temperature": 5}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"n": 2}, "n"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, "tools"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"response_format": {"type": "json_object"}}, "response_format"),  # extractive
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
        ({"logprobs": True}, "logprobs"),
    ],
)
def test_options_that_cannot_be_honoured_are_refused_naming_the_field(
    clients: Clients, options: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        clients.member.chat.completions.create(
            model="default", messages=[{"role": "user", "content": QUESTION}], **options
        )
    error = caught.value
    assert (error.type, error.param) == ("invalid_request_error", param)
    assert error.code and "/" not in error.code
    body = error.body if isinstance(error.body, dict) else {}
    assert param.split(".")[0] in body["message"] or "JSON" in body["message"]


def test_unknown_models_are_not_found_with_the_valid_ones_listed(clients: Clients) -> None:
    for model in ("nosuch", "private", "default@nosuch/model"):
        with pytest.raises(openai.NotFoundError) as caught:
            clients.member.chat.completions.create(
                model=model, messages=[{"role": "user", "content": QUESTION}]
            )
        error = caught.value
        assert (error.type, error.code, error.param) == (
            "invalid_request_error", "model_not_found", "model",
        )  # fmt: skip
        body = error.body if isinstance(error.body, dict) else {}
        assert repr(model) in body["message"] and "default" in body["message"]
        assert body["message"] in str(error)  # the SDK shows the message itself


def test_a_model_is_retrieved_or_not_found(clients: Clients) -> None:
    model = clients.member.models.retrieve("default")
    assert (model.id, model.object, model.owned_by) == ("default", "model", "autorag")
    assert clients.member.models.retrieve("default@extractive/extractive").id == (
        "default@extractive/extractive"
    )
    with pytest.raises(openai.NotFoundError) as caught:
        clients.outsider.models.retrieve("default")
    assert caught.value.code == "model_not_found"
    assert "private" in str(caught.value)


def test_embeddings_use_the_workspaces_embedding_model(clients: Clients) -> None:
    one = clients.member.embeddings.create(model=EMBEDDING_MODEL, input="refund window")
    assert one.model == EMBEDDING_MODEL and len(one.data) == 1
    vector = one.data[0].embedding
    assert len(vector) == 384 and abs(sum(x * x for x in vector) - 1) < 1e-3
    assert one.usage.prompt_tokens > 0 and one.usage.total_tokens == one.usage.prompt_tokens
    texts = ["refund window", "office cat", "refund window"]
    floats = clients.member.embeddings.create(
        model=EMBEDDING_MODEL, input=texts, encoding_format="float"
    )
    assert [d.index for d in floats.data] == [0, 1, 2]
    first, other, again = (d.embedding for d in floats.data)
    assert first == pytest.approx(vector, abs=1e-5) and again == pytest.approx(first, abs=1e-5)
    assert other != pytest.approx(first, abs=1e-2)


def test_embedding_requests_that_cannot_be_served_say_why(clients: Clients) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        clients.member.embeddings.create(model="text-embedding-3-small", input="x")
    assert caught.value.code == "model_not_found" and EMBEDDING_MODEL in str(caught.value)
    for options, param in (
        ({"input": []}, "input"),
        ({"input": ["ok", ""]}, "input[1]"),
        ({"input": [[1, 2, 3]]}, "input[0]"),
        ({"input": "x", "dimensions": 10}, "dimensions"),
    ):
        with pytest.raises(openai.BadRequestError) as refused:
            clients.member.embeddings.create(model=EMBEDDING_MODEL, **options)
        assert refused.value.param == param


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


def test_a_question_without_evidence_is_not_found_once(clients: Clients) -> None:
    completion = clients.member.chat.completions.create(
        model="default", messages=[{"role": "user", "content": "What's the weather in Paris?"}]
    )
    assert completion.choices[0].message.content == NO_ANSWER  # no quotes, no second note


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
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    with pytest.raises(openai.BadRequestError) as caught:
        clients.member.chat.completions.create(
            model="default",
            messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}, image]}],
        )
    assert caught.value.param == "messages[0].content" and "image_url" in str(caught.value)
    bad = openai.OpenAI(
        base_url=str(clients.member.base_url), api_key="ark_not_a_real_key", max_retries=0
    )
    with pytest.raises(openai.AuthenticationError) as caught:
        bad.models.list()
    assert caught.value.type == "authentication_error" and caught.value.code
    with pytest.raises(openai.AuthenticationError):
        bad.embeddings.create(model=EMBEDDING_MODEL, input="x")
