"""Chat with Ollama through its native API (``/api/chat``, ``/api/tags``).

``base_url`` is the server root, without ``/api``: ``http://127.0.0.1:11434`` (the
default). For Ollama's OpenAI-compatible ``/v1`` use ``OpenAICompatProvider`` instead;
the native API also reports model sizes and parameter counts.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Any

from autorag.errors import Unavailable
from autorag.llm._wire import (
    ServerLLMProvider,
    bounded,
    ollama_messages,
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
    LLMDelta,
    ModelInfo,
    ToolSpec,
)


class OllamaProvider(ServerLLMProvider):
    """Streams ``POST {base_url}/api/chat`` (one JSON object a line); lists ``/api/tags``.

    Ollama sends each tool call whole, with its arguments as an object. Usage comes from
    the last line's ``prompt_eval_count`` and ``eval_count``, and is yielded before the
    tool calls. Generation options go in ``options`` (``num_predict`` for max_tokens,
    ``stop``, ``temperature``, ``top_p``, ``seed``, the penalties) and JSON output in
    ``format`` ("json", or the schema); ``done_reason`` "length" ends with
    ``finish="length"``.
    """

    default_base_url = "http://127.0.0.1:11434"
    not_found_hint = "Check the model name, and that it is pulled (`ollama pull <model>`)."

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
            "messages": ollama_messages(messages),
            "stream": True,
        }
        if settings := _options(options, tools):
            body["options"] = settings
        if options.json is not None:
            body["format"] = "json" if options.json.schema is None else plain(options.json.schema)
        if tools:
            body["tools"] = openai_tools(tools)
        with self._server.stream_lines("/api/chat", body) as lines:
            yield from bounded(self._deltas(lines), options, tools)

    def _deltas(self, lines: Iterable[str]) -> Iterator[LLMDelta]:
        calls: list[LLMDelta] = []  # held until the usage: consumers stop at the first call
        for line in lines:
            if not line.strip():
                continue
            chunk = self._server.decode(line)
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise self._server.reported_error(chunk["error"])
            message = chunk.get("message") or {}
            if text := message.get("content"):
                yield LLMDelta(text=text)
            calls.extend(_tool_call(call) for call in message.get("tool_calls") or ())
            if chunk.get("done"):
                yield usage_delta(chunk.get("prompt_eval_count"), chunk.get("eval_count"))
                yield from calls
                if chunk.get("done_reason") == "length":
                    yield LLMDelta(finish="length")
                return
        raise Unavailable(f"{self._server.where}: the stream ended before the answer did")

    def _list_all(self) -> list[ModelInfo]:
        payload = self._server.get_json("/api/tags")
        items = payload.get("models") if isinstance(payload, dict) else None
        if not isinstance(items, list):
            raise Unavailable(f"{self._server.where} answered /api/tags without a models list")
        return [self._model_info(item) for item in items if isinstance(item, dict)]

    def _model_info(self, item: dict[str, Any]) -> ModelInfo:
        details = item.get("details") or {}
        parameters = details.get("parameter_size") if isinstance(details, dict) else None
        return ModelInfo(
            id=str(item.get("name") or item.get("model") or ""),
            provider=self.name,
            local=self.local,
            size_bytes=optional_int(item.get("size")),
            parameters=str(parameters) if parameters else None,
        )


def _options(options: GenerationOptions, tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """Ollama's ``options`` for a call: only what was set."""
    return sampling_fields(options, tools, max_tokens_key="num_predict")


def _tool_call(call: dict[str, Any]) -> LLMDelta:
    function = call.get("function") or {}
    return tool_call(call.get("id"), function.get("name"), function.get("arguments"))
