"""The skill protocol: a tool the agent can call, described by a JSON schema."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from autorag.llm.base import ToolSpec
from autorag.models import Citation, SearchFilters

if TYPE_CHECKING:
    from autorag.context import AppContext


@dataclass
class SkillContext:
    """What a skill may use during one answer."""

    app: AppContext  # scoped to the chat's workspace
    chat_id: int | None  # None: a one-off question with no stored chat
    user_id: int | None
    filters: SearchFilters = field(default_factory=SearchFilters)  # the request's own
    k: int = 6  # sources a search returns
    first_citation_number: int = 1  # numbering continues across the answer's searches
    cancel: threading.Event = field(default_factory=threading.Event)


@dataclass
class SkillResult:
    content: str  # what the model reads
    citations: list[Citation] = field(default_factory=list)
    status: str | None = None  # one line for the client ("Searched: 6 sources")


class Skill(Protocol):
    spec: ToolSpec

    def available(self, context: SkillContext) -> bool:
        """Whether to offer the skill in this answer at all (a skill with nothing to work
        on only costs the model's attention)."""
        ...

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        """Do the work; bad arguments raise ``InvalidInput`` with a message for the model."""
        ...
