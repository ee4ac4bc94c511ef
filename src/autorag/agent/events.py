"""What an answer in progress tells its client, in order: the SSE events' content."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autorag.models import Citation


@dataclass(frozen=True)
class TokenEvent:
    text: str


@dataclass(frozen=True)
class StatusEvent:
    message: str
    skill: str | None = None


@dataclass(frozen=True)
class PlanEvent:
    plan: str


@dataclass(frozen=True)
class CitationsEvent:
    citations: tuple[Citation, ...]


AgentEvent = TokenEvent | StatusEvent | PlanEvent | CitationsEvent
Emit = Callable[[AgentEvent], None]


def ignore(_event: AgentEvent) -> None:
    """An ``Emit`` for callers that only want the result."""
