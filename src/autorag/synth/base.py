"""What the passes work with, and the reader that does the reading.

The runner (``synth.runner``) drives the five passes and keeps their results in the
catalog so that a run resumes where it stopped; a :class:`Reader` does the work that
needs a model (or, in extractive mode, the rules standing in for one). Everything a
reader returns is plain data that survives a JSON round trip (``to_json``/``from_json``
on the runner's side), since it is stored between passes.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from autorag.llm.base import Usage
from autorag.synth.models import Mode, Passage
from autorag.wiki.slugs import is_path

OVERVIEW_PATH = "overview"  # the archive's overview page (the last pass writes it)
OVERVIEW_TITLE = "Overview"
_SLUG_JUNK = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class SourceText:
    """One document as a pass reads it: its text (DLP-redacted when DLP is on) in
    numbered passages, so that a reader can cite them by number."""

    document_id: int
    source_id: str  # canonical source id
    title: str
    passages: tuple[Passage, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.passages)


@dataclass(frozen=True)
class Claim:
    text: str  # one statement the source makes about the entity
    passages: tuple[int, ...]  # indexes into the source's passages it rests on


@dataclass(frozen=True)
class Entity:
    name: str  # as the source names it: "Apollo", "Dr. Jane Roe"
    kind: str  # "person", "organisation", "project", "product", "place", "concept", ...
    description: str  # one sentence
    claims: tuple[Claim, ...]
    document_id: int  # the source it was found in


@dataclass(frozen=True)
class Extraction:
    entities: tuple[Entity, ...]


@dataclass(frozen=True)
class Candidate:
    """An existing page that may already cover an entity (found by full-text search)."""

    path: str
    title: str
    version: int
    body: str  # the page's markdown (front matter excluded)
    score: float
    # The page's front matter, so that an update proposal (whose body is the page's whole
    # markdown) keeps it: a save replaces the front matter with the one the body holds.
    front_matter: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EntityEvidence:
    """Everything known about one entity when its decision is made: the entity as each
    source found it (merged by name across sources), the sources' summaries, and the
    candidate pages."""

    name: str
    kind: str
    mentions: tuple[Entity, ...]
    sources: tuple[SourceText, ...]
    summaries: tuple[str, ...]  # one per source, same order
    candidates: tuple[Candidate, ...]


Verdict = Literal["create", "update", "skip", "contradiction"]


@dataclass(frozen=True)
class Proposal:
    """A reader's decision about one entity."""

    verdict: Verdict
    reason: str
    path: str  # the page to create or update (a candidate's path for update)
    title: str
    body: str  # the new page's markdown, or the updated page's whole markdown; "" for skip
    sources: tuple[Passage, ...]  # the passages the text rests on (cited in ``body``)
    contradiction: tuple[Passage, ...] = ()  # page passage, source passage


@dataclass(frozen=True)
class OverviewInput:
    archive_title: str
    current: str | None  # the overview page's body now (None: there is none yet)
    pages: tuple[tuple[str, str], ...]  # (path, title) of every page after the change set
    proposals: tuple[Proposal, ...]  # the run's create/update proposals


class Reader(Protocol):
    """Reads sources for the passes: a model (``synth.llm``) or rules (``synth.rules``).

    Methods raise ``Unavailable`` when the model cannot be reached or times out (the run
    pauses, and resuming retries the same step), and ``AutoragError`` with a code for
    what retrying cannot fix. ``usage`` and ``calls`` count what the reader has asked a
    model so far (zero for the rules).
    """

    mode: Mode
    model: str  # "provider/model"

    def extract(self, source: SourceText) -> Extraction: ...

    def summarize(self, source: SourceText, extraction: Extraction) -> str: ...

    def decide(self, evidence: EntityEvidence) -> Proposal: ...

    def overview(self, given: OverviewInput) -> str: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def calls(self) -> int: ...


# -- page paths (one rule for both readers and the runner) --------------------------------
def entity_slug(name: str) -> str:
    """A page path for an entity: ``"Dr. Jane Roe"`` → ``dr-jane-roe``; a name with no
    letter or digit a path can hold (a name in Hangul, say) → ``entity-<hash>``."""
    folded = unicodedata.normalize("NFKD", name)
    plain = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    slug = _SLUG_JUNK.sub("-", plain).strip("-")[:80].strip("-")
    if slug and slug != OVERVIEW_PATH:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"entity-{digest}"


def proposal_path(raw: str, name: str) -> str:
    """A proposed page path in its normal form; not a valid one (or the overview's, which
    only the last pass writes) → the entity's own slug."""
    path = is_path(raw) if raw.strip() else None
    return path if path and path != OVERVIEW_PATH else entity_slug(name)
