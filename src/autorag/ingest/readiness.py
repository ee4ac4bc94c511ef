"""Readiness as seed 000 names it: configured | degraded | unavailable | ready, with why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sqlalchemy import func, select

from autorag.errors import AutoragError
from autorag.ingest.duplicates import display_name
from autorag.store.catalog.models import DocumentRow
from autorag.store.catalog.repository import Catalog, WorkspaceInfo

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


def check_readiness(
    catalog: Catalog,
    workspace: WorkspaceInfo,
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
    counts = catalog.status_counts(workspace.id)
    chunks = catalog.chunk_count(workspace.id)
    failed_rows, skipped_rows = failed_and_skipped(catalog, workspace)
    report = Readiness(
        "ready",
        "",
        counts,
        chunks,
        failed=[_failure(d) for d in failed_rows],
        skipped=[_failure(d) for d in skipped_rows],
    )
    run = catalog.latest_run(workspace.id)
    if run is not None:
        report.last_refresh = {
            "status": run.status,
            "started_at": run.started_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "indexed": run.indexed,
            "unchanged": run.unchanged,
            "failed": run.failed,
            "needs_ocr": run.needs_ocr,
            "deleted": run.deleted,
        }
    stored_models = catalog.embedding_models(workspace.id)
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
    catalog: Catalog, workspace: WorkspaceInfo, *, limit: int = 1000
) -> tuple[list[DocumentRow], list[DocumentRow]]:
    """The workspace's files that failed, and those skipped by design (with reasons)."""
    failed = catalog.list_documents(workspace.id, status="failed", limit=limit)
    skipped = catalog.list_documents(workspace.id, status="skipped", limit=limit)
    benign = [d for d in failed if d.error_code in SKIPPED_REASONS]
    return [d for d in failed if d.error_code not in SKIPPED_REASONS], [*skipped, *benign]


def failed_and_skipped_counts(catalog: Catalog, workspace: WorkspaceInfo) -> tuple[int, int]:
    """How many files ``failed_and_skipped`` lists, counted in the catalog."""
    benign = select(func.count(DocumentRow.id)).where(
        DocumentRow.workspace_id == workspace.id,
        DocumentRow.status == "failed",
        DocumentRow.error_code.in_(SKIPPED_REASONS),
    )
    counts = catalog.status_counts(workspace.id)
    with catalog.engine.connect() as conn:
        old = int(conn.execute(benign).scalar() or 0)
    return counts.get("failed", 0) - old, counts.get("skipped", 0) + old


def _failure(document: DocumentRow) -> dict[str, Any]:
    return {
        "source_id": document.source_id,
        "name": display_name(document.source_id, document.origin),
        "code": document.error_code,
        "reason": document.error,
    }
