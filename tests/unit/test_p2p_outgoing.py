"""What a question to a peer may carry: no quote of a passage that may not leave."""

from __future__ import annotations

import pytest

from autorag.p2p.outgoing import quotes

PRIVATE = "Heronsbrook budget line HB-44821 covers the quiet acquisition of Tarn Mill."


@pytest.mark.parametrize(
    "question",
    [
        "What does the quiet acquisition of Tarn Mill cost?",  # five words in a row
        "who approved hb-44821?",  # an identifying token, any case
        f"Please explain: {PRIVATE}",
    ],
)
def test_a_question_that_quotes_the_passage_is_caught(question: str) -> None:
    assert quotes(question, PRIVATE)


@pytest.mark.parametrize(
    "question",
    [
        "What is the refund window for lighthouse kits?",
        "Which budget line covers acquisitions in 2024?",  # a year is not an identifier
        "budget line covers the acquisition",  # four shared words, not five in a row
    ],
)
def test_an_ordinary_question_is_not(question: str) -> None:
    assert not quotes(question, PRIVATE)
