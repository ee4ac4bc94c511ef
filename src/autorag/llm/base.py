"""The LLM provider protocol: one streamed decision per call, text or a tool call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from autorag.models import Citation

Role = Literal["system", "user", "assistant", "tool"]


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
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    # Structured sources a tool returned; providers that cannot read prose use these.
    citations: tuple[Citation, ...] = field(default=())


@dataclass(frozen=True)
class LLMDelta:
    """A piece of the stream: a text token, or a tool call (which decides the turn)."""

    text: str = ""
    tool_call: ToolCall | None = None


class LLMProvider(Protocol):
    name: str

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
    ) -> Iterator[LLMDelta]: ...
