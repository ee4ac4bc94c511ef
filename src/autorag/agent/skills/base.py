"""The skill protocol: a tool the agent can call, described by a JSON schema."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from autorag.agent.events import Emit, ignore
from autorag.auth.permissions import SESSION, is_allowed
from autorag.errors import Forbidden
from autorag.llm.base import ToolSpec
from autorag.models import Citation, SearchFilters

if TYPE_CHECKING:
    from autorag.context import AppContext


# How a caller authenticated when the chat service could not be told: treated as the
# stricter of the two (an API key), so permissions reserved to a login never apply.
UNKNOWN_VIA = "api_key"


@dataclass(frozen=True)
class Caller:
    """Who asked, as the API's permission check sees them: a skill acting for the caller
    may do exactly what the caller may do through the API, no more."""

    role: str  # admin | manager | member; "" holds no permission
    via: str = UNKNOWN_VIA  # "token" (a login) | "api_key"
    scope: frozenset[str] | None = None  # workspaces the caller may act in; None: all

    def can(self, permission: str, workspace: str) -> bool:
        """``autorag.auth.permissions.is_allowed``: the check every API route makes."""
        return is_allowed(self.role, self.via, self.scope, permission, workspace)


# The command line (``autorag ask``/``chat``): whoever runs it owns the data directory.
LOCAL_OPERATOR = Caller("admin", SESSION)
NOBODY = Caller("")  # a user the chat service did not describe: no permission at all


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
    # Who asked. None: the local operator when there is no user, else nobody (a context
    # built for a user must say who they are to do anything that needs a permission).
    caller: Caller | None = None
    # Events for the client while the skill runs (a proposed page edit); a context made
    # outside an answer drops them.
    emit: Emit = ignore
    # The archive the question is asked about (``autorag ask --archive``), by name: the
    # archive skills' default, and where ``rag_search`` looks when the documents have
    # nothing. None: no archive was named.
    archive: str | None = None
    # Whether every model that may read this answer's tool results is local (the one
    # answering and those that would take over): an archive only a local model may read
    # is refused otherwise. False unless the answer says (fails closed).
    local_model: bool = False
    # Whether the client receives the events (a proposed page edit it can apply): the
    # web chat's stream and the command line do, the OpenAI-compatible API does not.
    receives_events: bool = False

    @property
    def who(self) -> Caller:
        if self.caller is not None:
            return self.caller
        return LOCAL_OPERATOR if self.user_id is None else NOBODY

    def can(self, permission: str) -> bool:
        """Whether the caller holds ``permission`` in this workspace, as the API decides."""
        return self.who.can(permission, self.app.info.name)

    def require(self, permission: str, action: str) -> None:
        """``Forbidden`` (the model reads it as the tool's error) unless ``can``."""
        if not self.can(permission):
            raise Forbidden(
                f"not allowed: {action} needs {permission}, which the user asking "
                f"(role {self.who.role or 'none'}) does not have in this workspace"
            )


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


def progress_words(skill: Skill) -> str:
    """What people read while ``skill`` runs: its ``progress`` phrase if it has one (the
    spec's name and description are written for the model), else its name in words."""
    phrase = getattr(skill, "progress", "")
    if isinstance(phrase, str) and phrase:
        return phrase
    return f"Using {skill.spec.name.replace('_', ' ')}…"
