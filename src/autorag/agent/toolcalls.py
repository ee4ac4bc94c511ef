"""Reading a model's decision: a structured tool call, or one written as XML-ish text.

Small local models often write a tool call into their text instead of using the tool
API: ``<tool_call>{"name": "rag_search", "arguments": {...}}</tool_call>``,
``<function=rag_search>{...}</function>``, ``<rag_search>{"query": ...}</rag_search>``
or ``<rag_search><query>…</query></rag_search>``. ``resolve_implicit_tool_call`` turns
such text back into a ``ToolCall`` so the turn is not lost as a strange answer.

Only text the model wrote itself may become a call. Text that came in as data (a
source, a tool result, an attachment, a memory value, a peer's passage, the
conversation) is never an instruction: a "call" that repeats such text is the model
quoting it, and stays part of the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
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


def resolve_implicit_tool_call(
    text: str, skills: Collection[str], data: Iterable[str] = ()
) -> ToolCall | None:
    """The tool call written in ``text``, or None if it is a plain answer.

    A wrapped form (``<tool_call>``, ``<function=…>``) names any skill, known or not, so
    unknown names still reach the circuit breaker. A bare ``<name>`` tag counts only for
    a known skill: answers may contain harmless markup.

    ``data`` are the texts the model was given as material this turn (tool results,
    sources, attachments, memory, earlier messages). When any call written in ``text``
    repeats one found in them (verbatim up to whitespace, or the same name and
    arguments), ``text`` quotes data and is an answer, not a call.
    """
    found = list(_written_calls(text, skills))
    if not found:
        return None
    if _quotes_data(found, skills, data):
        return None
    return found[0][1]


def _written_calls(text: str, skills: Collection[str]) -> Iterator[tuple[str, ToolCall | None]]:
    """Each call-like span of ``text`` in the order the forms are tried, with the call it
    parses to (None for a wrapped form whose JSON does not parse)."""
    for wrapped in _WRAPPED.finditer(text):
        yield wrapped.group(0), _from_json(wrapped.group(2))
    for function in _FUNCTION_EQ.finditer(text):
        yield function.group(0), _call(function.group(1), _arguments(function.group(2)))
    for tag in _NAMED_TAG.finditer(text):
        if tag.group(1) in skills:
            yield tag.group(0), _call(tag.group(1), _arguments(tag.group(2)))


def _quotes_data(
    found: list[tuple[str, ToolCall | None]], skills: Collection[str], data: Iterable[str]
) -> bool:
    texts = [t for t in data if t]
    if not texts:
        return False
    squashed = [_squash(t) for t in texts]
    for span, _ in found:
        piece = _squash(span)
        if any(piece in t for t in squashed):
            return True
    calls = {_signature(c) for _, c in found if c is not None}
    return any(
        _signature(c) in calls for t in texts for _, c in _written_calls(t, skills) if c is not None
    )


def _squash(text: str) -> str:
    """Text without whitespace: a quote may be re-wrapped or re-spaced."""
    return "".join(text.split()).casefold()


def _signature(call: ToolCall) -> str:
    return call.name.casefold() + json.dumps(call.arguments, sort_keys=True, default=str)


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
