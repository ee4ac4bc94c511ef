"""Which documents a run reads, and each one's text as the passes will read it.

A run reads the selection's ready documents, less those already read into the archive
at their current version (unless forced) and those another undecided run of the archive
is reading. Each is read once, when the run starts, from its chunks in order (one
passage per chunk, ``MAX_SOURCE_CHARS`` in all): the run then works on the version of
the document it recorded (``content_hash``), whatever happens to the file meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Engine

from autorag.errors import InvalidInput, NotFound
from autorag.synth import store
from autorag.synth.models import Passage, Selection, SkippedSource
from autorag.synth.store import DocumentRef

log = logging.getLogger(__name__)

MAX_SOURCE_CHARS = 12_000  # per document; the rest is not read
MAX_SOURCES_PER_RUN = 500
_SHOWN_REASONS = 5


@dataclass
class Plan:
    """The documents a run will read (as ``synth_sources`` rows) and those it skips."""

    sources: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)


def plan_sources(
    engine: Engine,
    workspace_id: int,
    archive_id: int,
    selection: Selection,
    *,
    redact: Callable[[str], str] | None,
) -> Plan:
    """The run's sources; ``redact`` (DLP, when a model will read them) applied to each
    passage. Raises ``InvalidInput`` (``nothing_to_synthesise``) when none is left."""
    found = store.documents(engine, workspace_id, selection)
    _check_named(selection, found)
    plan = Plan()
    readable = _readable(engine, archive_id, selection, found, plan.skipped)
    for document in readable:
        if len(plan.sources) >= MAX_SOURCES_PER_RUN:
            plan.skipped.append(
                _skip(document, f"over the {MAX_SOURCES_PER_RUN} documents one run reads")
            )
            continue
        passages, cut = store.passages(engine, document, max_chars=MAX_SOURCE_CHARS)
        if not passages:
            plan.skipped.append(_skip(document, "it has no text"))
            continue
        if cut:
            log.info(
                "synthesis reads the first %d characters of %s; the rest is not read",
                MAX_SOURCE_CHARS,
                document.source_id,
            )
        if redact is not None:
            passages = tuple(replace(p, text=redact(p.text)) for p in passages)
        plan.sources.append(_row(len(plan.sources), document, passages))
    if not plan.sources:
        raise InvalidInput(_nothing(plan.skipped), code="nothing_to_synthesise")
    return plan


def _check_named(selection: Selection, found: list[DocumentRef]) -> None:
    missing = sorted(set(selection.document_ids) - {d.id for d in found})
    if missing:
        shown = ", ".join(str(i) for i in missing[:10])
        raise NotFound(f"no document {shown} in this workspace", code="document_not_found")


def _readable(
    engine: Engine,
    archive_id: int,
    selection: Selection,
    found: list[DocumentRef],
    skipped: list[SkippedSource],
) -> list[DocumentRef]:
    ids = [d.id for d in found]
    done = {} if selection.force else store.done_versions(engine, archive_id, ids)
    reading = {} if selection.force else store.open_runs_reading(engine, archive_id, ids)
    readable = []
    for document in found:
        if document.status != "ready":
            skipped.append(_skip(document, f"it is not ready (status {document.status})"))
        elif document.id in reading:
            run = reading[document.id]
            skipped.append(_skip(document, f"in run {run}, waiting for review"))
        elif document.id in done and done[document.id][0] == document.content_hash:
            skipped.append(_skip(document, f"unchanged since run {done[document.id][1]}"))
        else:
            readable.append(document)
    return readable


def _skip(document: DocumentRef, reason: str) -> SkippedSource:
    return SkippedSource(document.id, document.source_id, reason)


def _row(position: int, document: DocumentRef, passages: tuple[Passage, ...]) -> dict[str, Any]:
    return {
        "position": position,
        "document_id": document.id,
        "source_id": document.source_id,
        "content_hash": document.content_hash,
        "title": document.title or document.source_id,
        "passages": store.to_json(tuple[Passage, ...], passages),
    }


def _nothing(skipped: list[SkippedSource]) -> str:
    if not skipped:
        return "no ready document matches the selection: nothing to synthesise"
    reasons = "; ".join(f"{s.source_id}: {s.reason}" for s in skipped[:_SHOWN_REASONS])
    more = len(skipped) - _SHOWN_REASONS
    tail = f"; and {more} more" if more > 0 else ""
    return f"nothing to synthesise: every selected document is skipped ({reasons}{tail})"
