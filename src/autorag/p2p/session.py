"""A remote session: the answer a peer gets, made only from sources allowed to leave.

The agent runs as for a local question, with one skill: a ``rag_search`` that returns the
sources the egress gate let through (already redacted). Nothing else of the workspace
(memory, attachments, other documents) is within the agent's reach, so nothing else can
end up in the answer.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from autorag.agent.events import ignore
from autorag.agent.orchestrator import AgentRequest, AgentResult, Orchestrator
from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.agent.skills.rag_search import SPEC, format_tool_result
from autorag.chat import store
from autorag.chat.service import ChatService
from autorag.context import AppContext
from autorag.llm.base import ToolSpec
from autorag.models import Citation
from autorag.p2p.approvals import PendingSource
from autorag.workspace_settings import read_settings


@dataclass
class AllowedSources:
    """``rag_search`` over a fixed set: the sources that may leave."""

    sources: Sequence[Citation]
    spec: ToolSpec = field(default=SPEC)

    def available(self, context: SkillContext) -> bool:
        return True

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        first = context.first_citation_number
        numbered = [replace(c, number=first + i) for i, c in enumerate(self.sources)]
        return SkillResult(format_tool_result(numbered), numbered, status="Searched")


def remote_answer(
    app: AppContext,
    chat: ChatService,
    question: str,
    sources: Sequence[PendingSource],
    cancel: threading.Event | None = None,
) -> AgentResult:
    """The workspace's model (as configured) answering from ``sources`` only."""
    config = read_settings(app.catalog, app.info).agent.model_copy(
        update={"enabled_skills": ["rag_search"], "plan_mode": False, "hybrid_search_forced": True}
    )
    orchestrator = Orchestrator(
        app,
        chat.resolve(app, config, None),
        config=config,
        limits=chat.settings.agent,
        skills={"rag_search": AllowedSources([_citation(i, s) for i, s in enumerate(sources)])},
        router=chat.router,
    )
    failed = True
    try:
        result = orchestrator.run(AgentRequest(question), ignore, cancel)
        failed = False
        return result
    finally:
        store.record_usage(app.catalog.engine, app.info.id, orchestrator.usage, failed=failed)


def _citation(index: int, source: PendingSource) -> Citation:
    return Citation.external(
        index + 1,
        source.source,
        title=source.title,
        text=source.snippet,
        score=source.score,
        page=source.page,
        key=index + 1,
    )
