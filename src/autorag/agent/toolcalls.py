"""Reading a model's decision: a structured tool call, or one written as XML-ish text.

Small local models often write a tool call into their text instead of using the tool
API: ``<tool_call>{"name": "rag_search", "arguments": {...}}</tool_call>``,
``<function=rag_search>{...}</function>``, ``<rag_search>{"query": ...}</rag_search>``
or ``<rag_search><query>…</query></rag_search>``. ``resolve_implicit_tool_call`` turns
such text back into a ``ToolCall`` so the turn is not lost as a strange answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from autorag.llm.base import ToolCall

_WRAPPED = re.compile(
    r"<(tool_call|function_call|tool)>\s*(\{.*?\})\s*</\1>", re.DOTALL | re.IGNORECASE
)
_FUNCTION_EQ = re.compile(r"<function=([\w.-]+)>\s*(.*?)\s*</function>", re.DOTALL)
_NAMED_TAG = re.compile(r"<([a-z_][\w-]*)>\s*(.*?)\s*</\1>", re.DOTALL)
_INNER_TAG = re.compile(r"<([a-z_]\w*)>(.*?)</\1>", re.DOTALL)
# Text that may still turn into one of the forms above as more tokens arrive.
_OPENING = re.compile(r"<(tool_call|function_call|tool|function=|[a-z_][\w-]*>)", re.IGNORECASE)
_LONGEST_OPENING = 40
IMPLICIT_CALL_ID = "implicit_call"


def resolve_implicit_tool_call(text: str, skills: Collection[str]) -> ToolCall | None:
    """The tool call written in ``text``, or None if it is a plain answer.

    A wrapped form (``<tool_call>``, ``<function=…>``) names any skill, known or not, so
    unknown names still reach the circuit breaker. A bare ``<name>`` tag counts only for
    a known skill: answers may contain harmless markup.
    """
    wrapped = _WRAPPED.search(text)
    if wrapped:
        return _from_json(wrapped.group(2))
    function = _FUNCTION_EQ.search(text)
    if function:
        return _call(function.group(1), _arguments(function.group(2)))
    for tag in _NAMED_TAG.finditer(text):
        if tag.group(1) in skills:
            return _call(tag.group(1), _arguments(tag.group(2)))
    return None


def may_become_tool_call(text: str) -> bool:
    """Whether streamed text could still be the start of an implicit tool call: it holds
    a tag-like opening, or ends inside a ``<`` not yet closed."""
    tail = text[-_LONGEST_OPENING:]
    return _OPENING.search(text) is not None or ("<" in tail and ">" not in tail.rsplit("<")[-1])


def _from_json(raw: str) -> ToolCall | None:
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return None
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = _arguments(arguments)
    return _call(payload["name"], arguments if isinstance(arguments, dict) else {})


def _arguments(raw: str) -> dict[str, Any]:
    """JSON arguments, or ``<key>value</key>`` pairs, or a bare string as the query."""
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    pairs = {m.group(1): m.group(2).strip() for m in _INNER_TAG.finditer(raw)}
    if pairs:
        return pairs
    return {"query": raw} if raw else {}


def _call(name: str, arguments: Mapping[str, Any]) -> ToolCall:
    return ToolCall(IMPLICIT_CALL_ID, name.strip(), dict(arguments))
