"""The official ``openai`` SDK against ``/v1`` when a real model answers: the request's
options reach the model server (scripted doubles speaking Ollama's and OpenAI's wire
formats on loopback), the answer streams a chunk per token, and what the server
reports (usage, a cut-off answer) comes back as OpenAI clients read it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from starlette.types import ASGIApp
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool, Turn, split_tokens
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.llm.base import Usage

QUESTION = "How long is the refund window?"
ANSWER = "The refund window is thirty days from delivery, and refunds go to the card [1]."
OLLAMA = "default@ollama/llama3.2:3b"
REMOTE = "default@remote/gpt-test"


@dataclass(frozen=True)
class World:
    client: openai.OpenAI
    ollama: ScriptedOllama
    remote: ScriptedOpenAI


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("sdk")
    (root / "docs").mkdir()
    (root / "docs" / "refunds.md").write_text(
        "# Refunds\n\nThe refund window is thirty days from delivery.\n", encoding="utf-8"
    )
    workspace = new_workspace(root / "kb", None, search_paths=[str(root / "docs")])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    create_user(context.catalog, "dev", "a long enough password", "admin")
    key = create_api_key(context.catalog, "dev", "sdk", [])[1]
    context.close()
    with ScriptedOllama(models=["llama3.2:3b"]) as ollama, ScriptedOpenAI() as remote:
        providers = [
            {"name": "ollama", "kind": "ollama", "base_url": ollama.base_url},
            {"name": "remote", "kind": "openai", "base_url": remote.base_url,
             "default_model": "gpt-test", "local": True},
        ]  # fmt: skip
        app = create_app(workspace, llm={"providers": providers, "default": "extractive"})
        url = serve_asgi(app) + "/v1"
        yield World(openai.OpenAI(base_url=url, api_key=key, max_retries=0), ollama, remote)


def searches_then(answer: Turn) -> Callable[[dict[str, Any]], Turn]:
    """The model searches first, then answers from the tool's result."""

    def respond(request: dict[str, Any]) -> Turn:
        if any(m.get("role") == "tool" for m in request.get("messages") or ()):
            return answer
        return Tool("rag_search", {"query": "refund window"}, usage=Usage(40, 9))

    return respond


def ask(world: World, model: str, **options: Any) -> Any:
    return world.client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], **options
    )


def test_sampling_options_reach_ollama_and_usage_is_the_servers(world: World) -> None:
    world.ollama.reset(searches_then(Text(ANSWER, usage=Usage(120, 21))))
    reply = ask(world, OLLAMA, temperature=0.2, top_p=0.9, seed=7, stop=["\n\n"])
    assert reply.choices[0].message.content.startswith("The refund window is thirty days")
    assert reply.choices[0].finish_reason == "stop"
    for request in world.ollama.requests:  # the search decision and the answer
        assert request["options"] == {"temperature": 0.2, "top_p": 0.9, "seed": 7, "stop": ["\n\n"]}
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (160, 30)


def test_max_tokens_cuts_a_models_answer(world: World) -> None:
    world.ollama.reset(searches_then(Text(ANSWER)))
    reply = ask(world, OLLAMA, max_tokens=4)
    assert reply.choices[0].finish_reason == "length"
    assert reply.choices[0].message.content == "".join(split_tokens(ANSWER)[:4])
    # Tools were offered: the server is not given the bound (a tool call needs room), the
    # adapter counts the answer's tokens and closes the stream.
    assert all("num_predict" not in r.get("options", {}) for r in world.ollama.requests)

    world.remote.reset(searches_then(Text(ANSWER)))
    chunks = list(ask(world, REMOTE, max_completion_tokens=6, stream=True))
    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(deltas) == "".join(split_tokens(ANSWER)[:6]) and len(deltas) == 6
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"


def test_streaming_sends_each_token_as_the_model_writes_it(world: World) -> None:
    world.remote.reset(searches_then(Text(ANSWER)))
    chunks = list(ask(world, REMOTE, stream=True, stream_options={"include_usage": True}))
    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(deltas) == ANSWER
    # A chunk per word at most (the DLP redactor passes text on at word ends), none merged.
    assert all(len(delta.split()) <= 1 for delta in deltas), deltas
    assert len(deltas) >= len(ANSWER.split())
    assert chunks[0].choices[0].delta.role == "assistant"
    finishing = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finishing] == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0


def test_json_output_is_asked_of_the_model_server(world: World) -> None:
    answer = '{"days": 30, "source": 1}'
    world.ollama.reset(searches_then(Text(answer)))
    reply = ask(world, OLLAMA, response_format={"type": "json_object"})
    assert json.loads(reply.choices[0].message.content or "") == {"days": 30, "source": 1}
    assert {r["format"] for r in world.ollama.requests} == {"json"}

    schema = {"type": "object", "properties": {"days": {"type": "integer"}}}
    world.remote.reset(searches_then(Text('{"days": 30}')))
    reply = ask(
        world,
        REMOTE,
        temperature=0,
        stop="STOP",
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "window", "schema": schema, "strict": True},
        },
    )
    assert json.loads(reply.choices[0].message.content or "") == {"days": 30}
    sent = world.remote.requests[-1]
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "window", "schema": schema, "strict": True},
    }
    assert (sent["temperature"], sent["stop"], "max_tokens" in sent) == (0, ["STOP"], False)
