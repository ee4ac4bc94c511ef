"""Synthesis's plain data: what the service returns to routes, commands and the web UI.

A *run* reads some of the workspace's documents (its *sources*) into one archive and
proposes a change set of *items* (a page to create, a page to update, an entity skipped,
a contradiction flagged, the overview brought up to date). Items wait for a person:
approving one saves it as a page version, rejecting it discards it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import with_config

from autorag.wiki.wire import CAMEL_CASE

# The five passes, in order (seed 003).
PASSES = (
    "entity_extraction",
    "summary_generation",
    "candidate_search",
    "llm_decision",
    "write_overview",
)
PassName = Literal[
    "entity_extraction", "summary_generation", "candidate_search", "llm_decision",
    "write_overview",
]  # fmt: skip

# queued → running → ready (waiting for review) → applied | partially_applied | rejected;
# running → paused (the model failed: resume goes on where it stopped) | cancelled |
# failed (something that resuming cannot fix).
RunStatus = Literal[
    "queued", "running", "paused", "ready", "applied", "partially_applied", "rejected",
    "cancelled", "failed",
]  # fmt: skip
ACTIVE_STATUSES = ("queued", "running")
OPEN_STATUSES = ("queued", "running", "paused", "ready")  # not decided yet

# "llm": a model read the sources; "extractive": the built-in rule-based reader, said
# so wherever the run is shown (no model wrote these texts).
Mode = Literal["llm", "extractive"]

# CREATE / UPDATE / SKIP / FLAG_CONTRADICTION of the seed, and the overview page.
Action = Literal["create", "update", "skip", "contradiction", "overview"]
ItemStatus = Literal["pending", "applied", "rejected", "conflict"]


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Selection:
    """Which documents a run reads: the given ids, or those indexed since a date and/or
    of a type; none given: every ready document. ``force`` re-reads documents already
    synthesised into this archive and unchanged since."""

    document_ids: tuple[int, ...] = ()
    since: datetime | None = None
    doc_type: str | None = None  # "pdf", "docx", "md", ...
    force: bool = False


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class PassProgress:
    name: PassName
    done: int = 0
    total: int = 0
    state: Literal["waiting", "running", "done"] = "waiting"


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class SkippedSource:
    document_id: int
    source_id: str
    reason: str  # "unchanged since run 3", "in run 5, waiting for review", ...


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class SynthRun:
    id: int
    workspace_id: int
    archive_id: int
    archive: str  # the archive's name
    status: RunStatus
    mode: Mode
    model: str  # "provider/model" ("extractive/extractive" in extractive mode)
    selection: Selection
    current_pass: PassName | None
    passes: tuple[PassProgress, ...]
    sources: int  # documents the run reads
    skipped: tuple[SkippedSource, ...]
    items: int  # proposed items (SKIP ones included)
    pending: int  # items waiting for a decision
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    error: str | None
    error_code: str | None
    created_by: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None  # the passes ended (ready, failed, cancelled)
    decided_by: str | None = None
    decided_at: datetime | None = None
    cancel_requested: bool = False  # a person asked a running run to stop (between steps)


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Passage:
    """A piece of a source a proposed text rests on (or a page's text, for the page side
    of a contradiction: ``document_id`` None, ``page_path`` set)."""

    text: str
    document_id: int | None = None
    source_id: str | None = None  # canonical source id (seed 000)
    title: str = ""
    page: int | None = None  # page or section of the document, when known
    page_path: str | None = None


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class SynthItem:
    id: int
    run_id: int
    position: int  # order in the change set
    action: Action
    entity: str  # what the item is about ("" for the overview)
    path: str  # the page it creates or updates (or would have, for skip/contradiction)
    title: str
    body: str  # the proposed page text (markdown, front matter included); "" for skip
    reason: str  # why the model (or rule) decided this
    sources: tuple[Passage, ...]  # cited passages of the run's documents
    # FLAG_CONTRADICTION: what the page says and what the source says, side by side.
    contradiction: tuple[Passage, ...] = ()
    base_version: int | None = None  # the page's version the proposal was made against
    status: ItemStatus = "pending"
    applied_version: int | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    # Filled when read for review (not stored): the diff against the page as it is now,
    # and whether a person saved the page after the run began (a conflict on approval).
    diff: str = ""
    stale: bool = False


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Decision:
    """What approving or rejecting did, item by item."""

    run: SynthRun
    applied: tuple[int, ...] = ()  # item ids saved as page versions
    rejected: tuple[int, ...] = ()
    conflicts: tuple[int, ...] = ()  # a person edited the page since: left for review
    untouched: tuple[int, ...] = ()  # skip items and items already decided
    pages: tuple[str, ...] = field(default=())  # paths saved
