"""The durable job queue: claims are exclusive, dead claimers' jobs come back."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from autorag.store.catalog import queue
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.models import JobRow
from autorag.store.catalog.repository import Catalog


@pytest.fixture
def engine(tmp_path: Path, catalog_url: str | None) -> Engine:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    Catalog(engine).ensure_workspace("default")
    return engine


def _enqueue(engine: Engine, n: int = 1) -> list[int]:
    with engine.begin() as conn:
        return [queue.enqueue(conn, 1, "test", payload={"n": i}) for i in range(n)]


def _status(engine: Engine, job_id: int) -> tuple[str, int, str | None]:
    with engine.connect() as conn:
        row = conn.execute(
            select(JobRow.status, JobRow.attempts, JobRow.claimed_by).where(JobRow.id == job_id)
        ).one()
    return row[0], row[1], row[2]


def test_claim_complete_fail(engine: Engine) -> None:
    first, second = _enqueue(engine, 2)
    job = queue.claim(engine, "w1")
    assert job is not None and job.id == first and job.payload == {"n": 0}
    assert _status(engine, first) == ("running", 1, "w1")
    assert not queue.complete(engine, first, "w2")  # not w2's job
    assert queue.complete(engine, first, "w1")
    assert _status(engine, first)[0] == "done"
    job = queue.claim(engine, "w1")
    assert job is not None and job.id == second
    assert queue.fail(engine, second, "w1", "boom")
    assert _status(engine, second)[0] == "failed"
    assert queue.claim(engine, "w1") is None


def test_concurrent_claims_take_each_job_once(engine: Engine) -> None:
    ids = _enqueue(engine, 60)
    taken: list[list[int]] = [[] for _ in range(6)]

    def work(index: int) -> None:
        while (job := queue.claim(engine, f"w{index}")) is not None:
            taken[index].append(job.id)
            queue.complete(engine, job.id, f"w{index}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [job_id for claimed in taken for job_id in claimed]
    assert sorted(everything) == ids


def _run_as(engine: Engine, job_id: int, claimer: str, attempts: int = 1) -> None:
    with engine.begin() as conn:
        conn.execute(
            JobRow.__table__.update()
            .where(JobRow.id == job_id)
            .values(status="running", claimed_by=claimer, attempts=attempts)
        )


def test_requeue_stale_only_takes_back_dead_claimers(engine: Engine) -> None:
    dead, alive, foreign, hopeless = _enqueue(engine, 4)
    host = socket.gethostname()
    _run_as(engine, dead, f"{host}:{2**22 + 12345}:1#0")  # above any pid_max
    _run_as(engine, alive, f"{queue.process_identity()}#0")
    _run_as(engine, foreign, "some-other-host:1:1#0")
    _run_as(engine, hopeless, f"{host}:{2**22 + 12346}:1#0", attempts=queue.MAX_ATTEMPTS)
    report = queue.requeue_stale(engine)
    assert report.requeued == [dead]
    assert [j.id for j in report.abandoned] == [hopeless]
    assert _status(engine, dead) == ("queued", 1, None)
    assert _status(engine, alive)[0] == "running"
    assert _status(engine, foreign)[0] == "running"
    assert _status(engine, hopeless)[0] == "failed"
    job = queue.claim(engine, "w")
    assert job is not None and job.id == dead and job.attempts == 2


def test_claimer_identity_survives_pid_reuse() -> None:
    me = queue.process_identity()
    assert queue.claimer_alive(me + "#3") is True
    host, pid, _start = me.split(":")
    assert queue.claimer_alive(f"{host}:{pid}:999999999#0") is False  # same pid, new process
    assert queue.claimer_alive(f"elsewhere:{os.getpid()}:1") is None
    assert queue.claimer_alive(None) is False
