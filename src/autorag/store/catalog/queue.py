"""The durable job queue: rows of the catalog's ``jobs`` table.

A job is ``queued`` until a worker claims it with one atomic ``UPDATE ... WHERE
status = 'queued'``, so two workers (threads or processes) never both get it; then it is
``running`` until ``done`` or ``failed``. A process killed mid-job leaves it ``running``:
:func:`requeue_stale` puts it back once its claimer is known to be dead.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Select, func, insert, select, update
from sqlalchemy.orm import Session

from autorag.errors import NotFound
from autorag.store.catalog.models import JobRow, utcnow

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
ACTIVE = (QUEUED, RUNNING)
# A job whose process died this many times is given up, not retried forever.
MAX_ATTEMPTS = 3
_CLAIM_TRIES = 20


@dataclass(frozen=True)
class Job:
    id: int
    workspace_id: int
    document_id: int | None
    kind: str
    payload: dict[str, Any]
    attempts: int
    claimed_by: str | None = None


@dataclass
class RequeueReport:
    requeued: list[int] = field(default_factory=list)
    abandoned: list[Job] = field(default_factory=list)  # failed after MAX_ATTEMPTS


# -- identities -----------------------------------------------------------------------
def process_identity(pid: int | None = None) -> str:
    """``host:pid:start``: names a process even after its pid is reused."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def claimer_alive(claimed_by: str | None) -> bool | None:
    """Whether the process that claimed a job still runs; ``None`` when unknowable.

    Only a claimer on this host can be checked; its start time tells a reused pid apart.
    """
    if not claimed_by:
        return False
    host, _, rest = claimed_by.partition(":")
    pid_text, _, rest = rest.partition(":")
    start = rest.partition("#")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, someone else's
    return _start_ticks(pid) == start


def _start_ticks(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "0"  # no procfs: the pid alone has to do
    return stat.rpartition(")")[2].split()[19]


# -- queue operations ------------------------------------------------------------------
def enqueue(
    conn: Connection,
    workspace_id: int,
    kind: str,
    *,
    document_id: int | None = None,
    payload: dict[str, Any] | None = None,
) -> int:
    """Queue a job inside the caller's transaction (it commits with the caller's rows)."""
    result = conn.execute(
        insert(JobRow)
        .values(
            workspace_id=workspace_id,
            document_id=document_id,
            kind=kind,
            status=QUEUED,
            payload=json.dumps(payload or {}, separators=(",", ":")),
            attempts=0,
            created_at=utcnow(),
        )
        .returning(JobRow.id)
    )
    return int(result.scalar_one())


def claim(
    engine: Engine,
    worker: str,
    *,
    kinds: Collection[str] | None = None,
    workspace_id: int | None = None,
) -> Job | None:
    """The oldest queued job (of ``kinds``, in the workspace, when given), now ``running``
    and owned by ``worker``; ``None`` if none."""
    candidate = select(JobRow.id).where(JobRow.status == QUEUED)
    if kinds is not None:
        candidate = candidate.where(JobRow.kind.in_(list(kinds)))
    if workspace_id is not None:
        candidate = candidate.where(JobRow.workspace_id == workspace_id)
    if engine.dialect.name == "postgresql":
        return _claim_skip_locked(engine, worker, candidate)
    for _ in range(_CLAIM_TRIES):
        with engine.connect() as conn:
            job_id = conn.execute(candidate.order_by(JobRow.id).limit(1)).scalar()
        if job_id is None:
            return None
        with engine.begin() as conn:
            # The status guard is the claim: of racing workers, exactly one matches.
            claimed = conn.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == QUEUED)
                .values(**_claimed_by(worker))
            ).rowcount
        if claimed == 1:
            return get_job(engine, job_id)
    return None


def _claim_skip_locked(engine: Engine, worker: str, candidate: Select[int]) -> Job | None:
    """PostgreSQL: any number of processes claim at once, each skipping the rows another
    one has locked, so none waits on another and each job goes to exactly one."""
    locked = candidate.order_by(JobRow.id).limit(1).with_for_update(skip_locked=True)
    with engine.begin() as conn:
        job_id = conn.execute(locked).scalar()
        if job_id is None:
            return None
        conn.execute(update(JobRow).where(JobRow.id == job_id).values(**_claimed_by(worker)))
    return get_job(engine, job_id)


def _claimed_by(worker: str) -> dict[str, Any]:
    return {
        "status": RUNNING,
        "claimed_by": worker,
        "started_at": utcnow(),
        "attempts": JobRow.attempts + 1,
    }


def complete(engine: Engine, job_id: int, worker: str) -> bool:
    """Mark a job done; ``False`` if it is no longer ``worker``'s (requeued, deleted)."""
    return _finish(engine, job_id, worker, DONE, None)


def fail(engine: Engine, job_id: int, worker: str, error: str) -> bool:
    return _finish(engine, job_id, worker, FAILED, error)


def _finish(engine: Engine, job_id: int, worker: str, status: str, error: str | None) -> bool:
    with engine.begin() as conn:
        return (
            conn.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == RUNNING, JobRow.claimed_by == worker)
                .values(status=status, error=error, finished_at=utcnow())
            ).rowcount
            == 1
        )


def requeue_stale(
    engine: Engine,
    *,
    alive: Callable[[str | None], bool | None] = claimer_alive,
    max_attempts: int = MAX_ATTEMPTS,
) -> RequeueReport:
    """Put back the ``running`` jobs whose claimer died; give up on repeat offenders.

    Jobs claimed on another host are left alone: whether their process lives cannot be
    told from here.
    """
    report = RequeueReport()
    with Session(engine, expire_on_commit=False) as session:
        rows = session.scalars(select(JobRow).where(JobRow.status == RUNNING)).all()
    for row in rows:
        if alive(row.claimed_by) is not False:
            continue
        gave_up = row.attempts >= max_attempts
        values: dict[str, Any] = (
            {
                "status": FAILED,
                "error": f"gave up after {row.attempts} attempts: the process died each time",
                "finished_at": utcnow(),
            }
            if gave_up
            else {"status": QUEUED, "claimed_by": None, "started_at": None}
        )
        with engine.begin() as conn:
            changed = conn.execute(
                update(JobRow)
                .where(
                    JobRow.id == row.id,
                    JobRow.status == RUNNING,
                    JobRow.claimed_by == row.claimed_by,
                )
                .values(**values)
            ).rowcount
        if changed != 1:
            continue
        if gave_up:
            report.abandoned.append(_job(row))
        else:
            report.requeued.append(row.id)
    return report


# -- reads ----------------------------------------------------------------------------
def get_job(engine: Engine, job_id: int, *, workspace_id: int | None = None) -> Job:
    row = get_job_row(engine, job_id, workspace_id=workspace_id)
    return _job(row)


def get_job_row(engine: Engine, job_id: int, *, workspace_id: int | None = None) -> JobRow:
    query = select(JobRow).where(JobRow.id == job_id)
    if workspace_id is not None:
        query = query.where(JobRow.workspace_id == workspace_id)
    with Session(engine, expire_on_commit=False) as session:
        row = session.scalars(query).first()
    if row is None:
        raise NotFound(f"no job {job_id} in this workspace")
    return row


def active_job(engine: Engine, workspace_id: int, kind: str) -> JobRow | None:
    """The queued or running job of ``kind`` for the workspace, if any."""
    query = (
        select(JobRow)
        .where(
            JobRow.workspace_id == workspace_id,
            JobRow.kind == kind,
            JobRow.status.in_(ACTIVE),
        )
        .order_by(JobRow.id)
        .limit(1)
    )
    with Session(engine, expire_on_commit=False) as session:
        return session.scalars(query).first()


def count_jobs(engine: Engine, *, workspace_id: int | None = None, status: str) -> int:
    query = select(func.count(JobRow.id)).where(JobRow.status == status)
    if workspace_id is not None:
        query = query.where(JobRow.workspace_id == workspace_id)
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def _job(row: JobRow) -> Job:
    try:
        payload = json.loads(row.payload or "{}")
    except ValueError:
        payload = {}
    return Job(
        row.id,
        row.workspace_id,
        row.document_id,
        row.kind,
        payload if isinstance(payload, dict) else {},
        row.attempts,
        row.claimed_by,
    )
