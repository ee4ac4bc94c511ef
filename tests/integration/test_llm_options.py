"""Generation options through the HTTP adapters, against real loopback servers speaking
Ollama's and OpenAI's wire formats: what each server is sent, and a cut-off answer
reported as ``finish="length"``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import ScriptedServer, Text, Tool

from autorag.llm._wire import ServerLLMProvider
from autorag.llm.base import ChatMessage, GenerationOptions, JsonFormat, LLMDelta, ToolSpec
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider

ASK = [ChatMessage("user", "How long is the refund window?")]
SEARCH = ToolSpec("rag_search", "search", {"type": "object"})
SCHEMA = {"type": "object", "properties": {"days": {"type": "integer"}}}


@pytest.fixture(scope="module")
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama(models=["llama3.2:3b"]) as server:
        yield server


@pytest.fixture(scope="module")
def remote() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def _stream(provider: ServerLLMProvider, **kwargs: Any) -> list[LLMDelta]:
    return list(provider.stream_chat(ASK, **kwargs))


def test_ollama_is_sent_its_options_and_format(ollama: ScriptedOllama) -> None:
    provider = OllamaProvider("ollama", base_url=ollama.base_url)
    ollama.reset([Text("Thirty days", finish_reason="length"), Text("{}")])
    options = GenerationOptions(
        temperature=0.3, top_p=0.5, max_tokens=2, stop=("END",), seed=1, json=JsonFormat()
    )
    deltas = _stream(provider, options=options)
    assert "".join(d.text for d in deltas) == "Thirty days" and deltas[-1].finish == "length"
    sent = ollama.requests[-1]
    assert sent["options"] == {
        "temperature": 0.3, "top_p": 0.5, "num_predict": 2, "seed": 1, "stop": ["END"]
    }  # fmt: skip
    assert sent["format"] == "json"
    _stream(provider, options=GenerationOptions(json=JsonFormat(SCHEMA)), temperature=0)
    assert ollama.requests[-1]["format"] == SCHEMA
    assert ollama.requests[-1]["options"] == {"temperature": 0}


def test_openai_servers_are_sent_the_same_fields(remote: ScriptedOpenAI) -> None:
    provider = OpenAICompatProvider("remote", base_url=remote.base_url, default_model="gpt-test")
    remote.reset([Text("Thirty days", finish_reason="length"), Text("{}")])
    options = GenerationOptions(
        temperature=1.5, max_tokens=2, stop=("a", "b"), presence_penalty=0.5, json=JsonFormat()
    )
    deltas = _stream(provider, options=options)
    assert deltas[-1].finish == "length"
    sent = remote.requests[-1]
    assert (sent["temperature"], sent["max_tokens"], sent["stop"]) == (1.5, 2, ["a", "b"])
    assert sent["presence_penalty"] == 0.5
    assert sent["response_format"] == {"type": "json_object"}
    schema = JsonFormat(SCHEMA, "window", strict=True)
    _stream(provider, options=GenerationOptions(json=schema))
    assert remote.requests[-1]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "window", "schema": SCHEMA, "strict": True},
    }
    assert "temperature" not in remote.requests[-1]  # unset: the server's own


@pytest.mark.parametrize("dialect", ["ollama", "openai"])
def test_with_tools_offered_max_tokens_is_counted_by_the_adapter(
    dialect: str, ollama: ScriptedOllama, remote: ScriptedOpenAI
) -> None:
    server: ScriptedServer
    provider: ServerLLMProvider
    if dialect == "ollama":
        server, provider = ollama, OllamaProvider("ollama", base_url=ollama.base_url)
    else:
        server = remote
        provider = OpenAICompatProvider("remote", base_url=remote.base_url, default_model="m")
    server.reset([Tool("rag_search", {"query": "refunds"}), Text("one two three four five")])
    options = GenerationOptions(max_tokens=3)
    call = _stream(provider, tools=[SEARCH], options=options)
    assert [d.tool_call.name for d in call if d.tool_call] == ["rag_search"]  # room to call
    answer = _stream(provider, tools=[SEARCH], options=options)
    assert "".join(d.text for d in answer) == "one two three"
    assert answer[-1].finish == "length"
    for sent in server.requests:
        assert "max_tokens" not in sent and "num_predict" not in sent.get("options", {})
