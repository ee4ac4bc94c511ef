"""Grounded citations (seed 003): keep the sources an answer actually rests on (pure).

Runs after the answer is complete. The answer was already streamed, so whatever it cites
by ``[n]`` stays: every ``[n]`` a client sees must resolve to a citation it receives. Of
the uncited sources, each document keeps its best ``per_document``, and a source whose
text shares no significant wording with the answer is dropped.

"Significant" is deliberately lenient, because a wrongly dropped source costs more than
a superfluous one: a source stays when it shares with the answer at least
``MIN_SHARED_TERMS`` distinct content terms (stemmed keywords of 3+ characters, or with a
digit), or a single distinctive one (``LONG_TERM_CHARS``+ characters, or a digit-bearing
term of 3+ characters such as a year, an amount or a product code).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from autorag.models import Citation
from autorag.text.stemming import stems

NO_EVIDENCE_DISCLAIMER = (
    "No supporting evidence was found in the workspace's documents for this answer."
)
# The ``source`` of a citation that is a page of one of the workspace's archives.
ARCHIVE_SOURCE = "archive"
MIN_ANSWER_WORDS = 8  # shorter answers ("Yes.", "Thirty days [1].") keep every source
MIN_SHARED_TERMS = 2
LONG_TERM_CHARS = 8
MIN_TERM_CHARS = 3  # shorter words ("us", "go") match by accident
# "[3]" and also "[1, 3]", which models write too; up to 6 digits keeps int() cheap.
# An answer's citation markers: "[3]", "[1, 3]"; up to 6 digits each.
CITATION_MARKER = re.compile(r"\[(\d{1,6}(?:\s*,\s*\d{1,6})*)\]")
_WORD = re.compile(r"\w+")


def cited_numbers(answer: str) -> set[int]:
    """The ``n`` of every ``[n]`` (or ``[n, m]``) in the answer."""
    return {int(n) for group in CITATION_MARKER.findall(answer) for n in group.split(",")}


def ground_citations(
    answer: str, citations: Sequence[Citation], *, per_document: int = 2
) -> list[Citation]:
    """The deduplicated citations the answer rests on, in their original order."""
    cited = cited_numbers(answer)
    unique = _dedupe(citations, cited)
    if _is_short(answer):
        return unique
    pinned = [_pinned(c, cited) for c in unique]
    terms = _content_terms(answer)
    grounded = [p or _overlaps(c.text, terms) for c, p in zip(unique, pinned, strict=True)]
    capped = _cap_per_document(unique, pinned, grounded, per_document)
    return [c for c, keep in zip(unique, capped, strict=True) if keep]


def needs_disclaimer(answer: str, grounded: Sequence[Citation]) -> bool:
    """True when a substantive answer is left with no supporting source."""
    substantive = not _is_short(answer) and NO_EVIDENCE_DISCLAIMER not in answer
    return substantive and not grounded


def passage_key(citation: Citation) -> tuple[int, int]:
    """Citations of the same passage (chunk) share a key; others are their own.

    The chunk's key is (document id, chunk id): chat attachments number their chunks in
    a table of their own and use negative document ids, so the pair never collides.
    """
    if citation.chunk_id > 0:
        return (citation.document_id, citation.chunk_id)
    return (0, -citation.number)


def _dedupe(citations: Sequence[Citation], cited: set[int]) -> list[Citation]:
    """One citation per chunk: the cited ones (all of them), else the best-scored one.

    Citations without a chunk (id <= 0: memory, web) are not deduplicated.
    """
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, citation in enumerate(citations):
        if citation.chunk_id > 0:
            groups[passage_key(citation)].append(index)
    dropped: set[int] = set()
    for members in groups.values():
        keep = [i for i in members if citations[i].number in cited]
        if not keep:
            keep = [max(members, key=lambda i: citations[i].score)]
        dropped.update(set(members) - set(keep))
    return [c for i, c in enumerate(citations) if i not in dropped]


def is_archive_page(citation: Citation) -> bool:
    """Whether ``citation`` is a page of one of the workspace's archives."""
    return citation.source == ARCHIVE_SOURCE


def _pinned(citation: Citation, cited: set[int]) -> bool:
    """Kept whatever the filters say: cited, an archive page, or with no chunk text to
    judge."""
    return citation.number in cited or is_archive_page(citation) or not citation.text.strip()


def _cap_per_document(
    citations: Sequence[Citation],
    pinned: Sequence[bool],
    grounded: Sequence[bool],
    per_document: int,
) -> list[bool]:
    """Pinned ones always; grounded ones while their document has room, best score first.

    A document's cited citations take its places first; citations without chunk text
    are not evidence from the document, so they take none.
    """
    used: dict[int, int] = defaultdict(int)
    for citation, pin in zip(citations, pinned, strict=True):
        if pin and citation.text.strip():
            used[citation.document_id] += 1
    keep = list(pinned)
    candidates = [i for i, c in enumerate(citations) if grounded[i] and not pinned[i]]
    for index in sorted(candidates, key=lambda i: -citations[i].score):
        document_id = citations[index].document_id
        if used[document_id] < per_document:
            used[document_id] += 1
            keep[index] = True
    return keep


def _overlaps(text: str, answer_terms: frozenset[str]) -> bool:
    shared = _content_terms(text) & answer_terms
    return len(shared) >= MIN_SHARED_TERMS or any(_distinctive(t) for t in shared)


def _content_terms(text: str) -> frozenset[str]:
    return frozenset(_content(stems(CITATION_MARKER.sub(" ", text))))


def _content(terms: Iterable[str]) -> Iterable[str]:
    return (t for t in terms if len(t) >= MIN_TERM_CHARS or _has_digit(t))


def _distinctive(term: str) -> bool:
    return len(term) >= LONG_TERM_CHARS or (_has_digit(term) and len(term) >= MIN_TERM_CHARS)


def _has_digit(term: str) -> bool:
    return any(ch.isdigit() for ch in term)


def _is_short(answer: str) -> bool:
    return len(_WORD.findall(CITATION_MARKER.sub(" ", answer))) < MIN_ANSWER_WORDS
