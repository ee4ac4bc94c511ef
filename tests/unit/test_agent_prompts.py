"""The system prompt: the workspace's template filled in, with the user's instructions,
the constraints the workspace switched on, and the plan."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autorag.agent.prompts import CONSTRAINTS, DEFAULT_SYSTEM_PROMPT, system_prompt
from autorag.workspace_settings import AgentConfig

HYBRID = CONSTRAINTS["hybrid_search_forced"]
CITATIONS = CONSTRAINTS["citation_required"]


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def prompt(config: AgentConfig | None = None, **kwargs: object) -> str:
    kwargs.setdefault("workspace", "acme")
    kwargs.setdefault("skills", ["rag_search", "workspace_memory"])
    return system_prompt(config or AgentConfig(), **kwargs)  # type: ignore[arg-type]


def test_the_built_in_template_is_used_when_none_is_configured() -> None:
    text = prompt(AgentConfig(citation_required=False))
    expected = (
        DEFAULT_SYSTEM_PROMPT.replace("{workspace}", "acme")
        .replace("{date}", today())
        .replace("{skills}", "rag_search, workspace_memory")
    )
    assert text == expected


def test_the_placeholders_are_filled_in() -> None:
    config = AgentConfig(system_prompt="W={workspace} D={date} S={skills}", citation_required=False)
    before = today()
    text = prompt(config, workspace="legal", skills=["rag_search", "document_temp_process"])
    assert text in {
        f"W=legal D={day} S=rag_search, document_temp_process" for day in (before, today())
    }


def test_a_placeholder_used_twice_is_filled_in_both_places() -> None:
    config = AgentConfig(system_prompt="{workspace} / {workspace}", citation_required=False)
    assert prompt(config) == "acme / acme"


def test_without_skills_the_prompt_says_none() -> None:
    config = AgentConfig(system_prompt="Tools: {skills}.", citation_required=False)
    assert prompt(config, skills=[]) == "Tools: none."


def test_other_braces_in_a_custom_template_are_left_as_written() -> None:
    template = (
        'Reply as JSON: {"answer": "...", "sources": [{"n": 1}]} for {workspace}. '
        "Ignore {unknown} and {} and {WORKSPACE}."
    )
    config = AgentConfig(system_prompt=template, citation_required=False)
    assert prompt(config) == (
        'Reply as JSON: {"answer": "...", "sources": [{"n": 1}]} for acme. '
        "Ignore {unknown} and {} and {WORKSPACE}."
    )


def test_custom_instructions_come_first() -> None:
    config = AgentConfig(system_prompt="Template for {workspace}.", citation_required=False)
    text = prompt(config, custom_instructions="  Answer in French.\n")
    assert text == "Answer in French.\n\nTemplate for acme."


def test_blank_custom_instructions_add_nothing() -> None:
    config = AgentConfig(system_prompt="Template.", citation_required=False)
    assert prompt(config, custom_instructions="  \n ") == "Template."


def test_no_constraint_lines_when_the_flags_are_off() -> None:
    text = prompt(AgentConfig(hybrid_search_forced=False, citation_required=False))
    assert HYBRID not in text
    assert CITATIONS not in text


@pytest.mark.parametrize(
    ("hybrid", "citations", "expected"),
    [
        (True, False, [HYBRID]),
        (False, True, [CITATIONS]),
        (True, True, [HYBRID, CITATIONS]),
    ],
)
def test_constraint_lines_follow_the_template_only_when_their_flag_is_on(
    hybrid: bool, citations: bool, expected: list[str]
) -> None:
    config = AgentConfig(
        system_prompt="Template.", hybrid_search_forced=hybrid, citation_required=citations
    )
    assert prompt(config) == "\n\n".join(["Template.", *expected])


def test_citations_are_required_by_default() -> None:
    assert CITATIONS in prompt()
    assert HYBRID not in prompt()


def test_the_plan_comes_last() -> None:
    config = AgentConfig(system_prompt="Template.", citation_required=True)
    plan = "1. Search for the refund policy.\n2. Answer with citations."
    text = prompt(config, custom_instructions="Be brief.", plan=plan)
    assert text == "\n\n".join(["Be brief.", "Template.", CITATIONS, f"Follow this plan:\n{plan}"])


@pytest.mark.parametrize("plan", [None, ""])
def test_no_plan_adds_nothing(plan: str | None) -> None:
    config = AgentConfig(system_prompt="Template.", citation_required=False)
    assert prompt(config, plan=plan) == "Template."
