"""The chat service's skills: added through ``register_skill`` only, once per name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.chat.service import ChatService
from autorag.chat.skills import builtin_skills
from autorag.config import Settings
from autorag.llm.base import ToolSpec
from autorag.llm.router import ModelRouter


@dataclass
class Echo:
    spec: ToolSpec = field(
        default_factory=lambda: ToolSpec("echo", "says it back", {"type": "object"})
    )

    def available(self, context: SkillContext) -> bool:
        return True

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        return SkillResult(str(dict(arguments)))


def _service() -> ChatService:
    return ChatService(Settings(), cast(ModelRouter, None), builtin_skills())


def test_a_registered_skill_is_offered_under_its_name() -> None:
    service, echo = _service(), Echo()
    service.register_skill(echo)
    assert service.skills["echo"] is echo
    assert set(builtin_skills()) < set(service.skills)


def test_a_name_is_registered_once() -> None:
    service = _service()
    service.register_skill(Echo())
    with pytest.raises(ValueError, match="echo"):
        service.register_skill(Echo())
    with pytest.raises(ValueError, match="rag_search"):
        service.register_skill(builtin_skills()["rag_search"])


def test_the_skills_cannot_be_changed_behind_its_back() -> None:
    service = _service()
    with pytest.raises(TypeError):
        service.skills["echo"] = Echo()  # type: ignore[index]
