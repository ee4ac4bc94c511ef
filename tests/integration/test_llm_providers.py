"""The OpenAI-compatible and Ollama chat adapters against scripted servers over loopback."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import SecretStr
from tests.doubles import (
    Error,
    Hang,
    OllamaModel,
    ScriptedOllama,
    ScriptedOpenAI,
    ScriptedServer,
    Text,
    Tool,
    ToolCalls,
    Turn,
)
from tests.ports import free_port

from autorag.config import LLMProviderSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.llm._wire import ServerLLMProvider
from autorag.llm.base import ChatImage, ChatMessage, LLMDelta, ToolCall, ToolSpec, Usage
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider
from autorag.llm.registry import build_provider

API_KEY = "sk-test-DO-NOT-LEAK-0123456789"
SEARCH = ToolSpec(
    "rag_search",
    "Search the indexed documents.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
QUESTION = [ChatMessage("user", "How long is the refund window?")]
ANSWER = "The refund window is 30 days [1]."


@dataclass(frozen=True)
class Dialect:
    """A server double and the adapter that speaks its dialect."""

    server: Callable[..., ScriptedServer]
    provider: type[ServerLLMProvider]

    def serve(self, script: Sequence[Turn] = (), **options: Any) -> ScriptedServer:
        return self.server(script, **options).start()

    def connect(self, server: ScriptedServer, **options: Any) -> ServerLLMProvider:
        options.setdefault("default_model", "test-model")
        return self.provider("lab", base_url=server.base_url, **options)


OPENAI = Dialect(ScriptedOpenAI, OpenAICompatProvider)
OLLAMA = Dialect(ScriptedOllama, OllamaProvider)
DIALECTS = [pytest.param(OPENAI, id="openai"), pytest.param(OLLAMA, id="ollama")]


def _chat(provider: ServerLLMProvider, **options: Any) -> list[LLMDelta]:
    return list(provider.stream_chat(QUESTION, tools=[SEARCH], **options))


def _text(deltas: list[LLMDelta]) -> str:
    return "".join(d.text for d in deltas)


def _calls(deltas: list[LLMDelta]) -> list[ToolCall]:
    return [d.tool_call for d in deltas if d.tool_call is not None]


def _closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


# -- streaming --------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_text_arrives_in_pieces_then_usage(dialect: Dialect) -> None:
    with dialect.serve([Text(ANSWER)]) as server:
        deltas = _chat(dialect.connect(server))
    pieces = [d.text for d in deltas if d.text]
    assert len(pieces) > 5 and "".join(pieces) == ANSWER
    assert deltas[-1].usage is not None and deltas[-1].usage.completion_tokens == len(pieces)
    assert _calls(deltas) == []


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_tool_call_is_assembled(dialect: Dialect) -> None:
    arguments = {"query": "refund window duration", "k": 5, "filters": {"type": ["pdf"]}}
    script = [Tool("rag_search", arguments, text="Let me search.", id="call_abc")]
    with dialect.serve(script) as server:
        deltas = _chat(dialect.connect(server))
    assert _text(deltas) == "Let me search."
    assert _calls(deltas) == [ToolCall("call_abc", "rag_search", arguments)]
    # Usage comes before the call: a consumer stops reading at the first tool call.
    assert deltas[-2].usage is not None and deltas[-1].tool_call is not None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_several_tool_calls_in_one_turn(dialect: Dialect) -> None:
    calls = [Tool("rag_search", {"query": "refunds"}), Tool("rag_search", {"query": "returns"})]
    with dialect.serve([ToolCalls(calls)]) as server:
        found = _calls(_chat(dialect.connect(server)))
    assert [c.arguments for c in found] == [{"query": "refunds"}, {"query": "returns"}]
    assert len({c.id for c in found}) == 2


@pytest.mark.parametrize("dialect", DIALECTS)
def test_malformed_arguments_are_kept_raw(dialect: Dialect) -> None:
    with dialect.serve([Tool("rag_search", '{"query": "refu')]) as server:
        [call] = _calls(_chat(dialect.connect(server)))
    assert call.arguments == {"_raw": '{"query": "refu'}


def test_ollama_tool_calls_without_ids_get_one() -> None:
    with ScriptedOllama([Tool("rag_search", {"query": "x"})], ids_in_tool_calls=False) as server:
        [call] = _calls(_chat(OLLAMA.connect(server)))
    assert call.id.startswith("call_") and call.arguments == {"query": "x"}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_reported_usage(dialect: Dialect) -> None:
    with dialect.serve([Text("Hi.", usage=Usage(120, 7))]) as server:
        deltas = _chat(dialect.connect(server))
    assert [d.usage for d in deltas if d.usage] == [Usage(120, 7)]


def test_a_server_that_reports_no_usage_is_fine() -> None:
    with ScriptedOpenAI([Text("Hi.")], report_usage=False) as server:
        deltas = _chat(OPENAI.connect(server))
    assert _text(deltas) == "Hi." and all(d.usage is None for d in deltas)


# -- what the client sends --------------------------------------------------------------

ROUND_TRIP = [
    ChatMessage("system", "Answer from the sources, citing [n]."),
    ChatMessage("user", "How long is the refund window?"),
    ChatMessage("assistant", tool_calls=(ToolCall("call_7", "rag_search", {"query": "refund"}),)),
    ChatMessage("tool", "[1] Refunds are accepted within 30 days.", tool_call_id="call_7"),
]
SENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "rag_search",
            "description": "Search the indexed documents.",
            "parameters": dict(SEARCH.parameters),
        },
    }
]


def test_openai_request_json() -> None:
    with ScriptedOpenAI([Text(ANSWER)]) as server:
        list(OPENAI.connect(server).stream_chat(ROUND_TRIP, tools=[SEARCH], model="qwen"))
    [sent] = server.requests
    assert sent["model"] == "qwen"
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["tools"] == SENT_TOOLS
    assistant, tool = sent["messages"][2:]
    assert assistant["tool_calls"] == [
        {
            "id": "call_7",
            "type": "function",
            "function": {"name": "rag_search", "arguments": '{"query": "refund"}'},
        }
    ]
    assert tool == {
        "role": "tool",
        "content": "[1] Refunds are accepted within 30 days.",
        "tool_call_id": "call_7",
    }


def test_ollama_request_json() -> None:
    with ScriptedOllama([Text(ANSWER)]) as server:
        list(OLLAMA.connect(server).stream_chat(ROUND_TRIP, tools=[SEARCH]))
    [sent] = server.requests
    assert sent["model"] == "test-model" and sent["stream"] is True
    assert sent["tools"] == SENT_TOOLS
    assistant, tool = sent["messages"][2:]
    assert assistant["tool_calls"] == [
        {"id": "call_7", "function": {"name": "rag_search", "arguments": {"query": "refund"}}}
    ]
    assert tool["role"] == "tool" and tool["tool_name"] == "rag_search"


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16  # a PNG's signature is all the doubles check
LOOK = [
    ChatMessage("system", "You read images."),
    ChatMessage("user", "What does it say?", images=(ChatImage(base64.b64encode(PNG).decode()),)),
]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_images_and_temperature_reach_the_server(dialect: Dialect) -> None:
    with dialect.serve([Text("It says hello.")]) as server:
        deltas = list(dialect.connect(server).stream_chat(LOOK, temperature=0))
    assert _text(deltas) == "It says hello."
    [sent] = server.requests
    assert server.images(sent) == [PNG]
    sampling = sent["options"] if dialect is OLLAMA else sent
    assert sampling["temperature"] == 0


@pytest.mark.parametrize("dialect", DIALECTS)
def test_no_images_and_no_temperature_send_neither(dialect: Dialect) -> None:
    with dialect.serve([Text("Hi.")]) as server:
        list(dialect.connect(server).stream_chat(QUESTION))
    [sent] = server.requests
    assert server.images(sent) == [] and "temperature" not in sent and "options" not in sent
    assert sent["messages"] == [{"role": "user", "content": QUESTION[0].content}]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_image_the_server_cannot_read_is_refused(dialect: Dialect) -> None:
    broken = [ChatMessage("user", "Read it.", images=(ChatImage("not base64!"),))]
    with dialect.serve([Text("unseen")]) as server, pytest.raises(InvalidInput) as caught:
        list(dialect.connect(server).stream_chat(broken))
    assert "refused the request (HTTP 400" in caught.value.message
    assert server.requests[0]["model"] == "test-model"


def test_openai_refuses_images_outside_user_messages() -> None:
    image = LOOK[1].images
    with ScriptedOpenAI() as server, pytest.raises(InvalidInput, match="only allowed for"):
        list(OPENAI.connect(server).stream_chat([ChatMessage("system", "x", images=image)]))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_no_tools_sends_no_tools_key(dialect: Dialect) -> None:
    with dialect.serve([Text("Hi.")]) as server:
        list(dialect.connect(server).stream_chat(QUESTION))
    assert "tools" not in server.requests[0]


def test_the_api_key_is_sent_and_a_wrong_one_is_not_repeated() -> None:
    with ScriptedOpenAI([Text("Hi.")], api_key=API_KEY) as server:
        assert _text(_chat(OPENAI.connect(server, api_key=API_KEY))) == "Hi."
        assert server.log[-1].authorization == f"Bearer {API_KEY}"
        wrong = "sk-wrong-key-DO-NOT-LEAK"
        with pytest.raises(Unavailable) as caught:
            _chat(OPENAI.connect(server, api_key=wrong))
    assert caught.value.code == "llm_unauthorized"
    assert "'lab'" in caught.value.message and "HTTP 401" in caught.value.message
    assert wrong not in caught.value.message and "check its api_key" in caught.value.message


def test_a_missing_api_key_says_one_is_needed() -> None:
    with ScriptedOpenAI(api_key=API_KEY) as server, pytest.raises(Unavailable, match="needs an"):
        OPENAI.connect(server).list_models()


# -- listing models ---------------------------------------------------------------------


def test_openai_list_models() -> None:
    with ScriptedOpenAI(models=["gpt-a", "gpt-b", "gpt-c"]) as server:
        every = OPENAI.connect(server).list_models()
        chosen = OPENAI.connect(server, models=["gpt-c", "gpt-missing", "gpt-a"]).list_models()
    assert [m.id for m in every] == ["gpt-a", "gpt-b", "gpt-c"]
    assert all(m.provider == "lab" and m.local for m in every)
    assert [m.id for m in chosen] == ["gpt-c", "gpt-a"]


def test_ollama_list_models() -> None:
    models = [OllamaModel("llama3.2:3b"), OllamaModel("qwen2.5:7b", 4_683_087_332, "7.6B")]
    with ScriptedOllama(models=models) as server:
        listed = OLLAMA.connect(server).list_models()
    assert [(m.id, m.size_bytes, m.parameters) for m in listed] == [
        ("llama3.2:3b", 2_019_393_189, "3.2B"),
        ("qwen2.5:7b", 4_683_087_332, "7.6B"),
    ]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_default_model_is_the_first_listed(dialect: Dialect) -> None:
    with dialect.serve([Text("Hi.")], models=["first", "second"]) as server:
        provider = dialect.provider("lab", base_url=server.base_url)
        assert provider.default_model == "first"
        _chat(provider)
    assert server.requests[0]["model"] == "first"


def test_built_from_settings() -> None:
    with ScriptedOpenAI([Text("Hi.")], api_key=API_KEY, models=["m"]) as server:
        settings = LLMProviderSettings(
            name="lab", kind="openai", base_url=server.base_url, api_key=SecretStr(API_KEY)
        )
        provider = build_provider(settings)
        assert _text(list(provider.stream_chat(QUESTION))) == "Hi."
        assert provider.default_model == "m"


# -- failures ---------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_server_that_is_down(dialect: Dialect) -> None:
    url = _closed_port_url()
    provider = dialect.provider("lab", base_url=url, default_model="m")
    with pytest.raises(Unavailable, match=rf"'lab' at {url}.*cannot be reached.*running"):
        _chat(provider)
    with pytest.raises(Unavailable, match="cannot be reached"):
        provider.list_models()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_server_error_is_unavailable(dialect: Dialect) -> None:
    server = dialect.serve([Error(500, "model crashed")])
    expected = r"'lab' at .* failed \(HTTP 500: model crashed\)"
    with server, pytest.raises(Unavailable, match=expected):
        _chat(dialect.connect(server))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unknown_model_is_invalid_input(dialect: Dialect) -> None:
    server = dialect.serve(models=["known"], reject_unknown_models=True)
    with server, pytest.raises(InvalidInput, match=r"HTTP 404.*not.*Check the model name"):
        _chat(dialect.connect(server), model="unknown")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_bad_request_is_invalid_input(dialect: Dialect) -> None:
    server = dialect.serve([Error(400, "context too long")])
    with server, pytest.raises(InvalidInput, match=r"refused the request.*context too long"):
        _chat(dialect.connect(server))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_error_in_the_middle_of_the_stream(dialect: Dialect) -> None:
    with dialect.serve([Error(message="CUDA out of memory", after_text="The refund")]) as server:
        received: list[LLMDelta] = []
        with pytest.raises(Unavailable, match="failed while answering: CUDA out of memory"):
            received.extend(dialect.connect(server).stream_chat(QUESTION))
    assert _text(received) == "The refund"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_server_that_does_not_answer_times_out(dialect: Dialect) -> None:
    with dialect.serve([Hang(seconds=10)]) as server:
        started = time.monotonic()
        with pytest.raises(Unavailable, match=r"did not answer within 0\.3s"):
            _chat(dialect.connect(server, timeout_s=0.3))
        assert time.monotonic() - started < 8  # the timeout, not the 10 s hang (margin for load)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_closing_the_stream_stops_it_at_once(dialect: Dialect) -> None:
    slow = Text("word " * 100, delay_s=0.1)  # ten seconds to the end
    with dialect.serve([slow, Text("Next.")]) as server:
        provider = dialect.connect(server)
        stream = provider.stream_chat(QUESTION)
        assert next(stream).text == "word"
        started = time.monotonic()
        stream.close()
        assert time.monotonic() - started < 5  # not the 10 s to the end (margin for load)
        _wait_for(lambda: server.disconnects == 1)
        # The aborted connection is not reused: the next answer comes as usual.
        assert _text(list(provider.stream_chat(QUESTION))) == "Next."


def _wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


# -- the doubles themselves -------------------------------------------------------------


def test_a_respond_function_decides_each_turn() -> None:
    def respond(request: dict[str, Any]) -> Turn:
        last = request["messages"][-1]
        return Text("Done [1].") if last["role"] == "tool" else Tool("rag_search", {"query": "q"})

    with ScriptedOpenAI(respond) as server:
        provider = OPENAI.connect(server)
        [call] = _calls(_chat(provider))
        messages = [
            *QUESTION,
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", "[1] source", tool_call_id=call.id),
        ]
        assert _text(list(provider.stream_chat(messages))) == "Done [1]."


def test_an_exhausted_script_answers_its_default() -> None:
    with ScriptedOllama([], default=Text("fallback")) as server:
        assert _text(_chat(OLLAMA.connect(server))) == "fallback"
        server.push(Text("pushed"))
        assert _text(_chat(OLLAMA.connect(server))) == "pushed"
        assert len(server.requests) == 2
        server.reset([Text("again")])
        assert server.requests == [] and server.log == []
        assert _text(_chat(OLLAMA.connect(server))) == "again"
