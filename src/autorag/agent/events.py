"""What an answer in progress tells its client, in order: the SSE events' content."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

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


@dataclass(frozen=True)
class WikiEditEvent:
    """An edit of an archive page by the agent (``wiki_write``): proposed and awaiting the
    user's confirmation (``applied`` False: the client saves it with ``base_version``),
    or already saved (the archive lets the agent write)."""

    archive_id: int
    archive: str  # the archive's name
    path: str
    action: Literal["create", "update"]
    diff: str  # unified diff of the page's markdown, old to new
    applied: bool
    title: str
    body: str
    base_version: int | None  # the version the edit was made on (None: a new page)


AgentEvent = TokenEvent | StatusEvent | PlanEvent | CitationsEvent | WikiEditEvent
Emit = Callable[[AgentEvent], None]


def ignore(_event: AgentEvent) -> None:
    """An ``Emit`` for callers that only want the result."""
