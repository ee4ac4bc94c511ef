"""``scan_content``: find the secrets in a text and redact them.

Each pattern is searched on its own, left to right (RE2, linear time); a validator may
turn a match down. Matches of different patterns may overlap: the redacted text
replaces each run of overlapping matches with one ``[REDACTED]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from autorag.dlp.patterns import DEFAULT_PATTERNS, Pattern

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class Match:
    """Where a secret of one ``type`` (the pattern's name) sits: ``text[start:end]``."""

    type: str
    start: int
    end: int


@dataclass(frozen=True)
class ScanResult:
    matches: tuple[Match, ...]  # sorted by start
    redacted_text: str

    @property
    def has_match(self) -> bool:
        return bool(self.matches)

    @property
    def types(self) -> list[str]:
        """The kinds of secrets found, each once, sorted."""
        return sorted({m.type for m in self.matches})


@dataclass(frozen=True)
class Candidate:
    """One regex match, with the span to redact or None when a validator refused it.

    ``start``/``end`` is all the regex consumed: the search for the next match of the
    same pattern resumes there, which the streaming redactor must respect.
    """

    type: str
    start: int
    end: int
    secret: tuple[int, int] | None


def scan_content(text: str, *, patterns: Sequence[Pattern] | None = None) -> ScanResult:
    """The matches in ``text`` and the text with each replaced by ``[REDACTED]``.

    ``patterns`` default to the built-ins enabled on a fresh installation.
    """
    chosen = DEFAULT_PATTERNS if patterns is None else patterns
    matches = secrets_in(find_candidates(text, chosen))
    return ScanResult(tuple(matches), redact(text, matches))


def find_candidates(text: str, patterns: Sequence[Pattern], start: int = 0) -> list[Candidate]:
    """Every pattern's matches from ``start`` on; what precedes it is context only."""
    found: list[Candidate] = []
    for pattern in patterns:
        for match in pattern.compiled.finditer(text, start):
            if match.end() > match.start():  # an empty match hides nothing
                found.append(_candidate(pattern, match))
    found.sort(key=lambda c: (c.start, c.end))
    return found


def secrets_in(candidates: Iterable[Candidate]) -> list[Match]:
    matches = [Match(c.type, *c.secret) for c in candidates if c.secret is not None]
    return sorted(matches, key=lambda m: (m.start, m.end, m.type))


def redact(text: str, matches: Iterable[Match]) -> str:
    """``text`` with each run of overlapping matches replaced by one ``[REDACTED]``."""
    pieces: list[str] = []
    done = 0  # text before this is written out or redacted
    for start, end in _merged((m.start, m.end) for m in matches):
        pieces += [text[done:start], REDACTED]
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _candidate(pattern: Pattern, match: Any) -> Candidate:
    start, end = match.span()
    secret_start, secret_end = start, end
    if pattern.value_group is not None:
        secret_start, secret_end = match.span(pattern.value_group)
        if secret_start < 0:  # the group took no part in this match
            return Candidate(pattern.name, start, end, None)
    if pattern.validator is not None:
        length = pattern.validator(match.string[secret_start:secret_end])
        if length is None:
            return Candidate(pattern.name, start, end, None)
        secret_end = secret_start + length
    if secret_end <= secret_start:
        return Candidate(pattern.name, start, end, None)
    return Candidate(pattern.name, start, end, (secret_start, secret_end))
