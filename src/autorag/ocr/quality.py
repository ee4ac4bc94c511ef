"""How far to trust OCR text: the engine's confidence (quality) and a credibility score.

Credibility is the share of the text, by characters, in tokens that look like words.
It needs no dictionary, so it works offline and for any language in Latin script, and it
catches what confidence misses (a vision model reports none; an upside-down page can
read as confident gibberish). A token, stripped of surrounding punctuation, looks like a
word when it is

- a number (digits with ``.,:/-%`` between them: amounts, dates, times), or
- letters (apostrophes and hyphens inside allowed) that are not a run of one letter 3+
  times, whose case is lower, Title or UPPER (not ``tHe``), at most 24 long, and that
  hold a vowel when written in Latin letters (``y`` counts; ``Mr``, ``St``-style
  abbreviations and lone letters are allowed only among a short list), or
- in another script (CJK, Arabic…), where letter shapes say nothing: counted credible.

Tokens of punctuation and symbols alone (``|||``, ``~~``, ``»``) count against the text:
they are what misread specks and rules become. Clean prose scores above 0.9, an
upside-down page read as text about 0.5, noise close to 0.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'“”‘’«»()[]{}<>.,;:!?¿¡*"
_NUMBER = re.compile(r"[+-]?\d+(?:[.,:/\-]\d+)*%?")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_JOINERS = re.compile(r"['’-]")
_RUN = re.compile(r"(.)\1\1", re.IGNORECASE)
_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿœ")
_MAX_WORD = 24
# Words without a vowel, and lone letters, that are real in English prose.
_SHORT_WORDS = frozenset(
    {"a", "i", "o", "s", "t", "mr", "mrs", "ms", "dr", "st", "nd", "rd", "th", "vs", "pp",
     "cm", "mm", "km", "kg", "mg", "ml", "hr", "hrs", "pm", "tv", "nt", "ll", "ve", "re"}
)  # fmt: skip


def credibility(text: str) -> float:
    """0..1: the share of ``text``'s token characters in word-like tokens (see above)."""
    total = credible = 0
    for raw in _TOKEN.findall(text):
        token = raw.strip(_EDGE_PUNCT)
        weight = len(token) or len(raw)
        total += weight
        if token and _looks_like_word(token):
            credible += weight
    return round(credible / total, 4) if total else 0.0


def _looks_like_word(token: str) -> bool:
    if _NUMBER.fullmatch(token):
        return True
    if not _WORD.fullmatch(token) or len(token) > _MAX_WORD or _RUN.search(token):
        return False
    if not _latin(token):
        return True
    if not all(_plain_case(part) for part in _JOINERS.split(token)):
        return False
    lowered = token.lower()
    if len(lowered) <= 3 and lowered in _SHORT_WORDS:
        return True
    return len(lowered) > 1 and any(c in _VOWELS for c in lowered)


def _plain_case(part: str) -> bool:
    return part.islower() or part.isupper() or part.istitle()


def _latin(token: str) -> bool:
    return all("LATIN" in unicodedata.name(c, "") for c in token if c.isalpha())


@dataclass(frozen=True)
class Scored:
    """Scores of one page's text, weighted by its length when pages are combined."""

    confidence: float
    credibility: float
    chars: int


def combine(pages: Iterable[Scored]) -> tuple[float | None, float | None]:
    """(quality, credibility) of a document: page scores weighted by characters, so a
    page of one misread word cannot sink a hundred clean ones. None without any text."""
    items = [p for p in pages if p.chars > 0]
    weight = sum(p.chars for p in items)
    if not weight:
        return None, None
    quality = sum(p.confidence * p.chars for p in items) / weight
    believed = sum(p.credibility * p.chars for p in items) / weight
    return round(quality, 4), round(believed, 4)


def visible_chars(text: str) -> int:
    return len("".join(text.split()))
