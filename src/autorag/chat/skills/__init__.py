"""The skills a chat's agent has built in: the workspace search (the agent's own, with
the archives' search as its fallback D-07), the skills of the chat's features, workspace
memory and attached files, and the archives' (``wiki_query``, ``wiki_write``). Features
outside the chat add theirs through ``ChatService.register_skill`` (P2P's
``peer_search``)."""

from __future__ import annotations

from autorag.agent.skills.base import Skill
from autorag.agent.skills.rag_search import RagSearch
from autorag.chat.skills.attachments import DocumentTempProcess
from autorag.chat.skills.memory import WorkspaceMemory
from autorag.wiki.skills import WikiQuery, WikiWrite, search_archive


def builtin_skills() -> dict[str, Skill]:
    skills: list[Skill] = [
        RagSearch(archive_search=search_archive),
        WorkspaceMemory(),
        DocumentTempProcess(),
        WikiQuery(),
        WikiWrite(),
    ]
    return {skill.spec.name: skill for skill in skills}
