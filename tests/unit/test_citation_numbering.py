"""Citations numbered as a reader sees them: 1..n in order of first use in the answer,
the markers rewritten to match, streamed or whole (agent/citations.py)."""

from __future__ import annotations

from autorag.agent.citations import Renumbering, renumber
from autorag.agent.events import AgentEvent, TokenEvent
from autorag.models import Citation


def _source(number: int, chunk: int | None = None, document: int = 1) -> Citation:
    chunk_id = number * 10 if chunk is None else chunk
    return Citation(
        number, f"/docs/d{document}.md", f"/docs/d{document}.md", f"Doc {document}",
        f"text of source {number}", None, 0, 1.0 / number, "both", chunk_id, document,
    )  # fmt: skip


SIX = [_source(n) for n in range(1, 7)]


def test_numbers_follow_first_use_and_uncited_come_after() -> None:
    text, cited = renumber("Leave is 30 days [3]. Carry-over ends in March [6]. Again [3].", SIX)
    assert text == "Leave is 30 days [1]. Carry-over ends in March [2]. Again [1]."
    assert [(c.number, c.chunk_id, c.cited) for c in cited] == [
        (1, 30, True),
        (2, 60, True),
        (3, 10, False),
        (4, 20, False),
        (5, 40, False),
        (6, 50, False),
    ]


def test_a_group_is_renumbered_and_the_same_passage_twice_is_one_source() -> None:
    sources = [*SIX, _source(7, chunk=30)]  # [7]: the chunk of [3], found by a second search
    text, cited = renumber("Both say so [5, 2]. The second search agrees [7]; see [3].", sources)
    assert text == "Both say so [1, 2]. The second search agrees [3]; see [3]."
    numbered = [c for c in cited if c.cited]
    assert [(c.number, c.chunk_id) for c in numbered] == [(1, 50), (2, 20), (3, 30)]
    assert len({c.number for c in cited}) == len(cited) == 6  # one entry per passage


def test_markers_that_name_no_source_are_left_alone() -> None:
    text, cited = renumber("See [4], not [0] nor [99] nor array[x].", SIX)
    assert text == "See [1], not [0] nor [99] nor array[x]."
    assert [c.number for c in cited if c.cited] == [1]


def test_an_answer_citing_nothing_lists_everything_as_more_sources() -> None:
    text, cited = renumber("No sources cited here.", SIX[:2])
    assert text == "No sources cited here."
    assert [(c.number, c.cited) for c in cited] == [(1, False), (2, False)]


def test_streamed_tokens_split_inside_markers_match_the_whole_rewrite() -> None:
    answer = "First [4]. Then [1, 6] and [4]. Odd [ bracket and [2"
    tokens = ["First [", "4]. Then [1", ", ", "6", "] and [4]", ". Odd [ bra", "cket and [2"]
    sent: list[AgentEvent] = []
    numbering = Renumbering(lambda: SIX)
    emit = numbering.wrap(sent.append)
    for token in tokens:
        emit(TokenEvent(token))
    streamed = "".join(e.text for e in sent if isinstance(e, TokenEvent)) + numbering.flush()
    assert streamed == "First [1]. Then [2, 3] and [1]. Odd [ bracket and [2"
    assert numbering.rewrite(answer) == streamed  # the stored text is the streamed text


def test_sources_found_while_streaming_are_known_when_cited() -> None:
    found: list[Citation] = []
    numbering = Renumbering(lambda: found)
    assert numbering.feed("early [1]") == "early [1]"  # nothing known yet: as written
    found.extend(SIX)
    assert numbering.feed(" later [5]") == " later [1]"
