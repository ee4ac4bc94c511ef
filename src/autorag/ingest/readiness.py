"""Readiness as seed 000 names it: configured | degraded | unavailable | ready, with why."""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from autorag.errors import AutoragError
from autorag.ingest.duplicates import display_name
from autorag.store.catalog.readiness_sql import (
    ListedFile,
    ReadinessFacts,
    open_sqlite_readonly,
)
from autorag.store.catalog.revision import SCHEMA_HEAD
from autorag.store.catalog.workspace_info import WorkspaceInfo

if TYPE_CHECKING:
    from autorag.config import Settings
    from autorag.workspace import Workspace

ReadinessState = Literal["configured", "degraded", "unavailable", "ready"]
# Files not read by design rather than broken: recorded as ``skipped`` with the reason,
# never a failure of the workspace (``empty``: no text; ``duplicate``: the same content
# is indexed under another name, which is kept). Older catalogs recorded the first two
# as ``failed``; they are shown as skipped too, and the next refresh re-reads them.
SKIPPED_REASONS = frozenset({"empty", "unsupported_type", "duplicate"})


@dataclass
class Readiness:
    state: ReadinessState
    reason: str
    documents: dict[str, int] = field(default_factory=dict)
    chunks: int = 0
    vectors: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    last_refresh: dict[str, Any] | None = None


class CountsVectors(Protocol):
    """All readiness asks of the vector store (an open one, or a recorded count)."""

    def count(self) -> int: ...


@dataclass(frozen=True)
class RecordedCount:
    """A vector count read from the record beside the table (``CountsVectors``)."""

    rows: int

    def count(self) -> int:
        return self.rows


def configured_model(settings: Settings) -> str:
    """The model documents should be embedded with, as they record it
    (``provider:model``), without building the provider (its module imports NumPy)."""
    return f"{settings.embedding.provider}:{settings.embedding.model}"


def recorded_vectors(
    settings: Settings, vectors_dir: Path, workspace: WorkspaceInfo
) -> RecordedCount | None:
    """The LanceDB table's count as its last write recorded it, while still current:
    readiness then needs neither LanceDB (seconds to import) nor the model. None when
    there is no such record and the table has to be opened."""
    from autorag.embeddings.base import KNOWN_MODEL_DIMS
    from autorag.store.vectors.lance_count import recorded_count

    dim = KNOWN_MODEL_DIMS.get(settings.embedding.model)
    if settings.vector_store != "lancedb" or not dim:
        return None
    rows = recorded_count(vectors_dir, workspace.vector_table, dim)
    return None if rows is None else RecordedCount(rows)


def quick_readiness(workspace: Workspace, settings: Settings) -> Readiness | None:
    """The readiness of a workspace whose catalog is a current SQLite file, read with
    Python's sqlite3 and the vector count's record: what ``autorag status`` prints, in
    a fraction of the time opening the whole context takes (SQLAlchemy's import alone
    is half the goal of half a second).

    None when anything is off the common path (a PostgreSQL or configured catalog URL,
    a file not yet created or not at the newest schema, no such workspace yet, no
    current vector count, a catalog that cannot be read): the caller opens the context,
    which migrates, creates and reports as always.
    """
    if settings.database_url or not workspace.database_file.is_file():
        return None
    try:
        with open_sqlite_readonly(workspace.database_file) as catalog:
            if catalog.schema_revision() != SCHEMA_HEAD:
                return None
            found = catalog.workspace(settings.workspace)
            if found is None:
                return None
            info = WorkspaceInfo(found[0], settings.workspace, found[1])
            vectors = recorded_vectors(settings, workspace.vectors_dir, info)
            if vectors is None:
                return None
            return check_readiness(
                ReadinessFacts(catalog.rows, info.id),
                search_paths=settings.search_paths,
                embedding_model=configured_model(settings),
                vectors=vectors,
            )
    except sqlite3.Error:  # locked past the timeout, damaged: the full path says why
        return None


def check_readiness(
    facts: ReadinessFacts,
    *,
    search_paths: list[str],
    embedding_model: str,
    vectors: CountsVectors | None,
    vectors_error: str = "vector store could not be opened",
) -> Readiness:
    """The workspace's readiness. ``vectors`` is None when its vector store could not be
    opened (``vectors_error`` says why): ``degraded`` when that is because the documents
    were embedded with another model (search then runs full-text only, Guard D-01),
    ``unavailable`` otherwise."""
    counts = facts.status_counts()
    chunks = facts.chunk_count()
    failed_rows, skipped_rows = failed_and_skipped(facts)
    report = Readiness(
        "ready",
        "",
        counts,
        chunks,
        failed=[_failure(d) for d in failed_rows],
        skipped=[_failure(d) for d in skipped_rows],
    )
    run = facts.latest_run()
    if run is not None:
        report.last_refresh = dataclasses.asdict(run)
    stored_models = facts.embedding_models()
    if vectors is None:
        other = _other_model(stored_models, embedding_model)
        report.state = "degraded" if other else "unavailable"
        report.reason = other or vectors_error
        return report
    try:
        report.vectors = vectors.count()
    except AutoragError as exc:
        report.state, report.reason = "unavailable", exc.message
        return report
    report.state, report.reason = _judge(
        report,
        run_status=run.status if run else None,
        search_paths=search_paths,
        stored_models=stored_models,
        model=embedding_model,
    )
    return report


def _judge(
    report: Readiness,
    *,
    run_status: str | None,
    search_paths: list[str],
    stored_models: set[str],
    model: str,
) -> tuple[ReadinessState, str]:
    total = sum(report.documents.values())
    if run_status is None and total == 0:
        if not search_paths:
            return "configured", "no search paths yet: run `autorag add PATH`"
        return "configured", "never refreshed: run `autorag refresh`"
    if run_status in ("running", "interrupted"):
        return "degraded", f"the last refresh was {run_status}: run `autorag refresh` to finish"
    if run_status == "failed":
        return "degraded", "the last refresh failed: see `autorag status` and run it again"
    unfinished = sum(report.documents.get(s, 0) for s in ("indexing", "deleting"))
    if unfinished:
        half = _count(unfinished, "document is", "documents are")
        return "degraded", f"{half} half-indexed: run `autorag refresh`"
    waiting = report.documents.get("pending", 0)
    if waiting:
        return "degraded", (
            f"{_count(waiting, 'document waits', 'documents wait')} for background jobs "
            "(uploads, OCR): `autorag serve` "
            "or `autorag worker` runs them, `autorag refresh --ocr-now` runs OCR at once"
        )
    other = _other_model(stored_models, model)
    if other:
        return "degraded", other
    if report.vectors < report.chunks:
        return "degraded", (
            f"{_count(report.chunks - report.vectors, 'chunk has', 'chunks have')} no vector: "
            "run `autorag reindex`"
        )
    if report.failed:
        failed = _count(len(report.failed), "file", "files")
        return "degraded", f"{failed} failed to index (listed below)"
    ready = _count(report.documents.get("ready", 0), "document", "documents")
    return "ready", f"{ready}, {_count(report.chunks, 'chunk', 'chunks')} indexed"


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _other_model(stored_models: set[str], model: str) -> str:
    """Why vector search is off when documents were embedded with another model; ''."""
    others = stored_models - {model}
    if not others:
        return ""
    return (
        f"documents were embedded with {', '.join(sorted(others))}, not {model}: vector "
        "search is off (full-text only) until `autorag reindex`"
    )


def failed_and_skipped(
    facts: ReadinessFacts, *, limit: int = 1000
) -> tuple[list[ListedFile], list[ListedFile]]:
    """The workspace's files that failed, and those skipped by design (with reasons)."""
    failed = facts.listed("failed", limit=limit)
    skipped = facts.listed("skipped", limit=limit)
    benign = [d for d in failed if d.error_code in SKIPPED_REASONS]
    return [d for d in failed if d.error_code not in SKIPPED_REASONS], [*skipped, *benign]


def failed_and_skipped_counts(facts: ReadinessFacts) -> tuple[int, int]:
    """How many files ``failed_and_skipped`` lists, counted in the catalog."""
    old = sum(n for code, n in facts.failed_codes().items() if code in SKIPPED_REASONS)
    counts = facts.status_counts()
    return counts.get("failed", 0) - old, counts.get("skipped", 0) + old


def _failure(document: ListedFile) -> dict[str, Any]:
    return {
        "source_id": document.source_id,
        "name": display_name(document.source_id, document.origin),
        "code": document.error_code,
        "reason": document.error,
    }
