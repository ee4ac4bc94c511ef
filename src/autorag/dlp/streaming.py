"""Redacting an answer while it streams, token by token.

``StreamingRedactor.feed(token)`` returns the text that is safe to show now and holds
back the rest: the shortest suffix that could still become (part of) a secret. Nothing
of a secret is ever emitted in clear, however the tokens split it, and everything
emitted, joined with ``flush()``, equals ``scan_content(whole text).redacted_text``.

How much to hold back comes from two questions:

1. Could the end of the text still grow into a match? An NFA of the built-ins follows
   every thread of a possible match (``autorag.dlp.nfa``); holding starts at the
   earliest thread still open. A trailing word could become an e-mail address, a run
   of digits a card number, and a ``-----BEGIN … PRIVATE KEY-----`` holds until its
   END marker: that is the price of never leaking a prefix.
2. Is that cut inside a match already found? RE2 scans the held text; the cut moves
   back to the start of any match (accepted or turned down by a validator) it would
   split, so the text before it is redacted exactly as the whole text will be.

Only the built-in patterns stream (they carry the syntax tree the NFA needs); custom
patterns apply to whole texts through ``scan_content``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from autorag.dlp.nfa import Automaton, PrefixTracker
from autorag.dlp.patterns import DEFAULT_PATTERNS, Pattern
from autorag.dlp.scanner import Candidate, find_candidates, redact, secrets_in


class TokenRedactor(Protocol):
    """What a streaming answer writes its tokens through."""

    @property
    def redacted(self) -> bool: ...

    @property
    def types(self) -> list[str]: ...

    def feed(self, token: str) -> str: ...

    def flush(self) -> str: ...


class StreamingRedactor:
    """Redacts a stream of tokens with the built-in ``patterns`` (the enabled-by-default
    built-ins when None)."""

    def __init__(self, patterns: Sequence[Pattern] | None = None) -> None:
        chosen = tuple(DEFAULT_PATTERNS if patterns is None else patterns)
        if any(p.tree is None for p in chosen):
            raise ValueError("only built-in patterns can redact a stream")
        self._patterns = chosen
        self._tracker = PrefixTracker(_automaton(chosen))
        self._pending = ""  # received, not yet emitted
        self._pending_at = 0  # offset of ``_pending`` in the whole text
        self._context = ""  # the last character emitted: what ``\b`` sees before _pending
        self._found: list[str] = []  # a pattern name per redacted match

    @property
    def redacted(self) -> bool:
        """Whether anything emitted so far was redacted."""
        return bool(self._found)

    @property
    def types(self) -> list[str]:
        """The kinds of secrets redacted so far, each once, sorted."""
        return sorted(set(self._found))

    @property
    def found(self) -> list[str]:
        """The pattern name of every match redacted so far."""
        return list(self._found)

    def feed(self, token: str) -> str:
        """Take the next token; answer the text now safe to emit (maybe empty)."""
        self._pending += token
        self._tracker.advance(token)
        open_at = self._tracker.earliest_open()
        cut = len(self._pending) if open_at is None else open_at - self._pending_at
        return self._emit(cut) if cut > 0 else ""

    def flush(self) -> str:
        """The end of the stream: emit everything still held, redacted."""
        return self._emit(len(self._pending), final=True)

    def _emit(self, cut: int, *, final: bool = False) -> str:
        # The last emitted character goes along as context: ``\b`` looks one back.
        context = len(self._context)
        found = find_candidates(self._context + self._pending, self._patterns, context)
        candidates = [_shifted(c, -context) for c in found]
        if not final:
            cut = _outside_candidates(cut, candidates)
        if cut <= 0:
            return ""
        matches = secrets_in(c for c in candidates if c.end <= cut)
        self._found += [m.type for m in matches]
        emitted = redact(self._pending[:cut], matches)
        self._context = self._pending[cut - 1]
        self._pending = self._pending[cut:]
        self._pending_at += cut
        return emitted


class PassThrough:
    """A ``TokenRedactor`` that redacts nothing (DLP off, or a bypassing role)."""

    @property
    def redacted(self) -> bool:
        return False

    @property
    def types(self) -> list[str]:
        return []

    def feed(self, token: str) -> str:
        return token

    def flush(self) -> str:
        return ""


def _outside_candidates(cut: int, candidates: Sequence[Candidate]) -> int:
    """``cut`` moved back until no candidate straddles it."""
    moved = True
    while moved:
        moved = False
        for candidate in candidates:
            if candidate.start < cut < candidate.end:
                cut, moved = candidate.start, True
    return cut


def _shifted(candidate: Candidate, by: int) -> Candidate:
    secret = candidate.secret
    return Candidate(
        candidate.type,
        candidate.start + by,
        candidate.end + by,
        None if secret is None else (secret[0] + by, secret[1] + by),
    )


@lru_cache(maxsize=16)
def _automaton(patterns: tuple[Pattern, ...]) -> Automaton:
    """One NFA per set of built-ins, shared by every stream (it is read-only)."""
    return Automaton([p.tree for p in patterns if p.tree is not None])
