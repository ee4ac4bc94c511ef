"""Reading a document's text from its chunks (ingest/reading.py): offsets kept across the
overlap and the stripped blanks, a passage's offsets through DLP's redactions, the
heading a Markdown passage sits under."""

from __future__ import annotations

from autorag.dlp.scanner import REDACTED, Match, redact
from autorag.ingest.reading import Highlight, _opening_heading, _rebuild, _sections, _shifted
from autorag.ingest.reading_store import Passage

TEXT = "# Title\n\nFirst paragraph here.\n\nSecond one, longer than the first."


def _chunks(spans: list[tuple[int, int]]) -> list[Passage]:
    return [Passage(i + 1, i, s, None, TEXT[s:e]) for i, (s, e) in enumerate(spans)]


def test_the_text_comes_back_with_every_offset_where_the_index_has_it() -> None:
    # Overlapping chunks, and a stripped paragraph break between the last two.
    chunks = _chunks([(0, 30), (9, 30), (32, len(TEXT))])
    rebuilt = _rebuild(chunks)
    assert len(rebuilt) == len(TEXT)
    for chunk in chunks:
        assert rebuilt[chunk.start : chunk.end] == chunk.text
    assert rebuilt[30:32] == "\n\n"


def test_a_long_text_is_cut_into_sections_where_chunks_start() -> None:
    chunks = [Passage(i, i, i * 9000, None, "x" * 9000) for i in range(6)]
    sections = _sections(chunks, 54_000)
    assert [(s.number, s.start, s.end) for s in sections] == [
        (1, 0, 27_000),
        (2, 27_000, 54_000),
    ]


def test_a_passage_keeps_its_words_when_dlp_redacts_around_and_inside_it() -> None:
    text = "mail a@b.io then the passage with c@d.io inside, and e@f.io after"
    spans = [(5, 11), (34, 40), (53, 59)]
    matches = [Match("email", s, e) for s, e in spans]
    redacted = redact(text, matches)
    start = text.index("the passage")
    end = text.index(", and")
    moved = _shifted(Highlight(7, start, end), matches)
    assert moved is not None
    assert redacted[moved.start : moved.end] == f"the passage with {REDACTED} inside"
    # A bound inside a secret moves to the edge of its [REDACTED].
    inside = _shifted(Highlight(7, 7, end), matches)
    assert inside is not None and redacted[inside.start : inside.end].startswith(REDACTED)


def test_the_section_is_the_last_heading_a_passage_opens_with() -> None:
    assert _opening_heading("# Handbook\n\n### 5.2 Carry-over\n\nUnused days…") == "5.2 Carry-over"
    assert _opening_heading("## **Bold** heading ##\ntext") == "Bold heading"
    assert _opening_heading("Plain text\n## Later heading") is None
