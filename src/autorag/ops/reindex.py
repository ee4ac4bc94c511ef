"""Re-index every workspace after an embedding model change (Settings → Maintenance).

A run queues one re-embed job (``autorag.ingest.reembed``, run by the worker pool) per
namespace of the catalog: the workspaces people use and the hidden ones (archives'
indexes), since every vector was made by the old model. Each fills a shadow table and
swaps it in when complete, so search keeps answering meanwhile. The run (its id and
its jobs) is kept in ``system_config``; its progress is read from the jobs themselves,
so it survives a restart as they do.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, text
from sqlalchemy.orm import Session

from autorag.errors import Conflict
from autorag.ingest.reembed import REEMBED_JOB
from autorag.store.catalog import queue
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import JobRow, SystemConfigRow, WorkspaceRow, utcnow
from autorag.store.catalog.repository import WORKSPACE_KIND, Catalog
from autorag.system_config import get_value
from autorag.times import as_utc, as_utc_or_none

RUN_KEY = "system.reindex_run"
# Two admins pressing the button at once start one run: in this process, this lock; across
# server processes on one PostgreSQL catalog, a transaction-scoped advisory lock (two
# re-embeds of one workspace would share, and drop, one shadow table).
_START_LOCK = threading.Lock()
_ADVISORY_KEY = 0x72_65_69_6E_64_65_78  # "reindex"


@dataclass(frozen=True)
class WorkspaceProgress:
    workspace: str
    hidden: bool  # an archive's index, not a workspace people use
    job_id: int
    status: str  # queued | running | done | failed | gone (the workspace was deleted)
    chunks: int  # what it holds now; all re-embedded once the job is done
    error: str | None
    finished_at: datetime | None


@dataclass(frozen=True)
class ReindexRun:
    id: str
    started_at: datetime
    started_by: str | None
    model: str  # the embedding model the run re-embeds with
    workspaces: list[WorkspaceProgress]

    @property
    def total(self) -> int:
        return len(self.workspaces)

    @property
    def done(self) -> int:
        return sum(w.status in ("done", "gone") for w in self.workspaces)

    @property
    def failed(self) -> int:
        return sum(w.status == "failed" for w in self.workspaces)

    @property
    def status(self) -> str:
        """running until every job ends; then done, or failed when any failed."""
        if self.done + self.failed < self.total:
            return "running"
        return "failed" if self.failed else "done"


def start_reindex(catalog: Catalog, *, model: str, started_by: str | None) -> str:
    """Queue a re-embed of every namespace; the run's id. ``Conflict`` while any
    re-embed (this kind of run, or one workspace's) is still queued or running."""
    with _START_LOCK, catalog.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _ADVISORY_KEY})
        busy = conn.execute(
            select(WorkspaceRow.name)
            .join(JobRow, JobRow.workspace_id == WorkspaceRow.id)
            .where(JobRow.kind == REEMBED_JOB, JobRow.status.in_(queue.ACTIVE))
            .limit(1)
        ).scalar()
        if busy is not None:
            raise Conflict(
                f"a re-index is already under way (workspace {busy!r} is being re-embedded); "
                "wait for it to finish",
                code="reindex_running",
            )
        ids = conn.execute(select(WorkspaceRow.id).order_by(WorkspaceRow.id)).scalars().all()
        jobs = [queue.enqueue(conn, ws_id, REEMBED_JOB) for ws_id in ids]
        run_id = uuid.uuid4().hex[:16]
        record = {"id": run_id, "jobs": jobs, "startedAt": utcnow().isoformat(),
                  "startedBy": started_by, "model": model}  # fmt: skip
        _save(conn, json.dumps(record, separators=(",", ":")))
    return run_id


def latest_run(catalog: Catalog) -> ReindexRun | None:
    """The last run started, with each namespace's progress; None before the first."""
    record = _load(get_value(catalog.engine, RUN_KEY))
    if record is None:
        return None
    job_ids = [int(j) for j in record.get("jobs", [])]
    query = (
        select(JobRow, WorkspaceRow.name, WorkspaceRow.kind)
        .outerjoin(WorkspaceRow, WorkspaceRow.id == JobRow.workspace_id)
        .where(JobRow.id.in_(job_ids))
    )
    with Session(catalog.engine, expire_on_commit=False) as session:
        rows = {row[0].id: (row[0], row[1], row[2]) for row in session.execute(query)}
    progress = [_progress(catalog, rows.get(job_id), job_id) for job_id in job_ids]
    return ReindexRun(
        id=str(record.get("id", "")),
        started_at=as_utc(datetime.fromisoformat(str(record.get("startedAt")))),
        started_by=record.get("startedBy"),
        model=str(record.get("model", "")),
        workspaces=sorted(progress, key=lambda w: (w.hidden, w.workspace)),
    )


def _progress(catalog: Catalog, row: Any, job_id: int) -> WorkspaceProgress:
    if row is None:  # the workspace was deleted since, its jobs with it
        return WorkspaceProgress("(deleted)", False, job_id, "gone", 0, None, None)
    job, name, kind = row
    return WorkspaceProgress(
        workspace=name,
        hidden=kind != WORKSPACE_KIND,
        job_id=job.id,
        status=job.status,
        chunks=catalog.chunk_count(job.workspace_id),
        error=job.error,
        finished_at=as_utc_or_none(job.finished_at),
    )


def _save(conn: Connection, value: str) -> None:
    statement = dialect_insert(conn.engine, SystemConfigRow).values(
        key=RUN_KEY, value=value, updated_at=utcnow()
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["key"],
            set_={"value": statement.excluded.value, "updated_at": statement.excluded.updated_at},
        )
    )


def _load(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
