"""``max_tokens`` and ``stop`` applied to a delta stream (llm/limits.py), and the
extractive provider honouring them itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autorag.errors import InvalidInput
from autorag.llm.base import ChatMessage, GenerationOptions, JsonFormat, LLMDelta, ToolCall
from autorag.llm.extractive import ExtractiveProvider
from autorag.llm.limits import limited
from autorag.models import Citation


def _texts(*pieces: str) -> list[LLMDelta]:
    return [LLMDelta(text=p) for p in pieces]


def _text(deltas: list[LLMDelta]) -> str:
    return "".join(d.text for d in deltas)


def test_max_tokens_counts_text_deltas_and_says_length() -> None:
    out = list(limited(_texts("a ", "b ", "c ", "d "), max_tokens=2))
    assert _text(out) == "a b " and out[-1].finish == "length"
    whole = list(limited(_texts("a ", "b "), max_tokens=2))
    assert _text(whole) == "a b " and whole[-1].finish == "length"
    assert [d.finish for d in limited(_texts("a "), max_tokens=5)] == [None]


def test_a_stop_sequence_split_across_deltas_ends_the_text_before_it() -> None:
    out = list(limited(_texts("The win", "dow is th", "irty days"), stop=["is thirty"]))
    assert _text(out) == "The window " and out[-1].finish == "stop"
    # A held prefix that does not become the sequence is sent after all.
    out = list(limited(_texts("is t", "en days"), stop=["is thirty"]))
    assert _text(out) == "is ten days" and all(d.finish is None for d in out)
    first = list(limited(_texts("x END y"), stop=["y", "END"]))
    assert _text(first) == "x " and first[-1].finish == "stop"


def test_tool_calls_and_usage_pass_as_they_come() -> None:
    call = LLMDelta(tool_call=ToolCall("c1", "rag_search", {"query": "q"}))
    out = list(limited([LLMDelta(text="hi"), call], max_tokens=5, stop=["zz"]))
    assert out == [LLMDelta(text="hi"), call]


def test_stopping_early_closes_the_stream_under_it() -> None:
    closed = []

    def stream() -> Iterator[LLMDelta]:
        try:
            yield from _texts("a ", "b ", "c ")
        finally:
            closed.append(True)

    assert _text(list(limited(stream(), max_tokens=1))) == "a "
    assert closed == [True]


def _answering(question: str) -> list[ChatMessage]:
    source = Citation(
        number=1, source="/docs/r.md", source_id="/docs/r.md", title="r",
        text="The refund window is thirty days from delivery.", page=None, paragraph=0,
        score=0.03, legs="both", chunk_id=1, document_id=1,
    )  # fmt: skip
    return [
        ChatMessage("user", question),
        ChatMessage("assistant", tool_calls=(ToolCall("c", "rag_search", {}),)),
        ChatMessage("tool", "…", tool_call_id="c", citations=(source,)),
    ]


def test_extractive_honours_max_tokens_and_stop_and_counts_its_words() -> None:
    provider = ExtractiveProvider()
    messages = _answering("How long is the refund window?")
    cut = list(provider.stream_chat(messages, options=GenerationOptions(max_tokens=3)))
    assert _text(cut) == "The refund window " and cut[-1].finish == "length"
    usage = next(d.usage for d in cut if d.usage)
    assert usage.completion_tokens == 3 and usage.prompt_tokens > 0
    stopped = list(provider.stream_chat(messages, options=GenerationOptions(stop=("thirty",))))
    assert _text(stopped) == "The refund window is " and stopped[-1].finish == "stop"


def test_extractive_refuses_json_output() -> None:
    with pytest.raises(InvalidInput, match="cannot write JSON"):
        list(ExtractiveProvider().stream_chat([], options=GenerationOptions(json=JsonFormat())))
