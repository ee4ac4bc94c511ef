"""Recursive span splitting and document chunking (seed 003)."""

from __future__ import annotations

import hashlib
import random
import time
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autorag.errors import InvalidInput
from autorag.ingest.chunker import (
    DEFAULT_SEPARATORS,
    chunk_document,
    content_hash,
    split_spans,
)
from autorag.models import ParsedDocument, Segment

TOKENS = st.sampled_from(
    ["word", "longerword", "x" * 13, " ", "  ", "\n", "\n\n", "\n \n", ". ", ".", "\t"]
)
TEXTS = st.lists(TOKENS, max_size=80).map("".join)


@st.composite
def sizes(draw: st.DrawFn) -> tuple[int, int]:
    chunk_size = draw(st.integers(min_value=1, max_value=60))
    return chunk_size, draw(st.integers(min_value=0, max_value=chunk_size - 1))


def texts(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[start:end] for start, end in spans]


@given(text=TEXTS, size=sizes())
def test_spans_are_bounded_stripped_and_overlap_little(text: str, size: tuple[int, int]) -> None:
    chunk_size, overlap = size
    spans = split_spans(text, chunk_size=chunk_size, overlap=overlap)
    for chunk in texts(text, spans):
        assert 0 < len(chunk) <= chunk_size
        assert chunk == chunk.strip()
    for (_, previous_end), (start, end) in pairwise(spans):
        assert start >= previous_end - overlap
        assert end > previous_end


@given(text=TEXTS, size=sizes())
def test_spans_cover_all_non_whitespace(text: str, size: tuple[int, int]) -> None:
    chunk_size, overlap = size
    covered: set[int] = set()
    for start, end in split_spans(text, chunk_size=chunk_size, overlap=overlap):
        covered.update(range(start, end))
    assert {i for i, char in enumerate(text) if not char.isspace()} <= covered


@given(segments=st.lists(TEXTS, min_size=1, max_size=4), size=sizes(), pre_chunked=st.booleans())
def test_chunk_offsets_are_true(
    segments: list[str], size: tuple[int, int], pre_chunked: bool
) -> None:
    doc = ParsedDocument([Segment(text) for text in segments], pre_chunked=pre_chunked)
    chunks = chunk_document(doc, chunk_size=size[0], overlap=size[1])
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert doc.text[chunk.char_start : chunk.char_start + len(chunk.text)] == chunk.text
        assert chunk.content_hash == content_hash(chunk.text)


def test_langchain_merge_and_overlap() -> None:
    text = "one two three four five"
    assert texts(text, split_spans(text, chunk_size=10, overlap=4)) == [
        "one two",
        "two three",
        "four five",
    ]


def test_prefers_paragraph_breaks() -> None:
    first = "First paragraph. It has two sentences and some words."
    second = "Second paragraph\nwith a line break. And more text here."
    text = f"{first}\n\n{second}"
    assert texts(text, split_spans(text, chunk_size=70, overlap=10)) == [first, second]


def test_falls_back_to_lines_then_sentences_then_words() -> None:
    lines = "alpha beta gamma\ndelta epsilon"
    assert texts(lines, split_spans(lines, chunk_size=20, overlap=0)) == [
        "alpha beta gamma",
        "delta epsilon",
    ]
    sentences = "Alpha beta gamma. Delta epsilon."
    assert texts(sentences, split_spans(sentences, chunk_size=20, overlap=0)) == [
        "Alpha beta gamma",
        ". Delta epsilon.",
    ]
    assert texts("abcdefgh", split_spans("abcdefgh", chunk_size=3, overlap=1)) == [
        "abc",
        "cde",
        "efg",
        "gh",
    ]


def test_text_that_fits_is_one_chunk() -> None:
    assert split_spans("  short text \n", chunk_size=100, overlap=10) == [(2, 12)]
    assert split_spans(" \n\n \t", chunk_size=3, overlap=0) == []
    assert split_spans("", chunk_size=3, overlap=0) == []


def test_no_separator_present_still_bounds_chunks() -> None:
    spans = split_spans("abcdefg", chunk_size=3, overlap=0, separators=["\n"])
    assert texts("abcdefg", spans) == ["abc", "def", "g"]


def test_default_separators_follow_the_seed() -> None:
    assert DEFAULT_SEPARATORS == ("\n\n", "\n", ". ", " ", "")


def test_paragraph_and_page_assignment() -> None:
    doc = ParsedDocument(
        [
            Segment("Page one intro.\n\nPage one second paragraph.", page=1),
            Segment("Page two text.", page=2),
            Segment("Unpaged trailer."),
        ]
    )
    chunks = chunk_document(doc, chunk_size=30, overlap=0)
    assert [(c.text, c.paragraph, c.page) for c in chunks] == [
        ("Page one intro.", 0, 1),
        ("Page one second paragraph.", 1, 1),
        ("Page two text.", 2, 2),
        ("Unpaged trailer.", 3, None),
    ]
    assert [c.char_start for c in chunks] == [doc.text.index(c.text) for c in chunks]


def test_blank_line_runs_count_as_one_paragraph_break() -> None:
    doc = ParsedDocument([Segment("a\n\n\n\nb\n"), Segment("c")])
    chunks = chunk_document(doc, chunk_size=1, overlap=0)
    assert [(c.text, c.paragraph) for c in chunks] == [("a", 0), ("b", 1), ("c", 2)]


def test_chunk_metadata() -> None:
    [chunk] = chunk_document(ParsedDocument([Segment("Hello, world.", page=3)]))
    assert chunk.index == 0
    assert chunk.char_start == 0
    assert chunk.page == 3
    assert chunk.content_hash == hashlib.sha256(b"Hello, world.").hexdigest()


def test_pre_chunked_segments_stay_whole() -> None:
    rows = ["name,qty\napple,1", "name,qty\npear,2", "  ", "name,qty\nplum,3\n"]
    doc = ParsedDocument([Segment(row, page=1) for row in rows], pre_chunked=True)
    chunks = chunk_document(doc, chunk_size=100, overlap=20)
    assert [c.text for c in chunks] == [rows[0], rows[1], rows[3].strip()]
    assert [c.char_start for c in chunks] == [0, 18, 39]
    # Unsplit text this short would have been one merged chunk.
    assert len(chunk_document(ParsedDocument(doc.segments), chunk_size=100, overlap=20)) == 1


def test_pre_chunked_long_segment_is_split() -> None:
    long_row = " ".join(f"cell{i}" for i in range(30))
    doc = ParsedDocument([Segment("header"), Segment(long_row, page=2)], pre_chunked=True)
    chunks = chunk_document(doc, chunk_size=50, overlap=10)
    assert chunks[0].text == "header"
    assert len(chunks) > 2
    for chunk in chunks[1:]:
        assert len(chunk.text) <= 50
        assert chunk.page == 2
        assert doc.text[chunk.char_start : chunk.char_start + len(chunk.text)] == chunk.text


@pytest.mark.parametrize(("chunk_size", "overlap"), [(0, 0), (-5, 0), (10, 10), (10, 11), (10, -1)])
def test_bad_arguments_raise(chunk_size: int, overlap: int) -> None:
    with pytest.raises(InvalidInput):
        split_spans("text", chunk_size=chunk_size, overlap=overlap)
    with pytest.raises(InvalidInput):
        chunk_document(ParsedDocument([Segment("text")]), chunk_size=chunk_size, overlap=overlap)


@pytest.mark.bench
def test_eight_megabytes_chunk_quickly() -> None:
    rng = random.Random(0)
    words = ["lorem", "ipsum", "dolor", "sit", "amet.", "consectetur", "adipiscing"]
    paragraphs = [" ".join(rng.choices(words, k=rng.randint(5, 400))) for _ in range(5_000)]
    doc = ParsedDocument([Segment("\n\n".join(paragraphs)), Segment(" ".join(["w"] * 600_000))])
    assert len(doc.text) > 8_000_000
    started = time.perf_counter()
    chunks = chunk_document(doc)
    assert time.perf_counter() - started < 2.0
    assert all(len(chunk.text) <= 1000 for chunk in chunks)


def test_chunks_of_paged_documents_never_straddle_pages() -> None:
    doc = ParsedDocument(
        [Segment("First page text. " * 5, page=1), Segment("Second page text. " * 5, page=2)],
        doc_type="pdf",
    )
    chunks = chunk_document(doc, chunk_size=1000, overlap=200)
    assert [c.page for c in chunks] == [1, 2]
    assert chunks[1].text.startswith("Second page")
    assert doc.text[chunks[1].char_start :].startswith(chunks[1].text)
