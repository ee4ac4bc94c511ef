"""Backups' tables (migration 0017) and all of their SQL.

Rows leave this module as ``backup.models``' dataclasses (``BackupRun``, ``BackupJob``)
or as ``StoredRun`` (a run with what only the service reads: its job's id, host and pid,
heartbeat). ``claim_run`` is the mutex: inserting a ``running`` row fails while another
one exists (the unique partial index ``uq_backup_runs_running``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    delete,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from autorag.backup.models import BackupJob, BackupRun, RunStatus, Trigger
from autorag.store.catalog.models import Base, utcnow
from autorag.times import as_utc, as_utc_or_none

RUNNING: RunStatus = "running"
_RUNNING_ONLY = text("status = 'running'")


class BackupJobRow(Base):
    __tablename__ = "backup_jobs"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    cron: Mapped[str] = mapped_column(String(200))
    destination: Mapped[str] = mapped_column(Text)
    retention_days: Mapped[int] = mapped_column(Integer)
    include_vectors: Mapped[bool] = mapped_column(Boolean, default=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BackupRunRow(Base):
    __tablename__ = "backup_runs"
    __table_args__ = (
        Index("ix_backup_runs_job", "job_id", "started_at"),
        Index(
            "uq_backup_runs_running",
            "status",
            unique=True,
            sqlite_where=_RUNNING_ONLY,
            postgresql_where=_RUNNING_ONLY,
        ),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("backup_jobs.id", ondelete="SET NULL"))
    trigger: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    destination: Mapped[str] = mapped_column(Text)
    archive: Mapped[str | None] = mapped_column(String(300))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    sha256: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    host: Mapped[str] = mapped_column(String(255), default="")
    pid: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    log: Mapped[str] = mapped_column(Text, default="")


J = BackupJobRow
R = BackupRunRow


@dataclass(frozen=True)
class StoredRun:
    """A run with what only the service reads."""

    run: BackupRun
    job_id: int | None
    host: str
    pid: int | None
    heartbeat_at: datetime


# -- runs ------------------------------------------------------------------------------
def claim_run(
    engine: Engine,
    *,
    trigger: Trigger,
    destination: str,
    job_id: int | None,
    host: str,
    pid: int,
) -> int | None:
    """A new ``running`` run; None when another run holds the mutex."""
    now = utcnow()
    values = {
        "job_id": job_id, "trigger": trigger, "status": RUNNING, "destination": destination,
        "started_at": now, "heartbeat_at": now, "host": host, "pid": pid, "log": "",
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            return int(conn.execute(insert(R).values(**values).returning(R.id)).scalar_one())
    except IntegrityError:
        return None


def running_run(engine: Engine) -> StoredRun | None:
    """The run that holds the mutex, if any."""
    return _first(_runs_query().where(R.status == RUNNING), engine)


def heartbeat(engine: Engine, run_id: int) -> bool:
    """The run's heartbeat set to now; False when it is no longer running."""
    statement = update(R).where(R.id == run_id, R.status == RUNNING).values(heartbeat_at=utcnow())
    with engine.begin() as conn:
        return conn.execute(statement).rowcount == 1


def append_log(engine: Engine, run_id: int, line: str) -> None:
    """One line more in the run's log (written at once: a killed run keeps its log)."""
    with engine.begin() as conn:
        current = conn.execute(select(R.log).where(R.id == run_id)).scalar() or ""
        joined = f"{current}\n{line}" if current else line
        conn.execute(update(R).where(R.id == run_id).values(log=joined))


def finish_run(
    engine: Engine,
    run_id: int,
    values: dict[str, Any],
    *,
    on_finished: Callable[[Connection], object] | None = None,
) -> bool:
    """End a running run (``values`` has its status and what it made); False when it was
    not running any more (ended meanwhile as stale by another process). ``on_finished``
    runs in the same transaction when it ended it (its event)."""
    statement = (
        update(R)
        .where(R.id == run_id, R.status == RUNNING)
        .values(**values, finished_at=utcnow(), heartbeat_at=utcnow())
    )
    with engine.begin() as conn:
        ended = conn.execute(statement).rowcount == 1
        if ended and on_finished is not None:
            on_finished(conn)
        return ended


def load_run(engine: Engine, run_id: int) -> StoredRun | None:
    return _first(_runs_query().where(R.id == run_id), engine)


def run_by_archive(engine: Engine, archive: str) -> StoredRun | None:
    """The newest run that wrote an archive of this name."""
    query = _runs_query().where(R.archive == archive).order_by(R.id.desc()).limit(1)
    return _first(query, engine)


def list_runs(engine: Engine, *, limit: int, job_id: int | None = None) -> list[BackupRun]:
    query = _runs_query()
    if job_id is not None:
        query = query.where(R.job_id == job_id)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(R.id.desc()).limit(limit))
        return [_stored(row).run for row in rows]


def runs_started_before(engine: Engine, job_id: int, before: datetime) -> list[BackupRun]:
    """The job's succeeded runs started before ``before``, oldest first."""
    query = (
        _runs_query()
        .where(R.job_id == job_id, R.status == "succeeded", R.started_at < before)
        .order_by(R.started_at, R.id)
    )
    with engine.connect() as conn:
        return [_stored(row).run for row in conn.execute(query)]


def newest_succeeded(engine: Engine, job_id: int) -> int | None:
    query = select(func.max(R.id)).where(R.job_id == job_id, R.status == "succeeded")
    with engine.connect() as conn:
        found = conn.execute(query).scalar()
    return None if found is None else int(found)


def delete_run(engine: Engine, run_id: int) -> None:
    with engine.begin() as conn:
        conn.execute(delete(R).where(R.id == run_id))


def _runs_query() -> Any:
    return select(R.__table__, J.name.label("job_name")).outerjoin(J, J.id == R.job_id)


def _first(query: Any, engine: Engine) -> StoredRun | None:
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else _stored(row)


def _stored(row: Any) -> StoredRun:
    run = BackupRun(
        id=row.id, status=cast("RunStatus", row.status), trigger=cast("Trigger", row.trigger),
        job=row.job_name, destination=row.destination, archive=row.archive,
        size_bytes=row.size_bytes, sha256=row.sha256, started_at=as_utc(row.started_at),
        finished_at=as_utc_or_none(row.finished_at), error=row.error,
        log=tuple(row.log.splitlines()) if row.log else (),
    )  # fmt: skip
    return StoredRun(run, row.job_id, row.host, row.pid, as_utc(row.heartbeat_at))


# -- jobs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredJob:
    id: int
    job: BackupJob


def insert_job(engine: Engine, values: dict[str, Any]) -> bool:
    """A new job; False when the name is taken."""
    now = utcnow()
    try:
        with engine.begin() as conn:
            conn.execute(insert(J).values(**values, created_at=now, updated_at=now))
    except IntegrityError:
        return False
    return True


def update_job(engine: Engine, name: str, values: dict[str, Any]) -> bool:
    statement = update(J).where(J.name == name).values(**values, updated_at=utcnow())
    with engine.begin() as conn:
        return conn.execute(statement).rowcount == 1


def delete_job(engine: Engine, name: str) -> bool:
    """The job removed (its runs stay, no longer linked to it)."""
    with engine.begin() as conn:
        # Set to NULL here too: SQLite enforces ON DELETE only with its foreign keys on.
        job_id = conn.execute(select(J.id).where(J.name == name)).scalar()
        if job_id is None:
            return False
        conn.execute(update(R).where(R.job_id == job_id).values(job_id=None))
        conn.execute(delete(J).where(J.id == job_id))
    return True


def load_job(engine: Engine, name: str) -> StoredJob | None:
    jobs = _jobs(engine, J.name == name)
    return jobs[0] if jobs else None


def list_jobs(engine: Engine) -> list[StoredJob]:
    return _jobs(engine, None)


def jobs_signature(engine: Engine) -> tuple[int, datetime | None]:
    """Changes when a job is added, changed or removed (by this process or another)."""
    with engine.connect() as conn:
        count, newest = conn.execute(select(func.count(), func.max(J.updated_at))).one()
    return int(count), as_utc_or_none(newest)


def _jobs(engine: Engine, condition: Any) -> list[StoredJob]:
    query = select(J.__table__)
    if condition is not None:
        query = query.where(condition)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(J.name)).all()
        last = _last_runs(conn, [row.id for row in rows])
    return [
        StoredJob(row.id, BackupJob(
            name=row.name, cron=row.cron, destination=row.destination,
            retention_days=row.retention_days, include_vectors=bool(row.include_vectors),
            enabled=bool(row.enabled), created_at=as_utc(row.created_at),
            last_run=last.get(row.id),
        ))
        for row in rows
    ]  # fmt: skip


def _last_runs(conn: Any, job_ids: Sequence[int]) -> dict[int, BackupRun]:
    if not job_ids:
        return {}
    newest = (
        select(func.max(R.id)).where(R.job_id.in_(job_ids)).group_by(R.job_id).scalar_subquery()
    )
    rows = conn.execute(_runs_query().where(R.id.in_(newest)))
    return {row.job_id: _stored(row).run for row in rows}
