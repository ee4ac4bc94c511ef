"""Credibility (word-likeness) and how page scores combine; the vision text clean-up."""

from __future__ import annotations

import pytest

from autorag.ocr.quality import Scored, combine, credibility
from autorag.ocr.vision import PROMPT, strip_grounding, vision_prompt


@pytest.mark.parametrize(
    "text",
    [
        "Refunds are accepted within 30 days of purchase, with the receipt.",
        "I'm sure it's fine: Mr Smith paid 1,250.00 on 12/03/2024 at 10:30.",
        "WARRANTY TERMS — Section 4.2 (see page 7).",
        "Über die Rückgabe entscheidet der Händler innerhalb von 14 Tagen.",
        "文字认识 测试",
    ],
)
def test_real_text_is_credible(text: str) -> None:
    assert credibility(text) >= 0.9


@pytest.mark.parametrize(
    "text",
    [
        "||| ~~ ,. ;: ii ll Il1 rn ~ |",  # specks and rules read as text
        "xkcd qwrt zzpf bnmv hjkl",  # consonant soup
        "tHe qUIck bRoWn",  # case no writer uses
        "aaaa bbbbbb cccc",  # runs
    ],
)
def test_noise_is_not(text: str) -> None:
    assert credibility(text) < 0.4


def test_an_upside_down_read_lands_in_between() -> None:
    # What Tesseract makes of a page turned 180 degrees.
    garbled = "‘a}ep Jo Jooud pue Jaquunu |elias By} apnjou! Jsnw swlel>d A"
    assert 0.3 < credibility(garbled) < 0.7


def test_empty_text_has_no_credibility() -> None:
    assert credibility("") == 0.0
    assert credibility("   \n ") == 0.0


def test_pages_combine_weighted_by_characters() -> None:
    quality, believed = combine([Scored(1.0, 1.0, 900), Scored(0.0, 0.0, 100), Scored(0.2, 0.2, 0)])
    assert quality == pytest.approx(0.9)
    assert believed == pytest.approx(0.9)


def test_no_text_has_no_scores() -> None:
    assert combine([Scored(0.9, 0.9, 0)]) == (None, None)
    assert combine([]) == (None, None)


def test_grounding_tags_are_stripped_with_what_they_hold() -> None:
    raw = (
        "<|ref|>title<|/ref|><|det|>[[12, 30, 480, 60]]<|/det|>\nINVOICE 42\n\n\n\n"
        "<|ref|>text<|/ref|><|det|>[[12, 80, 900, 120]]<|/det|>\nTotal due: 130 EUR  \n"
        "<|grounding|><|end_of_sentence|>"
    )
    assert strip_grounding(raw) == "INVOICE 42\n\nTotal due: 130 EUR"


def test_plain_text_survives_stripping() -> None:
    text = "A line with <angle> brackets and | pipes |.\nSecond line."
    assert strip_grounding(text) == text


def test_custom_instructions_follow_the_prompt() -> None:
    assert vision_prompt("") == PROMPT
    prompt = vision_prompt("  Keep table columns separated by ' | '.  ")
    assert prompt.startswith(PROMPT)
    assert prompt.endswith("Keep table columns separated by ' | '.")
