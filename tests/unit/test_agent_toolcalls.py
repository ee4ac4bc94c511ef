"""Tool calls a model wrote into its text instead of using the tool API."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autorag.agent.toolcalls import (
    IMPLICIT_CALL_ID,
    may_become_tool_call,
    resolve_implicit_tool_call,
)
from autorag.llm.base import ToolCall

SKILLS = frozenset({"rag_search", "workspace_memory", "document_temp_process"})


def resolve(text: str) -> ToolCall | None:
    return resolve_implicit_tool_call(text, SKILLS)


def implicit(name: str, **arguments: object) -> ToolCall:
    return ToolCall(IMPLICIT_CALL_ID, name, arguments)


# -- <tool_call>{json}</tool_call> and its aliases -----------------------------------------


def test_a_tool_call_tag_with_json_arguments() -> None:
    text = '<tool_call>{"name": "rag_search", "arguments": {"query": "refund policy"}}</tool_call>'
    assert resolve(text) == implicit("rag_search", query="refund policy")


def test_a_tool_call_tag_with_parameters_instead_of_arguments() -> None:
    text = '<tool_call>{"name": "rag_search", "parameters": {"query": "pricing"}}</tool_call>'
    assert resolve(text) == implicit("rag_search", query="pricing")


def test_a_tool_call_tag_with_the_arguments_as_a_json_string() -> None:
    payload = {"name": "rag_search", "arguments": json.dumps({"query": "pricing", "top_k": 3})}
    text = f"<tool_call>{json.dumps(payload)}</tool_call>"
    assert resolve(text) == implicit("rag_search", query="pricing", top_k=3)


def test_a_tool_call_tag_with_the_arguments_as_plain_words_searches_for_them() -> None:
    text = '<tool_call>{"name": "rag_search", "arguments": "refund policy"}</tool_call>'
    assert resolve(text) == implicit("rag_search", query="refund policy")


def test_a_tool_call_tag_without_arguments_calls_with_none() -> None:
    assert resolve('<tool_call>{"name": "rag_search"}</tool_call>') == implicit("rag_search")


def test_arguments_that_are_not_an_object_are_ignored() -> None:
    text = '<tool_call>{"name": "rag_search", "arguments": [1, 2]}</tool_call>'
    assert resolve(text) == implicit("rag_search")


def test_a_tool_call_tag_amid_prose_and_across_lines() -> None:
    text = (
        "Let me look that up.\n<tool_call>\n"
        '{"name": "rag_search",\n "arguments": {"query": "SLA"}}\n'
        "</tool_call>\nOne moment."
    )
    assert resolve(text) == implicit("rag_search", query="SLA")


@pytest.mark.parametrize("tag", ["tool_call", "function_call", "tool", "TOOL_CALL", "Tool_Call"])
def test_the_wrapping_tag_may_be_any_of_its_aliases_in_any_case(tag: str) -> None:
    text = f'<{tag}>{{"name": "rag_search", "arguments": {{"query": "x"}}}}</{tag}>'
    assert resolve(text) == implicit("rag_search", query="x")


def test_the_skill_name_is_trimmed() -> None:
    assert resolve('<tool_call>{"name": " rag_search "}</tool_call>') == implicit("rag_search")


def test_a_wrapped_call_to_an_unknown_skill_is_returned_for_the_circuit_breaker() -> None:
    text = '<tool_call>{"name": "web_browse", "arguments": {"url": "x"}}</tool_call>'
    assert resolve(text) == implicit("web_browse", url="x")


@pytest.mark.parametrize(
    "payload",
    [
        "{not json}",
        '{"name": "rag_search", }',
        '{"arguments": {"query": "x"}}',  # no name
        '{"name": 42}',  # a name that is not a string
    ],
)
def test_a_tool_call_tag_without_a_readable_call_is_not_a_call(payload: str) -> None:
    assert resolve(f"<tool_call>{payload}</tool_call>") is None


# -- <function=name>…</function> ----------------------------------------------------------


def test_a_function_tag_with_json_arguments() -> None:
    text = '<function=rag_search>{"query": "pricing", "top_k": 5}</function>'
    assert resolve(text) == implicit("rag_search", query="pricing", top_k=5)


def test_a_function_tag_with_key_value_tags() -> None:
    text = "<function=rag_search><query> pricing </query><top_k>5</top_k></function>"
    assert resolve(text) == implicit("rag_search", query="pricing", top_k="5")


def test_a_function_tag_with_bare_text_searches_for_it() -> None:
    assert resolve("<function=rag_search>\npricing\n</function>") == implicit(
        "rag_search", query="pricing"
    )


def test_a_function_tag_naming_an_unknown_skill_is_returned_for_the_circuit_breaker() -> None:
    assert resolve('<function=web.browse>{"url": "x"}</function>') == implicit(
        "web.browse", url="x"
    )


def test_a_function_tag_with_broken_json_keeps_the_text_as_the_query() -> None:
    assert resolve("<function=rag_search>{broken</function>") == implicit(
        "rag_search", query="{broken"
    )


# -- <skill>…</skill> ---------------------------------------------------------------------


def test_a_skill_tag_with_json_arguments() -> None:
    assert resolve('<rag_search>{"query": "pricing"}</rag_search>') == implicit(
        "rag_search", query="pricing"
    )


def test_a_skill_tag_with_a_query_tag() -> None:
    assert resolve("<rag_search><query>pricing</query></rag_search>") == implicit(
        "rag_search", query="pricing"
    )


def test_bare_text_in_a_skill_tag_is_the_query() -> None:
    assert resolve("<rag_search>\n  what is the refund policy\n</rag_search>") == implicit(
        "rag_search", query="what is the refund policy"
    )


def test_an_empty_skill_tag_calls_without_arguments() -> None:
    assert resolve("<workspace_memory></workspace_memory>") == implicit("workspace_memory")


def test_harmless_markup_before_a_skill_tag_is_skipped() -> None:
    text = "I will <b>search</b> now: <rag_search>pricing</rag_search>"
    assert resolve(text) == implicit("rag_search", query="pricing")


@pytest.mark.parametrize(
    "text",
    [
        "<b>bold</b>",
        "Use <code>pip install</code> to install it.",
        '<web_browse>{"url": "x"}</web_browse>',  # a bare tag counts only for a known skill
        "<rag_search>an unclosed tag",
        "Plain answer with no markup.",
        "",
    ],
)
def test_text_without_a_call_resolves_to_none(text: str) -> None:
    assert resolve(text) is None


def test_a_bare_skill_tag_counts_only_for_the_skills_on_offer() -> None:
    text = "<rag_search>pricing</rag_search>"
    assert resolve_implicit_tool_call(text, {"workspace_memory"}) is None
    assert resolve_implicit_tool_call(text, {"rag_search"}) == implicit(
        "rag_search", query="pricing"
    )


def test_the_wrapped_form_wins_over_a_bare_skill_tag() -> None:
    text = (
        "<rag_search>first</rag_search>"
        '<tool_call>{"name": "workspace_memory", "arguments": {"query": "second"}}</tool_call>'
    )
    assert resolve(text) == implicit("workspace_memory", query="second")


@given(st.text().map(lambda text: text.replace("<", "")))
def test_plain_prose_without_a_tag_never_resolves_to_a_call(text: str) -> None:
    assert resolve(text) is None
    assert may_become_tool_call(text) is False


@given(st.text(alphabet=st.characters(blacklist_characters="<>{")))
def test_any_text_in_a_skill_tag_is_the_query(query: str) -> None:
    expected = implicit("rag_search", query=query.strip()) if query.strip() else None
    assert resolve(f"<rag_search>{query}</rag_search>") == (expected or implicit("rag_search"))


# -- may_become_tool_call -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Let me check <",
        "Let me check <too",
        "Let me check <tool_ca",
        "<function=rag",
        "<tool_call>",
        '<tool_call>{"name": "rag_search"',
        "<TOOL_CALL>",
        "<function=rag_search>",
        "<rag_search>",
    ],
)
def test_text_that_may_still_become_a_tool_call_is_held(text: str) -> None:
    assert may_become_tool_call(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "A plain sentence.",
        "The refund policy allows returns within 30 days [1].",
        "a > b holds",
        "",
    ],
)
def test_plain_text_is_not_held(text: str) -> None:
    assert may_become_tool_call(text) is False


def test_a_closed_harmless_tag_is_still_held_as_a_possible_skill_tag() -> None:
    # Without the skill list a bare <name> tag cannot be told apart from a skill's:
    # the orchestrator holds the text and resolves it when the turn ends.
    assert may_become_tool_call("Use <b>bold</b> here.") is True


def test_a_less_than_sign_is_held_only_while_it_is_recent() -> None:
    assert may_become_tool_call("if a < b") is True
    assert may_become_tool_call("if a < b then the refund is due within thirty days.") is False
    assert may_become_tool_call("see <ref> and then more") is True  # a complete opening tag
