"""Light stemming of keywords, shared by everything that compares wordings (pure)."""

from __future__ import annotations

from autorag.text.keywords import keywords

_SUFFIXES = ("ing", "ies", "ed", "es", "s")


def stems(text: str) -> frozenset[str]:
    """Keywords with common English endings cut, so "expire" meets "expires"."""
    return frozenset(stem(word) for word in keywords(text))


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
