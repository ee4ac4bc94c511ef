"""The extractive provider's relevance floor: with no evidence it says "not found" once,
quoting nothing, however near in meaning an unrelated sentence is."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from autorag.llm.extractive import NO_ANSWER, compose_answer
from autorag.models import Citation

HANDBOOK = (
    "Every full-time employee receives 25 days of paid annual leave per year. "
    "Leave requests go through the HR portal at least two weeks in advance. "
    "Our Rotterdam office is closed on public holidays."
)


def _source(number: int, text: str) -> Citation:
    return Citation(
        number=number, source=f"/docs/{number}.md", source_id=f"/docs/{number}.md",
        title=f"doc {number}", text=text, page=None, paragraph=0, score=0.03, legs="both",
        chunk_id=number, document_id=number,
    )  # fmt: skip


def _everything_alike(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """A "model" that finds every text near in meaning to every other."""
    return np.ones((len(texts), 4), np.float32) / 2


def test_a_question_the_documents_never_mention_is_not_found() -> None:
    sources = [_source(1, HANDBOOK)]
    assert compose_answer("What's the weather in Paris?", sources) == NO_ANSWER
    near = compose_answer("What's the weather in Paris?", sources, embed=_everything_alike)
    assert near == NO_ANSWER  # near in meaning, but shares no term with the question


def test_evidence_holding_too_few_of_the_questions_terms_is_no_answer() -> None:
    question = "What's the weather like in Rotterdam during the holidays?"
    assert compose_answer(question, [_source(1, HANDBOOK)]) == NO_ANSWER


def test_questions_the_documents_answer_keep_their_answer() -> None:
    sources = [_source(1, HANDBOOK)]
    answer = compose_answer("How many days of annual leave do I get?", sources)
    assert answer.startswith("Every full-time employee receives 25 days") and "[1]" in answer
    answer = compose_answer("Is the Rotterdam office closed on holidays?", sources)
    assert answer == "Our Rotterdam office is closed on public holidays. [1]"
    meant = compose_answer("How do I request leave?", sources, embed=_everything_alike)
    assert "Leave requests go through the HR portal" in meant
    assert "Rotterdam" not in meant  # shares no term with the question
