"""The numbers a reader sees: sources numbered 1..n in the order the answer first cites
them, the markers in the answer rewritten to match, as the answer streams.

The skills number their sources as they find them ([1]–[10] from one search, [11]–[20]
from the next), and a model cites a few of them in any order: [3], then [6], then [3]
again. ``Renumbering`` rewrites each ``[n]`` (and ``[n, m]``) marker of a known source
to the source's number in order of first use, so the answer reads [1], [2], [1]; two
numbers of the same passage (a chunk found by two searches) become one. Markers that
name no source stay as written: they are larger than any source's number (or 0), so
they never collide with a rewritten one.

A marker split across tokens ("[1" then "2]") is held back until it is complete, so the
streamed text and ``rewrite`` of the whole answer are the same text. ``number`` then
gives the sources the answer cites their new numbers, in order, and numbers the
remaining ones after them, marked ``cited=False`` (clients show them as "more
sources").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from autorag.agent.events import AgentEvent, Emit, TokenEvent
from autorag.models import Citation
from autorag.retrieval.grounding import CITATION_MARKER, passage_key

# What may still become a marker at the end of streamed text: held back until complete.
_OPEN = re.compile(r"\[[\d,\s]{0,200}$")

Key = tuple[int, int]  # a passage, as grounding.passage_key names it


class Renumbering:
    """Dense numbers in order of first use, for one answer.

    ``sources`` answers the citations found so far (they grow as skills run).
    """

    def __init__(self, sources: Callable[[], Sequence[Citation]]) -> None:
        self._sources = sources
        self._dense: dict[Key, int] = {}  # passage -> its number in the answer
        self._held = ""

    # -- the text ----------------------------------------------------------------------------
    def rewrite(self, text: str) -> str:
        """``text`` with every known source's marker renumbered (first use numbers it)."""
        if not CITATION_MARKER.search(text):  # most streamed pieces hold no marker
            return text
        keys = {c.number: passage_key(c) for c in self._sources()}
        return CITATION_MARKER.sub(lambda m: self._marker(m, keys), text)

    def feed(self, text: str) -> str:
        """The streamed ``text`` rewritten; a possibly unfinished marker is held back."""
        pending = self._held + text
        opening = _OPEN.search(pending)
        cut = opening.start() if opening else len(pending)
        self._held = pending[cut:]
        return self.rewrite(pending[:cut])

    def flush(self) -> str:
        """What was held back, at the end of the answer."""
        held, self._held = self._held, ""
        return self.rewrite(held)

    def wrap(self, emit: Emit) -> Emit:
        """``emit`` with answer tokens renumbered; other events pass unchanged."""

        def renumbered(event: AgentEvent) -> None:
            if isinstance(event, TokenEvent):
                text = self.feed(event.text)
                if text:
                    emit(TokenEvent(text))
            else:
                emit(event)

        return renumbered

    def _marker(self, match: re.Match[str], keys: dict[int, Key]) -> str:
        numbers = [int(n) for n in match.group(1).split(",")]
        if not any(n in keys for n in numbers):
            return match.group(0)
        out: list[int] = []
        for n in numbers:
            new = self._number_of(keys[n]) if n in keys else n
            if new not in out:
                out.append(new)
        return "[" + ", ".join(str(n) for n in out) + "]"

    def _number_of(self, key: Key) -> int:
        if key not in self._dense:
            self._dense[key] = len(self._dense) + 1
        return self._dense[key]

    # -- the sources -------------------------------------------------------------------------
    def number(self, citations: Sequence[Citation]) -> list[Citation]:
        """The answer's sources renumbered: those it cites first (1..n, each passage
        once), then the others (n+1.., ``cited=False``) in their original order."""
        cited: dict[int, Citation] = {}
        others: list[Citation] = []
        for citation in citations:
            new = self._dense.get(passage_key(citation))
            if new is None:
                others.append(citation)
            elif new not in cited:
                cited[new] = replace(citation, number=new, cited=True)
        listed = [cited[n] for n in sorted(cited)]
        first = len(self._dense) + 1
        return listed + [replace(c, number=first + i, cited=False) for i, c in enumerate(others)]


def renumber(text: str, citations: Sequence[Citation]) -> tuple[str, list[Citation]]:
    """``text`` and ``citations`` numbered densely in order of first use (pure)."""
    numbering = Renumbering(lambda: citations)
    rewritten = numbering.rewrite(text)
    return rewritten, numbering.number(citations)
