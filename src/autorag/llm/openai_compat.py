"""Chat with any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, LM Studio, Ollama's /v1.

``base_url`` is the API root including its version, as the servers document it:
``https://api.openai.com/v1`` (the default), ``http://127.0.0.1:8000/v1`` (vLLM),
``http://127.0.0.1:11434/v1`` (Ollama). The adapter appends ``/chat/completions`` and
``/models``.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from autorag.errors import Unavailable
from autorag.http_client import ModelServer
from autorag.llm._wire import (
    ServerLLMProvider,
    bounded,
    openai_messages,
    openai_tools,
    optional_int,
    plain,
    sampling_fields,
    tool_call,
    usage_delta,
)
from autorag.llm.base import (
    DEFAULT_OPTIONS,
    ChatMessage,
    GenerationOptions,
    JsonFormat,
    LLMDelta,
    ModelInfo,
    ToolSpec,
)

_DONE = "[DONE]"


class OpenAICompatProvider(ServerLLMProvider):
    """Streams ``POST {base_url}/chat/completions``; lists ``GET {base_url}/models``.

    Without an api_key no Authorization header is sent (local servers usually need none).
    Tool calls arrive in fragments and are yielded whole when the stream ends, after the
    usage; their arguments, if not valid JSON, come as ``{"_raw": <text>}`` (see
    ``parse_arguments``). Generation options are passed as the same fields
    (``max_tokens``, the one local servers read, ``stop``, ``temperature``, ``top_p``,
    ``seed``, the penalties, ``response_format``); ``finish_reason`` "length" ends with
    ``finish="length"``.
    """

    default_base_url = "https://api.openai.com/v1"
    not_found_hint = "Check the model name, and that base_url ends in its API version (/v1)."

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> Generator[LLMDelta, None, None]:
        options = options.with_temperature(temperature)
        body: dict[str, Any] = {
            "model": model or self.default_model,
            "messages": openai_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        body.update(_options(options, tools))
        if tools:
            body["tools"] = openai_tools(tools)
        with self._server.stream_lines("/chat/completions", body) as lines:
            deltas = _ChatStream(self._server).deltas(sse_data(lines))
            yield from bounded(deltas, options, tools)

    def _list_all(self) -> list[ModelInfo]:
        payload = self._server.get_json("/models")
        items = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(items, list):
            raise Unavailable(f"{self._server.where} answered /models without a data list")
        return [self._model_info(item) for item in items if isinstance(item, dict)]

    def _model_info(self, item: dict[str, Any]) -> ModelInfo:
        # Not in OpenAI's schema, but vLLM says max_model_len and OpenRouter context_length.
        window = optional_int(item.get("max_model_len")) or optional_int(item.get("context_length"))
        return ModelInfo(
            id=str(item.get("id", "")), provider=self.name, local=self.local, context_window=window
        )


def _options(options: GenerationOptions, tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The request's generation fields: only what was set."""
    fields = sampling_fields(options, tools, max_tokens_key="max_tokens")
    response_format = _response_format(options.json)
    if response_format is not None:
        fields["response_format"] = response_format
    return fields


def _response_format(json_format: JsonFormat | None) -> dict[str, Any] | None:
    if json_format is None:
        return None
    if json_format.schema is None:
        return {"type": "json_object"}
    schema = {
        "name": json_format.name,
        "schema": plain(json_format.schema),
        "strict": json_format.strict,
    }
    return {"type": "json_schema", "json_schema": schema}


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The ``data`` of each server-sent event; an event's several data lines are joined
    by newlines, as the SSE spec says. Comments, ``event:`` and ``id:`` are skipped."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ChatStream:
    """The state of one streamed completion: tool-call fragments, usage, whether it ended."""

    def __init__(self, server: ModelServer) -> None:
        self._server = server
        self._calls: dict[int, _PartialCall] = {}
        self._usage: LLMDelta | None = None
        self._finished = False
        self._cut = False  # the server's max_tokens ended the text

    def deltas(self, events: Iterable[str]) -> Iterator[LLMDelta]:
        for data in events:
            if data.strip() == _DONE:
                self._finished = True
                break
            yield from self._chunk(self._server.decode(data))
        if not self._finished:
            raise Unavailable(f"{self._server.where}: the stream ended before the answer did")
        # Some servers repeat cumulative usage on several chunks: report the last, once,
        # and before the tool calls, since a consumer stops reading at the first call.
        if self._usage is not None:
            yield self._usage
        yield from self._complete_calls()
        if self._cut:
            yield LLMDelta(finish="length")

    def _chunk(self, chunk: Any) -> Iterator[LLMDelta]:
        if not isinstance(chunk, dict):
            return
        if chunk.get("error"):  # vLLM and others report failures inside the stream
            raise self._server.reported_error(chunk["error"])
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # we never ask for n > 1
            delta = choice.get("delta") or {}
            if text := delta.get("content"):
                yield LLMDelta(text=text)
            for fragment in delta.get("tool_calls") or ():
                self._merge(fragment)
            if reason := choice.get("finish_reason"):
                self._finished = True  # the usage chunk and [DONE] may still follow
                self._cut = reason == "length"
        if isinstance(usage := chunk.get("usage"), dict):
            self._usage = usage_delta(usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def _merge(self, fragment: dict[str, Any]) -> None:
        """Add one fragment: the first of a call brings id and name, later ones pieces of
        the arguments string; ``index`` says which call a fragment belongs to."""
        call = self._calls.setdefault(self._index(fragment), _PartialCall())
        function = fragment.get("function") or {}
        call.id = call.id or fragment.get("id") or ""
        call.name = call.name or function.get("name") or ""
        if arguments := function.get("arguments"):
            # A string by the spec; a few servers send an object, which we re-encode.
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            call.arguments.append(text)

    def _index(self, fragment: dict[str, Any]) -> int:
        index = optional_int(fragment.get("index"))
        if index is not None:
            return index
        # No index (a few servers send whole calls): a new id starts a new call.
        known_ids = [call.id for call in self._calls.values()]
        if not self._calls or (fragment.get("id") and fragment["id"] not in known_ids):
            return len(self._calls)
        return max(self._calls)

    def _complete_calls(self) -> Iterator[LLMDelta]:
        for index in sorted(self._calls):
            call = self._calls[index]
            yield tool_call(call.id, call.name, "".join(call.arguments))
        self._calls.clear()
