"""Answering a question: the LLM decides, ``rag_search`` finds, the LLM answers with [n]."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from autorag.llm.base import ChatMessage, LLMDelta, LLMProvider, ToolCall, ToolSpec
from autorag.models import Citation, Diagnostic, SearchFilters, SearchHit
from autorag.retrieval.hybrid import HybridSearcher, SearchRequest

SYSTEM_PROMPT = (
    "You answer questions using only the sources that the rag_search tool returns. "
    "Cite every claim with the [n] of its source. If the sources do not answer the "
    "question, say so."
)
RAG_SEARCH = ToolSpec(
    name="rag_search",
    description="Search the workspace's documents (hybrid: semantic + keyword).",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    },
)
MAX_ITERATIONS = 4
_CITE = re.compile(r"\[(\d+)\]")


@dataclass
class Answer:
    text: str
    citations: list[Citation]  # the sources the answer cites, by their [n]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def citation_from_hit(number: int, hit: SearchHit) -> Citation:
    return Citation(
        number=number,
        source=hit.source,
        source_id=hit.source_id,
        title=hit.title,
        text=hit.text,
        page=hit.page,
        paragraph=hit.paragraph,
        score=hit.score,
        legs=hit.legs,
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
    )


def format_tool_result(citations: list[Citation]) -> str:
    """Sources as the seed formats them for a model: ``[Source: name (match: …)]``."""
    match = {"both": "semantic+keyword", "vector": "vector", "fts": "fts"}
    return "\n\n".join(
        f"[{c.number}] [Source: {c.title or c.source} (match: {match[c.legs]}, "
        f"score: {c.score:.4f})]\n{c.text}"
        for c in citations
    )


def answer_question(
    searcher: HybridSearcher,
    provider: LLMProvider,
    question: str,
    *,
    k: int = 5,
    filters: SearchFilters = SearchFilters(),
    on_token: Callable[[str], None] | None = None,
) -> Answer:
    messages = [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", question)]
    sent: list[Citation] = []
    diagnostics: list[Diagnostic] = []
    for _ in range(MAX_ITERATIONS):
        call, tokens = _decide(provider.stream_chat(messages, tools=[RAG_SEARCH]))
        if call is None:
            text = "".join(tokens)
            if on_token:
                for token in tokens:
                    on_token(token)
            return Answer(text, _cited(text, sent), diagnostics)
        query = str(call.arguments.get("query") or question)
        response = searcher.search(SearchRequest(query, k=k, filters=filters))
        diagnostics.extend(response.diagnostics)
        new = [citation_from_hit(len(sent) + i + 1, h) for i, h in enumerate(response.hits)]
        sent.extend(new)
        messages += [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage(
                "tool", format_tool_result(new), tool_call_id=call.id, citations=tuple(new)
            ),
        ]
    return Answer("The question could not be answered within the step limit.", [], diagnostics)


def _decide(stream: Iterator[LLMDelta]) -> tuple[ToolCall | None, list[str]]:
    """Buffer one decision: a tool call wins over any text streamed before it."""
    tokens: list[str] = []
    for delta in stream:
        if delta.tool_call is not None:
            return delta.tool_call, []
        tokens.append(delta.text)
    return None, tokens


def _cited(text: str, sent: list[Citation]) -> list[Citation]:
    numbers = {int(n) for n in _CITE.findall(text)}
    return [c for c in sent if c.number in numbers]
