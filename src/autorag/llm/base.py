"""The LLM provider protocol: one streamed decision per call, text or a tool call.

Providers are synchronous iterators: the orchestrator runs in a worker thread and stops
a generation by closing the iterator (which closes the HTTP stream under it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from autorag.models import Citation

Role = Literal["system", "user", "assistant", "tool"]
ImageType = Literal["image/png", "image/jpeg"]
# Why a generation ended early: "length" when ``max_tokens`` cut it, "stop" when a stop
# sequence did (a natural end needs no word: the stream just ends).
FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON schema of the arguments


@dataclass(frozen=True)
class ChatImage:
    """An image for a vision model to look at: the file's bytes in base64."""

    data: str
    media_type: ImageType = "image/png"


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    # Structured sources a tool returned; providers that cannot read prose use these.
    citations: tuple[Citation, ...] = field(default=())
    # Images the message shows (a user message, for a vision model); each provider sends
    # them its server's way.
    images: tuple[ChatImage, ...] = ()


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class LLMDelta:
    """A piece of the stream: a text token, a tool call (which decides the turn), the
    usage the server reported (once, usually last), or how the generation ended when a
    limit of ``GenerationOptions`` ended it (``finish``, on the last delta)."""

    text: str = ""
    tool_call: ToolCall | None = None
    usage: Usage | None = None
    finish: FinishReason | None = None


@dataclass(frozen=True)
class JsonFormat:
    """Constrain the text to JSON: any object (``schema`` None) or one matching a JSON
    schema (OpenAI's ``response_format`` json_object / json_schema)."""

    schema: Mapping[str, Any] | None = None
    name: str = "response"
    strict: bool = False


@dataclass(frozen=True)
class GenerationOptions:
    """How to generate, beyond the messages; None (or empty): the server's own choice.

    ``max_tokens`` bounds the text of one call. A tool call is not text: with tools
    offered a provider does not send the bound to its server (a call needs room to be
    written) but counts the text it streams and ends with ``finish="length"`` itself.
    ``stop`` sequences end the text before them (``finish="stop"``).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    json: JsonFormat | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None

    def with_temperature(self, temperature: float | None) -> GenerationOptions:
        """These options, with ``temperature`` where they set none."""
        if temperature is None or self.temperature is not None:
            return self
        return replace(self, temperature=temperature)


DEFAULT_OPTIONS = GenerationOptions()


@dataclass(frozen=True)
class ModelInfo:
    """A model a provider offers, as listed by its server."""

    id: str  # the model's name at its provider ("llama3.2:3b", "gpt-4o-mini")
    provider: str  # the configured provider's name
    local: bool  # runs on this machine or network: no text leaves for a hosted service
    size_bytes: int | None = None  # weights on disk, when the server says
    parameters: str | None = None  # "3.2B", when the server says
    context_window: int | None = None


class LLMProvider(Protocol):
    """A configured model server. ``name`` is its configured name, unique per install."""

    name: str
    local: bool
    default_model: str
    # Whether the provider can hold its text to JSON (``GenerationOptions.json``); one
    # that cannot raises ``InvalidInput`` when asked to.
    writes_json: bool

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> Iterator[LLMDelta]:
        """Stream one decision. Raises ``Unavailable`` when the server cannot be reached
        or fails, before or during the stream. ``temperature`` (a shorthand for
        ``options.temperature``) None: the server's own."""
        ...

    def list_models(self) -> list[ModelInfo]:
        """The models on offer; raises ``Unavailable`` when the server cannot be reached."""
        ...

    def close(self) -> None:
        """Release pooled connections; the provider reconnects if used again."""
        ...


# Opens the system message of a planning call (plan mode). A model reads it as an
# instruction; the extractive provider, which cannot plan, recognises it by this text.
PLAN_INSTRUCTION = (
    "Before answering, write a short plan: at most five numbered steps saying what to "
    "search for and how to combine what is found. Write only the plan."
)
