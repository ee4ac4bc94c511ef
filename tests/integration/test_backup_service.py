"""``BackupService`` on real catalogs (SQLite and PostgreSQL), real archives and a real
SMTP server on loopback: the mutex, runs left by a dead process, what a run records,
the failure e-mail, verify and restore (refused when damaged or while a server holds
the workspace), fetch, retention, jobs, and ``autorag migrate`` copying the tables."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from email.message import Message
from email.parser import BytesParser
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import update
from tests.ports import free_port
from tests.workspaces import new_workspace

from autorag.backup import store
from autorag.backup.models import BackupRun, Progress
from autorag.backup.presence import exclusive_workspace, hold_workspace, workspace_holder
from autorag.backup.service import BackupService, backup_dir
from autorag.context import AppContext, open_context
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.store.catalog import outbox
from autorag.store.catalog.models import utcnow
from autorag.workspace import Workspace

WAIT_S = 60.0  # a generous deadline for what a thread or process does meanwhile


def _poll(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite catalog migrated once for the module: each test starts from a copy."""
    workspace = new_workspace(tmp_path_factory.mktemp("template") / "kb")
    open_context(workspace).close()
    return workspace.database_file


def _sqlite_workspace(root: Path, migrated: Path, **config: Any) -> Workspace:
    workspace = new_workspace(root, **config)
    shutil.copyfile(migrated, workspace.database_file)
    workspace.database_file.chmod(0o600)
    return workspace


@pytest.fixture
def workspace(
    tmp_path: Path, catalog_url: str | None, migrated: Path, request: pytest.FixtureRequest
) -> Workspace:
    if catalog_url is None:
        return _sqlite_workspace(tmp_path / "kb", migrated)
    # The test server's own pg_dump and psql: Debian's may be older than the server.
    server = request.getfixturevalue("postgres_server")
    backup = {"pg_bin_dir": str(server.bin_dir)}
    return new_workspace(tmp_path / "kb", catalog_url, backup=backup)


@pytest.fixture
def sqlite_workspace(tmp_path: Path, migrated: Path) -> Workspace:
    return _sqlite_workspace(tmp_path / "kb", migrated)


def _context(workspace: Workspace) -> Iterator[AppContext]:
    context = open_context(workspace)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def app(workspace: Workspace) -> Iterator[AppContext]:
    yield from _context(workspace)


@pytest.fixture
def sqlite_app(sqlite_workspace: Workspace) -> Iterator[AppContext]:
    yield from _context(sqlite_workspace)


def _service(app: AppContext) -> BackupService:
    return BackupService.for_context(app)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# -- the mutex ---------------------------------------------------------------------------
def test_a_second_run_is_refused_while_one_runs(app: AppContext) -> None:
    """On SQLite and PostgreSQL: the running row is the mutex, across threads (and
    processes: the index is the database's)."""
    service = _service(app)
    entered, release = threading.Event(), threading.Event()
    finished: list[BackupRun] = []

    def hold(step: Progress) -> None:
        if not entered.is_set():
            entered.set()
            release.wait(WAIT_S)

    first = threading.Thread(target=lambda: finished.append(service.run(progress=hold)))
    first.start()
    try:
        _poll(entered.is_set, "the first run to start")
        running = store.running_run(app.catalog.engine)
        assert running is not None
        with pytest.raises(Conflict) as refused:
            _service(app).run()
        assert f"a backup is already running (run {running.run.id}, started" in str(refused.value)
        assert refused.value.code == "backup_running"
    finally:
        release.set()
        first.join(WAIT_S)
    (done,) = finished
    assert done.id == running.run.id and done.status == "succeeded", done.error
    again = service.run()  # the mutex is free again
    assert again.status == "succeeded" and again.id > done.id
    assert [run.id for run in service.runs()] == [again.id, done.id]


def test_a_run_left_by_a_dead_process_is_failed_and_frees_the_lock(
    sqlite_app: AppContext,
) -> None:
    engine = sqlite_app.catalog.engine
    service = _service(sqlite_app)
    left = store.claim_run(
        engine, trigger="manual", destination="local:/x", job_id=None,
        host=socket.gethostname(), pid=_dead_pid(),
    )  # fmt: skip
    assert left is not None
    partial = backup_dir(sqlite_app.workspace, sqlite_app.settings) / f".run-{left}.partial"
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(b"half an archive")

    made = service.run()

    assert made.status == "succeeded", made.error
    dead = service.get_run(left)
    assert (dead.status, dead.error) == ("failed", "interrupted")
    assert "is gone" in dead.log[-1] and dead.finished_at is not None
    assert not partial.exists()


def test_leftovers_of_killed_processes_are_swept(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    folder = service.local_dir()
    old_fetch, new_fetch = folder / ".fetch-old", folder / ".fetch-new"
    for fetch in (old_fetch, new_fetch):
        fetch.mkdir()
        (fetch / "autorag-x.autorag-backup").write_bytes(b"a copy")
    old_partial = folder / ".run-7.partial"
    old_partial.write_bytes(b"half")
    kept = folder / "autorag-old.autorag-backup"  # an archive: never a leftover
    kept.write_bytes(b"an archive")
    two_days_ago = time.time() - 2 * 86400
    for path in (old_fetch, old_partial, kept):
        os.utime(path, (two_days_ago, two_days_ago))

    assert sorted(p.name for p in service.sweep_leftovers()) == [".fetch-old", ".run-7.partial"]
    assert sorted(p.name for p in folder.iterdir()) == [".fetch-new", kept.name]


def test_stale_runs_elsewhere_by_heartbeat_and_age(sqlite_app: AppContext) -> None:
    engine = sqlite_app.catalog.engine
    service = _service(sqlite_app)

    def claim() -> int:
        run_id = store.claim_run(
            engine, trigger="scheduled", destination="local:/x", job_id=None,
            host="another-host", pid=1,
        )  # fmt: skip
        assert run_id is not None
        return run_id

    alive = claim()  # another host, heartbeat fresh: it runs
    assert store.heartbeat(engine, alive) is True
    assert service.fail_stale_runs() == []
    with pytest.raises(Conflict, match=f"run {alive}, .* by pid 1 on another-host"):
        service.run()
    _age(engine, alive, heartbeat=timedelta(minutes=10))
    assert service.fail_stale_runs() == [alive]
    assert "no heartbeat from another-host" in service.get_run(alive).log[-1]
    assert store.heartbeat(engine, alive) is False  # no longer running: its beat is refused

    old = claim()  # older than backup.stale_after_hours (2 h), still beating: it runs
    _age(engine, old, started=timedelta(hours=3))
    assert service.fail_stale_runs() == []
    _age(engine, old, started=timedelta(hours=3), heartbeat=timedelta(minutes=2))
    assert service.fail_stale_runs() == [old]  # old and quiet for a while
    assert "more than 2 h ago" in service.get_run(old).log[-1]


def _age(
    engine: Any,
    run_id: int,
    *,
    heartbeat: timedelta = timedelta(),
    started: timedelta = timedelta(),
) -> None:
    now = utcnow()
    with engine.begin() as conn:
        conn.execute(
            update(store.R)
            .where(store.R.id == run_id)
            .values(heartbeat_at=now - heartbeat, started_at=now - started)
        )


# -- what a run records --------------------------------------------------------------------
def test_a_backup_is_written_privately_and_recorded(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    steps: list[str] = []
    started: list[BackupRun] = []
    made = service.run(progress=lambda step: steps.append(step.step), on_start=started.append)

    assert made.status == "succeeded", made.error
    assert [(run.id, run.status) for run in started] == [(made.id, "running")]
    folder = backup_dir(sqlite_app.workspace, sqlite_app.settings)
    assert made.destination == f"local:{folder}" and made.trigger == "manual"
    assert made.archive is not None and made.archive.endswith(".autorag-backup")
    stored = folder / made.archive
    assert made.size_bytes == stored.stat().st_size and made.sha256 == _sha256(stored)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir()] == [made.archive]  # no partial file left
    assert any("archive written" in line for line in made.log)
    assert any(f"stored as {made.archive}" in line for line in made.log)
    assert "archive" in steps and "upload" in steps
    assert service.get_run(made.id) == made
    (event,) = outbox.list_events(sqlite_app.catalog.engine, names=["backup.completed"], limit=1)
    assert event.data == {
        "run": made.id, "trigger": "manual", "job": None, "archive": made.archive,
        "sizeBytes": made.size_bytes,
    }  # fmt: skip


@pytest.fixture(scope="module")
def smtp() -> Iterator[tuple[str, int, list[Message]]]:
    """An SMTP server on loopback keeping what it is sent."""
    received: list[Message] = []

    class Keep:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            parsed = BytesParser(policy=default_policy).parsebytes(envelope.content)
            received.append(parsed)
            return "250 OK"

    port = free_port()
    controller = Controller(Keep(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield "127.0.0.1", port, received
    finally:
        controller.stop()


def test_a_failed_run_is_recorded_and_mailed(
    tmp_path: Path, migrated: Path, smtp: tuple[str, int, list[Message]]
) -> None:
    host, port, received = smtp
    workspace = _sqlite_workspace(
        tmp_path / "kb",
        migrated,
        backup={
            "notify_email": ["ops@example.org"],
            "smtp": {"host": host, "port": port, "security": "none"},
        },
    )
    context = open_context(workspace)
    try:
        failed = _service(context).run(destination="local:/proc/no-backups-here")
        announced = outbox.list_events(context.catalog.engine, names=["backup.failed"])
    finally:
        context.close()

    assert failed.status == "failed" and failed.error and failed.archive is None
    assert failed.log[-1] == f"failed: {failed.error}"
    assert [e.data for e in announced] == [{"run": failed.id, "interrupted": False}]
    message = _poll(lambda: received[-1] if received else None, "the failure e-mail")
    assert message["To"] == "ops@example.org"
    assert str(workspace.root) in message["Subject"] and "backup failed" in message["Subject"]
    assert failed.error[:40] in message["Subject"]
    assert f"Run: {failed.id}" in message.get_content()
    assert not list(backup_dir(workspace, context.settings).glob("*.partial"))


# -- verify, restore, fetch ----------------------------------------------------------------
def test_verify_and_fetch(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    made = service.run()
    report = service.verify(made.id)
    assert report.ok and report.checksum_matches and report.decrypted, report.problems
    assert service.verify(made.archive or "").ok  # by the archive's name

    fetched = service.fetch(made.id)
    assert fetched.name == made.archive and _sha256(fetched.path) == made.sha256
    assert stat.S_IMODE(fetched.path.stat().st_mode) == 0o600
    fetched.release()
    assert not fetched.path.exists() and not fetched.path.parent.exists()

    failed = service.run(destination="local:/proc/no-backups-here")
    with pytest.raises(NotFound, match=f"run {failed.id} made no archive"):
        service.fetch(failed.id)
    with pytest.raises(NotFound, match="no backup run 999"):
        service.verify(999)
    with pytest.raises(NotFound, match="no backup 'nothing-like-it'"):
        service.verify("nothing-like-it")


def test_a_damaged_backup_is_refused_and_nothing_is_touched(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    made = service.run()
    archive = backup_dir(sqlite_app.workspace, sqlite_app.settings) / (made.archive or "")
    damaged = bytearray(archive.read_bytes())
    damaged[len(damaged) // 2] ^= 0x01
    archive.write_bytes(bytes(damaged))
    catalog = sqlite_app.workspace.database_file.read_bytes()

    assert not service.verify(made.id).ok
    with pytest.raises(InvalidInput, match=f"refused to restore {made.archive}") as refused:
        service.restore(made.id)
    assert refused.value.code == "backup_invalid"
    assert [run.id for run in service.runs()] == [made.id]  # no safety backup either
    assert sqlite_app.workspace.database_file.read_bytes() == catalog


def test_restore_makes_a_safety_backup_and_keeps_the_history(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    service.add_job("nightly", cron="0 3 * * *", destination=service.default_destination)
    made = service.run(job="nightly")
    service.remove_job("nightly")  # after the backup: the restore must not bring it back

    report = service.restore(made.id)

    assert report.archive == made.archive and report.safety_run is not None
    safety = report.safety_run
    assert (safety.status, safety.trigger) == ("succeeded", "safety")
    assert safety.destination == f"local:{backup_dir(sqlite_app.workspace, sqlite_app.settings)}"
    # The backup tables are carried over: the history (safety run included) and the jobs
    # as they were before the restore.
    assert [run.id for run in service.runs()] == [safety.id, made.id]
    assert service.jobs() == []


def test_restore_is_refused_while_a_server_holds_the_workspace(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    made = service.run()
    with hold_workspace(sqlite_app.workspace):
        assert workspace_holder(sqlite_app.workspace) == f"pid {os.getpid()}"
        with pytest.raises(Conflict, match=rf"a server \(pid {os.getpid()}\) is running"):
            service.restore(made.id)
        assert [run.id for run in service.runs()] == [made.id]  # nothing was done
        report = service.restore(made.id, in_server=True)  # the server restoring itself
        assert report.safety_run is not None
    assert workspace_holder(sqlite_app.workspace) is None
    # A restore holds it: no server starts.
    with (
        exclusive_workspace(sqlite_app.workspace),
        pytest.raises(Conflict, match="a backup is being restored"),
    ):
        hold_workspace(sqlite_app.workspace)


# -- retention and jobs --------------------------------------------------------------------
def test_retention_deletes_old_backups_and_goes_on_past_a_failure(
    sqlite_app: AppContext,
) -> None:
    service = _service(sqlite_app)
    engine = sqlite_app.catalog.engine
    folder = backup_dir(sqlite_app.workspace, sqlite_app.settings)
    service.add_job("daily", cron="0 2 * * *", destination=f"local:{folder}", retention_days=7)
    runs = [service.run(job="daily") for _ in range(4)]
    other = service.run()  # not the job's: never touched by its retention
    for run in runs[:3]:
        _age(engine, run.id, started=timedelta(days=8))
    with engine.begin() as conn:  # this one's destination cannot be opened any more
        conn.execute(
            update(store.R).where(store.R.id == runs[1].id).values(destination="nowhere:x")
        )

    report = service.apply_retention("daily")

    assert report.job == "daily"
    assert report.deleted == (runs[0].archive, runs[2].archive)
    (failure,) = report.failed
    assert failure.startswith(f"{runs[1].archive}: ")
    assert [run.id for run in service.runs()] == [other.id, runs[3].id, runs[1].id]
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        str(run.archive) for run in (runs[1], runs[3], other)
    )


def test_retention_keeps_a_jobs_newest_backup(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    service.add_job("weekly", cron="0 4 * * 0", destination=service.default_destination)
    made = service.run(job="weekly")
    _age(sqlite_app.catalog.engine, made.id, started=timedelta(days=90))
    assert service.apply_retention("weekly").deleted == ()
    assert service.get_run(made.id).status == "succeeded"


def test_jobs_are_added_checked_changed_and_removed(sqlite_app: AppContext) -> None:
    service = _service(sqlite_app)
    job = service.add_job(
        "nightly", cron="0  3 * * *", destination="s3://bucket/autorag", include_vectors=False
    )
    assert (job.name, job.cron, job.destination) == ("nightly", "0 3 * * *", "s3://bucket/autorag")
    assert (job.retention_days, job.include_vectors, job.enabled) == (30, False, True)
    assert job.last_run is None and job.next_run_at is None  # no scheduler here

    with pytest.raises(Conflict, match="'nightly' exists"):
        service.add_job("nightly", cron="0 3 * * *", destination="s3://b/p")
    with pytest.raises(InvalidInput, match="bad cron expression"):
        service.add_job("hourly", cron="0 3 * *", destination="s3://b/p")
    with pytest.raises(InvalidInput, match="bad cron expression"):
        service.add_job("hourly", cron="61 * * * *", destination="s3://b/p")
    with pytest.raises(InvalidInput, match="bad job name"):
        service.add_job("../x", cron="0 3 * * *", destination="s3://b/p")
    with pytest.raises(InvalidInput, match="password"):
        service.add_job("ftp", cron="0 3 * * *", destination="ftp://me:secret@host/backups")
    with pytest.raises(InvalidInput):
        service.add_job("odd", cron="0 3 * * *", destination="nowhere:x")
    assert [j.name for j in service.jobs()] == ["nightly"]

    changed = service.update_job("nightly", cron="30 1 * * 1-5", retention_days=3, enabled=False)
    assert (changed.cron, changed.retention_days, changed.enabled) == ("30 1 * * 1-5", 3, False)
    with pytest.raises(NotFound):
        service.update_job("missing", enabled=True)

    service.add_job("local", cron="0 3 * * *", destination=service.default_destination)
    made = service.run(job="local")
    assert made.job == "local" and made.trigger == "manual"
    assert service.job("local").last_run == made
    service.remove_job("local")
    assert service.get_run(made.id).job is None  # the history stays
    with pytest.raises(NotFound):
        service.remove_job("local")
    assert [j.name for j in service.jobs()] == ["nightly"]


def test_rekey_reports_what_it_resealed(sqlite_app: AppContext) -> None:
    report = _service(sqlite_app).rekey()
    assert not report.failed


# -- autorag migrate -----------------------------------------------------------------------
@pytest.mark.postgres
def test_migrate_copies_the_backup_tables(sqlite_app: AppContext, postgres_server: Any) -> None:
    from autorag.ops.migrate import migrate_to

    service = _service(sqlite_app)
    service.add_job("nightly", cron="0 3 * * *", destination=service.default_destination)
    made = service.run(job="nightly")
    url = postgres_server.new_database(migrated=False)

    report = migrate_to(sqlite_app, url, samples=0)

    counts = {t.table: (t.source, t.target) for t in report.tables}
    assert counts["backup_jobs"] == (1, 1) and counts["backup_runs"] == (1, 1)
    copy = open_context(sqlite_app.workspace, database_url=url)
    try:
        copied = _service(copy)
        assert copied.get_run(made.id) == made
        assert copied.job("nightly").last_run == made
        assert copied.run().id == made.id + 1  # new rows get ids after the copied ones
    finally:
        copy.close()
