"""The grounding filter of citations: each rule on its own."""

from __future__ import annotations

from autorag.models import Citation
from autorag.retrieval.grounding import (
    NO_EVIDENCE_DISCLAIMER,
    cited_numbers,
    ground_citations,
    needs_disclaimer,
)

ANSWER = (
    "Customers can ask for a refund within thirty days of delivery, and the money "
    "goes back to the original card."
)
ON_TOPIC = "The refund window is thirty days from delivery."
OFF_TOPIC = "The office cat is called Pixel and sleeps on the printer."


def _cite(
    number: int, text: str = ON_TOPIC, *, doc: int = 1, chunk: int | None = None, score: float = 0.5
) -> Citation:
    return Citation(
        number=number,
        source=f"/docs/{doc}.md",
        source_id=f"/docs/{doc}.md",
        title=f"doc {doc}",
        text=text,
        page=None,
        paragraph=0,
        score=score,
        legs="both",
        chunk_id=number if chunk is None else chunk,
        document_id=doc,
    )


def _numbers(citations: list[Citation]) -> list[int]:
    return [c.number for c in citations]


def test_cited_numbers_reads_single_and_grouped_markers() -> None:
    assert cited_numbers("A [1], b [3][4] and c [2, 7]. Not [x] nor [ 5 ].") == {1, 2, 3, 4, 7}
    assert cited_numbers("no citations") == set()


def test_duplicate_chunks_keep_the_best_score() -> None:
    weak, strong = _cite(1, chunk=9, score=0.1), _cite(2, chunk=9, score=0.9)
    assert _numbers(ground_citations(ANSWER, [weak, strong])) == [2]


def test_a_cited_duplicate_wins_over_a_better_scored_twin() -> None:
    cited, better = _cite(1, chunk=9, score=0.1), _cite(2, chunk=9, score=0.9)
    assert _numbers(ground_citations(ANSWER + " [1]", [cited, better])) == [1]


def test_same_chunk_id_in_different_documents_is_not_a_duplicate() -> None:
    # Chat attachments number chunks in their own table, with negative document ids.
    workspace, attachment = _cite(1, chunk=5, doc=3), _cite(2, chunk=5, doc=-1)
    assert _numbers(ground_citations(ANSWER, [workspace, attachment])) == [1, 2]


def test_at_most_two_per_document_by_score() -> None:
    sources = [_cite(n, doc=1, score=s) for n, s in ((1, 0.2), (2, 0.9), (3, 0.5), (4, 0.7))]
    assert _numbers(ground_citations(ANSWER, sources)) == [2, 4]
    assert _numbers(ground_citations(ANSWER, sources, per_document=3)) == [2, 3, 4]


def test_the_cap_counts_cited_citations_of_the_document_first() -> None:
    sources = [_cite(n, doc=1, score=s) for n, s in ((1, 0.1), (2, 0.9), (3, 0.5))]
    assert _numbers(ground_citations(ANSWER + " [1]", sources)) == [1, 2]


def test_cited_citations_are_kept_past_the_cap_and_without_overlap() -> None:
    sources = [_cite(1, OFF_TOPIC), _cite(2), _cite(3), _cite(4)]
    kept = ground_citations(ANSWER + " [1][2][3]", sources)
    assert _numbers(kept) == [1, 2, 3]  # every [n] resolves, though doc 1 is over its cap


def test_the_cap_is_per_document() -> None:
    sources = [_cite(n, doc=d) for n, d in ((1, 1), (2, 1), (3, 1), (4, 2), (5, 2))]
    assert _numbers(ground_citations(ANSWER, sources)) == [1, 2, 4, 5]


def test_chunks_sharing_no_significant_wording_are_dropped() -> None:
    sources = [_cite(1, ON_TOPIC, doc=1), _cite(2, OFF_TOPIC, doc=2)]
    assert _numbers(ground_citations(ANSWER, sources)) == [1]


def test_one_shared_common_word_is_not_significant() -> None:
    # "card" alone (short, common) does not ground a chunk about something else.
    sources = [_cite(1, "Gift card designs change every season at the shop.")]
    assert ground_citations(ANSWER, sources) == []


def test_one_shared_long_or_numeric_term_is_significant() -> None:
    answer = "The warranty programme was reorganised, effective from 2019 onwards."
    long_term = _cite(1, "Details of the programme appear in the appendix.", doc=1)
    number = _cite(2, "Figures for 2019 are restated.", doc=2)
    unrelated = _cite(3, "The canteen opens at noon.", doc=3)
    assert _numbers(ground_citations(answer, [long_term, number, unrelated])) == [1, 2]


def test_overlap_matches_word_forms() -> None:
    answer = "None of the gift vouchers sold so far has expired, whatever the channel."
    source = _cite(1, "Which voucher expires? None: each stays valid for ever.")
    assert _numbers(ground_citations(answer, [source])) == [1]


def test_overlap_ignores_the_citation_markers() -> None:
    answer = "Nothing relevant is said about the matter in any of the files [1]."
    assert _numbers(ground_citations(answer, [_cite(1, OFF_TOPIC), _cite(2, "1 1 1")])) == [1]


def test_grounded_sources_fill_a_document_before_ungrounded_better_ones() -> None:
    sources = [
        _cite(1, OFF_TOPIC, doc=1, score=0.9),
        _cite(2, OFF_TOPIC, doc=1, score=0.8),
        _cite(3, ON_TOPIC, doc=1, score=0.1),
    ]
    assert _numbers(ground_citations(ANSWER, sources)) == [3]


def test_a_very_short_answer_keeps_every_source_after_deduplication() -> None:
    sources = [_cite(n, OFF_TOPIC, doc=1) for n in (1, 2, 3)] + [_cite(4, chunk=1)]
    assert _numbers(ground_citations("Thirty days [2].", sources)) == [1, 2, 3]


def test_citations_without_text_are_always_kept_and_take_no_place() -> None:
    sources = [_cite(1, "", doc=1), _cite(2, "   ", doc=1), _cite(3, doc=1), _cite(4, doc=1)]
    assert _numbers(ground_citations(ANSWER, sources)) == [1, 2, 3, 4]


def test_order_follows_the_input() -> None:
    sources = [_cite(5, doc=2, score=0.1), _cite(1, doc=1, score=0.9), _cite(3, doc=3)]
    assert _numbers(ground_citations(ANSWER, sources)) == [5, 1, 3]


def test_disclaimer_when_a_substantive_answer_has_no_grounded_source() -> None:
    assert needs_disclaimer(ANSWER, [])
    grounded = ground_citations(ANSWER, [_cite(1, OFF_TOPIC)])
    assert grounded == [] and needs_disclaimer(ANSWER, grounded)


def test_no_disclaimer_with_evidence_for_short_answers_or_when_already_given() -> None:
    assert not needs_disclaimer(ANSWER, [_cite(1)])
    assert not needs_disclaimer("Thirty days.", [])
    assert not needs_disclaimer(f"{ANSWER}\n\n{NO_EVIDENCE_DISCLAIMER}", [])
