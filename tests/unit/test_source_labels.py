"""How `autorag ask` names its sources: two sources never read the same."""

from __future__ import annotations

from autorag.cli.chat import _where
from autorag.models import Citation


def _source(number: int, chunk: int, *, page: int | None, paragraph: int) -> Citation:
    return Citation(
        number, "/kb/policy.pdf", "/kb/policy.pdf", "Policy", "text", page, paragraph,
        0.5, "both", chunk, 7,
    )  # fmt: skip


def test_passages_of_one_page_are_told_apart_by_paragraph_then_part() -> None:
    first = _source(1, 4, page=1, paragraph=0)
    second = _source(2, 5, page=1, paragraph=0)  # the same long paragraph, split
    third = _source(3, 6, page=1, paragraph=2)
    alone = _source(4, 9, page=2, paragraph=0)
    sources = [first, second, third, alone]
    labels = [_where(s, sources) for s in sources]
    assert labels == [", page 1, ¶1 (part 1)", ", page 1, ¶1 (part 2)", ", page 1, ¶3", ", page 2"]
    assert len(set(labels)) == len(labels)
