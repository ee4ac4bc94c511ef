"""The built-in provider that needs no model: it searches, then answers by extraction.

First decision: a ``rag_search`` tool call for the user's question. Second: the best
sentences of the returned sources, each followed by the ``[n]`` of its source.

The only calls it makes are those searches, through the tool API, for the user's own
question; what it quotes (markup that looks like a tool call included) stays text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from autorag.errors import InvalidInput
from autorag.llm.base import (
    DEFAULT_OPTIONS,
    PLAN_INSTRUCTION,
    ChatMessage,
    GenerationOptions,
    LLMDelta,
    ModelInfo,
    ToolCall,
    ToolSpec,
    Usage,
)
from autorag.llm.limits import limited
from autorag.models import Citation
from autorag.text.stemming import stems as _stems

RELATIVE_CUTOFF = 0.5  # of the best sentence's score
MIN_SIMILARITY = 0.35  # cosine below which a sentence is off-topic (MiniLM scale)
LEXICAL_SHARE = 0.15  # how much shared keywords add to semantic similarity
# The relevance floor: the sentences quoted must hold at least this share of the
# question's terms (stemmed keywords of 3+ letters), and each at least one of them; else
# the answer is NO_ANSWER. Tuned on the README's questions over examples/ plus an HR
# handbook: every on-topic question keeps its answer, "What's the weather in Paris?" and
# other questions about what the documents never mention get NO_ANSWER.
TERM_COVERAGE_FLOOR = 0.5
MIN_TERM_CHARS = 3
EMBED_BATCH = 8
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]
# Searched in this order, each once per question, when offered: the workspace, then the
# files attached to the chat.
SEARCH_TOOLS = ("rag_search", "document_temp_process")
NO_ANSWER = "Not found in your documents."
# Sentence ends; also a line break after a line with no closing punctuation (a heading).
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=[-*•]|\d+[.)])|(?<=[^.!?:;,\s])\n(?=[A-Z])"
)
# "how long", "how many": the second word asks for a quantity, it is not a topic.
_HOW_PHRASE = re.compile(r"\bhow\s+(long|many|much|often|far|old|soon)\b", re.IGNORECASE)
_TERMINAL = (".", "!", "?", '."', ".)")
_TOKEN = re.compile(r"\S+\s*")


@dataclass(frozen=True)
class _Sentence:
    text: str
    citation: Citation
    position: int  # order of the sentence inside its source
    words: frozenset[str]


class ExtractiveProvider:
    name = "extractive"
    local = True
    default_model = "extractive"
    # Its answers are quoted sources: text that looks like a tool call is a quote of a
    # document, never a call, so the orchestrator does not look for calls in it.
    writes_tool_calls_as_text = False
    writes_json = False  # it quotes sentences

    def __init__(self, *, max_sentences: int = 4, embed: Embed | None = None) -> None:
        self.max_sentences = max_sentences
        self.embed = embed

    def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        temperature: float | None = None,
        options: GenerationOptions = DEFAULT_OPTIONS,
    ) -> Iterator[LLMDelta]:
        """Extraction has no sampling (``temperature``, ``top_p`` and ``seed`` change
        nothing); ``max_tokens`` (words) and ``stop`` cut the answer here. Usage counts
        words: those of the messages read, and those written."""
        if options.json is not None:
            raise InvalidInput(
                "the built-in extractive model cannot write JSON: choose a model served by "
                "Ollama or an OpenAI-compatible server"
            )
        question, results, used = _turn(messages)
        if messages and messages[0].content.startswith(PLAN_INSTRUCTION):
            text = _plan(question)
        else:
            for tool in SEARCH_TOOLS:
                if tool not in used and any(t.name == tool for t in tools):
                    call = ToolCall(f"call_{tool}", tool, {"query": question})
                    yield LLMDelta(tool_call=call)
                    return
            text = compose_answer(
                question, results, max_sentences=self.max_sentences, embed=self.embed
            )
        words = (LLMDelta(text=token) for token in _TOKEN.findall(text))
        pieces = list(limited(words, max_tokens=options.max_tokens, stop=options.stop))
        yield from (delta for delta in pieces if not delta.finish)
        yield LLMDelta(usage=Usage(_words_read(messages), sum(1 for d in pieces if d.text)))
        yield from (delta for delta in pieces if delta.finish)

    def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id=self.default_model, provider=self.name, local=True)]

    def close(self) -> None:
        """Nothing to release: no server, no connections."""


def _words_read(messages: Sequence[ChatMessage]) -> int:
    """What the provider read, in its own tokens (words): the messages and the sources."""
    texts = [m.content for m in messages] + [c.text for m in messages for c in m.citations]
    return sum(len(_TOKEN.findall(text)) for text in texts)


def _plan(question: str) -> str:
    """The one plan extraction can follow."""
    return (
        f'1. Search the documents for "{" ".join(question.split())}".\n'
        "2. Answer with the sentences that address it, citing each source with its [n]."
    )


def _turn(messages: Sequence[ChatMessage]) -> tuple[str, list[Citation], set[str]]:
    """The last user question, the sources tools returned after it, and those tools."""
    question, results, used = "", list[Citation](), set[str]()
    for message in messages:
        if message.role == "user":
            question, results, used = message.content, [], set()
        elif message.role == "tool":
            results = [*results, *message.citations]
        used |= {call.name for call in message.tool_calls}
    return question, results, used


def compose_answer(
    question: str,
    citations: Sequence[Citation],
    *,
    max_sentences: int = 4,
    embed: Embed | None = None,
) -> str:
    """The sentences that best answer the question, in source order, each cited.

    With ``embed`` (the workspace's embedding model) sentences are ranked by meaning,
    with shared keywords as a tie-breaker; without it, by keywords alone. Either way a
    sentence shares a term with the question, and the answer clears the relevance floor
    (``TERM_COVERAGE_FLOOR``), or the answer is ``NO_ANSWER``: a sentence near in meaning
    but about something else is no answer.
    """
    words = _stems(_HOW_PHRASE.sub(" ", question))
    sentences = _distinct(s for c in citations for s in _sentences(c))
    if not sentences:
        return NO_ANSWER
    weights = _idf(words, sentences)
    lexical = [_score(s, weights) for s in sentences]
    scores = lexical if embed is None else _semantic(question, sentences, lexical, embed)
    best = sorted(
        ((x, s) for x, s, lex in zip(scores, sentences, lexical, strict=True) if x > 0 < lex),
        key=lambda x: -x[0],
    )[:max_sentences]
    if not best:
        return NO_ANSWER
    # Sentences far weaker than the best one dilute the answer more than they add.
    best = [x for x in best if x[0] >= RELATIVE_CUTOFF * best[0][0]]
    if not _clears_floor(words, [s for _, s in best]):
        return NO_ANSWER
    chosen = sorted((s for _, s in best), key=lambda s: (s.citation.number, s.position))
    return " ".join(f"{_clean(s.text)} [{s.citation.number}]" for s in chosen)


def _clears_floor(words: frozenset[str], chosen: Sequence[_Sentence]) -> bool:
    """Whether the chosen sentences hold enough of the question's terms."""
    terms = {word for word in words if len(word) >= MIN_TERM_CHARS}
    if not terms:
        return True
    covered: set[str] = set().union(*(terms & s.words for s in chosen))
    return len(covered) >= TERM_COVERAGE_FLOOR * len(terms)


def _semantic(
    question: str, sentences: Sequence[_Sentence], lexical: Sequence[float], embed: Embed
) -> list[float]:
    vectors = _embed_by_length(embed, [question, *(s.text for s in sentences)])
    similarity = vectors[1:] @ vectors[0]
    top_lexical = max(lexical) or 1.0
    return [
        float(sim) + LEXICAL_SHARE * (lex / top_lexical) if sim >= MIN_SIMILARITY else 0.0
        for sim, lex in zip(similarity, lexical, strict=True)
    ]


def _embed_by_length(embed: Embed, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed in small batches of similar length: sentences vary a lot, and one batch is
    padded to its longest text (``autorag eval chat``: p50 time to first token -15 %,
    p95 -30 %)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    parts = [order[i : i + EMBED_BATCH] for i in range(0, len(order), EMBED_BATCH)]
    embedded = [embed([texts[i] for i in part]) for part in parts]
    vectors = np.empty((len(texts), embedded[0].shape[1]), dtype=np.float32)
    for part, block in zip(parts, embedded, strict=True):
        vectors[part] = block
    return vectors


def _sentences(citation: Citation) -> list[_Sentence]:
    parts = [p.strip() for p in _SENTENCE_END.split(citation.text)]
    if parts and " | " in parts[0]:
        parts = parts[1:]  # a table chunk repeats its header row first: not an answer
    kept: list[_Sentence] = []
    for index, part in enumerate(parts):
        cut_at_start = index == 0 and part[:1].islower()
        cut_at_end = index == len(parts) - 1 and not _complete(part)
        if _is_statement(part) and not cut_at_start and not cut_at_end:
            kept.append(_Sentence(part, citation, index, _stems(part)))
    return kept


def _distinct(sentences: Iterable[_Sentence]) -> list[_Sentence]:
    """Overlapping chunks repeat sentences: keep each once, from its best source."""
    seen: dict[str, _Sentence] = {}
    for sentence in sentences:
        seen.setdefault(_clean(sentence.text), sentence)
    return list(seen.values())


def _complete(text: str) -> bool:
    return text.endswith(_TERMINAL) or " | " in text


def _is_statement(text: str) -> bool:
    """A sentence or a table row, not a heading or a fragment."""
    return len(text) >= 20 and (_complete(text) or len(text) >= 80)


def _idf(words: frozenset[str], sentences: Sequence[_Sentence]) -> dict[str, float]:
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
