"""What people read while a skill runs: words, not the tool's name for the model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autorag.agent.skills.base import SkillContext, SkillResult, progress_words
from autorag.agent.skills.rag_search import RagSearch
from autorag.chat.skills import builtin_skills
from autorag.llm.base import ToolSpec
from autorag.p2p.peer_search import PeerSearch


class Unnamed:
    spec = ToolSpec("slow_lookup", "for the model", {"type": "object"})

    def available(self, context: SkillContext) -> bool:
        return True

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        return SkillResult("")


def test_every_shipped_skill_says_what_it_does_in_words() -> None:
    skills = [*builtin_skills().values(), PeerSearch.__new__(PeerSearch)]
    for skill in skills:
        words = progress_words(skill)
        assert "_" not in words and skill.spec.name not in words, words
        assert words.endswith("…")
    assert progress_words(RagSearch()) == "Searching your documents…"


def test_a_skill_without_words_is_named_readably() -> None:
    assert progress_words(Unnamed()) == "Using slow lookup…"
