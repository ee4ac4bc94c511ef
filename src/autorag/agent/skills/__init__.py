"""Skills the agent can call, registered by name."""

from __future__ import annotations

from autorag.agent.skills.attachments import DocumentTempProcess
from autorag.agent.skills.base import Skill
from autorag.agent.skills.memory import WorkspaceMemory
from autorag.agent.skills.rag_search import RagSearch


def builtin_skills() -> dict[str, Skill]:
    skills: list[Skill] = [RagSearch(), WorkspaceMemory(), DocumentTempProcess()]
    return {skill.spec.name: skill for skill in skills}
