"""The LLM adapters' shared pieces: chat JSON, locality, argument parsing, the registry."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import SecretStr

from autorag.config import LLMProviderSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.http_client import ModelServer, display_url
from autorag.llm._wire import (
    is_local_url,
    ollama_messages,
    openai_messages,
    openai_tools,
    parse_arguments,
)
from autorag.llm.base import ChatImage, ChatMessage, LLMDelta, ToolCall, ToolSpec, Usage
from autorag.llm.extractive import ExtractiveProvider
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider, _ChatStream, sse_data
from autorag.llm.registry import LLM_KINDS, build_provider

SEARCH = ToolSpec(
    "rag_search",
    "Search the documents.",
    MappingProxyType({"type": "object", "properties": {"query": {"type": "string"}}}),
)
CONVERSATION = [
    ChatMessage("system", "Answer from the sources."),
    ChatMessage("user", "How long is the refund window?"),
    ChatMessage("assistant", tool_calls=(ToolCall("call_1", "rag_search", {"query": "refund"}),)),
    ChatMessage("tool", "[1] Refunds within 30 days.", tool_call_id="call_1"),
]


# -- locality ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434",
        "http://127.1.2.3:8000/v1",
        "http://localhost:8080/v1",
        "http://LOCALHOST./v1",
        "http://[::1]:8000/v1",
        "http://10.1.2.3/v1",
        "http://172.20.0.5:8000",
        "http://192.168.1.20:1234/v1",
        "http://[fd12:3456::1]:8000",
        "http://169.254.10.10",
        "http://[fe80::1%25eth0]:8000",
        "http://[::ffff:192.168.0.1]/v1",
        "http://0.0.0.0:8000/v1",
        "http://gpu-box:8000/v1",
        "http://ollama:11434",
        "http://studio.local:1234/v1",
        "http://api.localhost/v1",
        "http://nas.home.arpa/v1",
        "http://host.docker.internal:11434",
        "localhost:8080",
    ],
)
def test_local_urls(url: str) -> None:
    assert is_local_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "http://8.8.8.8/v1",
        "http://172.32.0.1/v1",  # just outside 172.16.0.0/12
        "http://100.64.0.1/v1",  # carrier-grade NAT: not ours
        "http://[2001:db8::1]/v1",
        "http://localhost.example.com/v1",
        "",
        "http://",
    ],
)
def test_hosted_urls(url: str) -> None:
    assert not is_local_url(url)


def test_display_url_drops_credentials() -> None:
    assert display_url("http://user:secret@gpu-box:8000/v1") == "http://gpu-box:8000/v1"
    assert display_url("http://gpu-box:8000/v1") == "http://gpu-box:8000/v1"
    assert display_url("https://me@[::1]:8000/v1?a=b@c") == "https://[::1]:8000/v1?a=b@c"


# -- chat JSON --------------------------------------------------------------------------


def test_openai_messages() -> None:
    assert openai_messages(CONVERSATION) == [
        {"role": "system", "content": "Answer from the sources."},
        {"role": "user", "content": "How long is the refund window?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "rag_search", "arguments": '{"query": "refund"}'},
                }
            ],
        },
        {"role": "tool", "content": "[1] Refunds within 30 days.", "tool_call_id": "call_1"},
    ]


def test_ollama_messages_have_object_arguments_and_tool_names() -> None:
    converted = ollama_messages(CONVERSATION)
    assert converted[2]["tool_calls"] == [
        {"id": "call_1", "function": {"name": "rag_search", "arguments": {"query": "refund"}}}
    ]
    assert converted[3] == {
        "role": "tool",
        "content": "[1] Refunds within 30 days.",
        "tool_name": "rag_search",
    }


PAGE = ChatMessage(
    "user", "Transcribe this.", images=(ChatImage("iVBORw0K"), ChatImage("/9j/4AAQ", "image/jpeg"))
)


def test_openai_messages_send_images_as_data_url_parts() -> None:
    assert openai_messages([PAGE]) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Transcribe this."},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            ],
        }
    ]
    [only_image] = openai_messages([ChatMessage("user", images=PAGE.images[:1])])
    assert [part["type"] for part in only_image["content"]] == ["image_url"]


def test_ollama_messages_send_images_as_bare_base64() -> None:
    assert ollama_messages([PAGE]) == [
        {"role": "user", "content": "Transcribe this.", "images": ["iVBORw0K", "/9j/4AAQ"]}
    ]
    assert "images" not in ollama_messages(CONVERSATION)[1]


def test_tools_are_plain_json() -> None:
    tools = openai_tools([SEARCH])
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "rag_search",
                "description": "Search the documents.",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    json.dumps(tools)  # a MappingProxyType inside would fail here


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ('{"query": "refund"}', {"query": "refund"}),
        ({"query": "refund"}, {"query": "refund"}),
        ("", {}),
        ("  ", {}),
        (None, {}),
        ('{"query": "ref', {"_raw": '{"query": "ref'}),
        ('["not", "an", "object"]', {"_raw": '["not", "an", "object"]'}),
        (["a"], {"_raw": '["a"]'}),
    ],
)
def test_parse_arguments(raw: Any, parsed: dict[str, Any]) -> None:
    assert parse_arguments(raw) == parsed


# -- the OpenAI stream parser -----------------------------------------------------------


def _server() -> ModelServer:
    return ModelServer("LLM provider 'lab'", "http://gpu-box:8000/v1", timeout_s=5)


def _parse(*chunks: Any, done: bool = True) -> list[LLMDelta]:
    lines = [f"data: {json.dumps(chunk)}" for chunk in chunks] + (["data: [DONE]"] if done else [])
    return list(_ChatStream(_server()).deltas(sse_data(line for x in lines for line in (x, ""))))


def _choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_sse_data_joins_multi_line_events_and_skips_comments() -> None:
    lines = [": keep-alive", "", "event: message", "data: a", "data:b", "", "data: c"]
    assert list(sse_data(lines)) == ["a\nb", "c"]


def test_tool_calls_without_index_are_told_apart_by_id() -> None:
    deltas = _parse(
        _choice({"tool_calls": [{"id": "a", "function": {"name": "x", "arguments": "{}"}}]}),
        _choice({"tool_calls": [{"id": "b", "function": {"name": "y", "arguments": '{"k":'}}]}),
        _choice({"tool_calls": [{"function": {"arguments": "1}"}}]}),
    )
    calls = [d.tool_call for d in deltas if d.tool_call]
    assert calls == [ToolCall("a", "x", {}), ToolCall("b", "y", {"k": 1})]


def test_cumulative_usage_is_reported_once() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    last = {"prompt_tokens": 5, "completion_tokens": 2}
    deltas = _parse(
        {**_choice({"content": "a"}), "usage": usage},
        {**_choice({"content": "b"}, "stop"), "usage": last},
    )
    assert [d.usage for d in deltas if d.usage] == [Usage(5, 2)]


def test_a_stream_cut_before_its_end_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="ended before"):
        _parse(_choice({"content": "Par"}), done=False)


def test_finish_reason_without_done_is_a_complete_answer() -> None:
    deltas = _parse(_choice({"content": "Hi"}), _choice({}, "stop"), done=False)
    assert [d.text for d in deltas] == ["Hi"]


def test_an_error_inside_the_stream_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="out of memory"):
        _parse({"error": {"message": "CUDA out of memory", "code": 500}})


# -- providers and the registry ---------------------------------------------------------


def test_default_model_comes_from_settings_then_the_configured_models() -> None:
    assert OpenAICompatProvider("a", default_model="m1", models=["m2"]).default_model == "m1"
    assert OpenAICompatProvider("a", models=["m2", "m3"]).default_model == "m2"


def test_locality_is_judged_from_the_url_unless_configured() -> None:
    assert not OpenAICompatProvider("openai").local  # api.openai.com by default
    assert OllamaProvider("ollama").local  # 127.0.0.1:11434 by default
    assert OpenAICompatProvider("lan", base_url="http://gpu-box:8000/v1").local
    assert not OpenAICompatProvider("vpn", base_url="http://gpu-box:8000/v1", local=False).local


def test_build_provider_by_kind() -> None:
    settings = LLMProviderSettings(
        name="lab",
        kind="openai",
        base_url="http://192.168.1.5:8000/v1/",
        api_key=SecretStr("sk-secret"),
        models=["qwen", "llama"],
        timeout_s=7,
    )
    provider = build_provider(settings)
    assert isinstance(provider, OpenAICompatProvider)
    assert (provider.name, provider.local, provider.default_model) == ("lab", True, "qwen")
    assert provider.base_url == "http://192.168.1.5:8000/v1"
    ollama = build_provider(LLMProviderSettings(name="ollama", kind="ollama"))
    assert isinstance(ollama, OllamaProvider)
    assert ollama.base_url == "http://127.0.0.1:11434"


def test_an_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInput, match=r"unknown kind 'anthropic'.*ollama, openai"):
        build_provider(LLMProviderSettings(name="x", kind="anthropic"))
    assert set(LLM_KINDS) == {"openai", "ollama"}


def test_extractive_speaks_the_whole_protocol() -> None:
    provider = ExtractiveProvider()
    assert (provider.name, provider.local, provider.default_model) == (
        "extractive",
        True,
        "extractive",
    )
    [model] = provider.list_models()
    assert (model.id, model.provider, model.local) == ("extractive", "extractive", True)
