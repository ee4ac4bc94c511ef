"""The built-in provider that needs no model: it searches, then answers by extraction.

First decision: a ``rag_search`` tool call for the user's question. Second: the best
sentences of the returned sources, each followed by the ``[n]`` of its source.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from autorag.llm.base import ChatMessage, LLMDelta, ToolCall, ToolSpec
from autorag.models import Citation
from autorag.store.fulltext.query import keywords

RELATIVE_CUTOFF = 0.5
NO_ANSWER = "I could not find an answer to this in the indexed documents."
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=[-*•]|\d+[.)])")
_TOKEN = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class _Sentence:
    text: str
    citation: Citation
    position: int  # order of the sentence inside its source
    words: frozenset[str]


class ExtractiveProvider:
    name = "extractive"
    model_id = "extractive"

    def __init__(self, *, max_sentences: int = 4) -> None:
        self.max_sentences = max_sentences

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
    ) -> Iterator[LLMDelta]:
        question, results = _turn(messages)
        if results is None and any(t.name == "rag_search" for t in tools):
            yield LLMDelta(tool_call=ToolCall("call_rag_search", "rag_search", {"query": question}))
            return
        answer = compose_answer(question, results or (), max_sentences=self.max_sentences)
        for token in _TOKEN.findall(answer):
            yield LLMDelta(text=token)


def _turn(messages: Sequence[ChatMessage]) -> tuple[str, list[Citation] | None]:
    """The last user question and the sources tools returned after it (None: no tool ran)."""
    question, results = "", None
    for message in messages:
        if message.role == "user":
            question, results = message.content, None
        elif message.role == "tool":
            results = [*(results or []), *message.citations]
    return question, results


def compose_answer(question: str, citations: Sequence[Citation], *, max_sentences: int = 4) -> str:
    """The sentences that best cover the question's words, in source order, cited."""
    words = set(keywords(question))
    sentences = [s for c in citations for s in _sentences(c)]
    weights = _idf(words, sentences)
    scored = [(_score(s, weights), s) for s in sentences]
    best = sorted((x for x in scored if x[0] > 0), key=lambda x: -x[0])[:max_sentences]
    if not best:
        return NO_ANSWER
    # Sentences far weaker than the best one dilute the answer more than they add.
    best = [x for x in best if x[0] >= RELATIVE_CUTOFF * best[0][0]]
    chosen = sorted((s for _, s in best), key=lambda s: (s.citation.number, s.position))
    return " ".join(f"{_clean(s.text)} [{s.citation.number}]" for s in chosen)


def _sentences(citation: Citation) -> list[_Sentence]:
    parts = [p.strip() for p in _SENTENCE_END.split(citation.text)]
    return [
        _Sentence(p, citation, i, frozenset(keywords(p)))
        for i, p in enumerate(parts)
        if len(p) >= 20
    ]


def _idf(words: set[str], sentences: Sequence[_Sentence]) -> dict[str, float]:
    """Rare question words count more: they say what the question is really about."""
    total = len(sentences)
    weights: dict[str, float] = {}
    for word in words:
        containing = sum(1 for s in sentences if word in s.words)
        if containing:
            weights[word] = math.log(1 + total / containing)
    return weights


def _score(sentence: _Sentence, weights: dict[str, float]) -> float:
    overlap = sum(w for word, w in weights.items() if word in sentence.words)
    if overlap == 0:
        return 0.0
    # Better-ranked sources and earlier sentences break near-ties.
    return overlap + 0.5 / sentence.citation.number - 0.01 * sentence.position


def _clean(text: str) -> str:
    return " ".join(text.split())
