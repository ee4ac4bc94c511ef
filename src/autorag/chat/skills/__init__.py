"""The skills a chat's agent has built in: the workspace search (the agent's own) and the
skills of the chat's features, workspace memory and attached files. Features outside the
chat add theirs through ``ChatService.register_skill`` (P2P's ``peer_search``)."""

from __future__ import annotations

from autorag.agent.skills.base import Skill
from autorag.agent.skills.rag_search import RagSearch
from autorag.chat.skills.attachments import DocumentTempProcess
from autorag.chat.skills.memory import WorkspaceMemory


def builtin_skills() -> dict[str, Skill]:
    skills: list[Skill] = [RagSearch(), WorkspaceMemory(), DocumentTempProcess()]
    return {skill.spec.name: skill for skill in skills}
