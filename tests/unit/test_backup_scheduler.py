"""The backup scheduler: one cron job per enabled backup job, reloaded when jobs change
(here or in another process), a scheduled run followed by its job's retention, a run
skipped while another holds the mutex. Its job function is called directly: no test
waits for a clock."""

from __future__ import annotations

import logging
import shutil
import socket
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from tests.workspaces import new_workspace

from autorag.backup import store
from autorag.backup.scheduler import BackupScheduler, check_cron, cron_trigger
from autorag.backup.service import BackupService
from autorag.context import AppContext, open_context
from autorag.store.catalog.models import utcnow


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A catalog migrated once for the module: each test starts from a copy."""
    workspace = new_workspace(tmp_path_factory.mktemp("template") / "kb")
    open_context(workspace).close()
    return workspace.database_file


@pytest.fixture
def app(tmp_path: Path, migrated: Path) -> Iterator[AppContext]:
    workspace = new_workspace(tmp_path / "kb")
    shutil.copyfile(migrated, workspace.database_file)
    workspace.database_file.chmod(0o600)
    context = open_context(workspace)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def service(app: AppContext) -> BackupService:
    return BackupService.for_context(app)


@pytest.fixture
def scheduler(service: BackupService) -> Iterator[BackupScheduler]:
    running = BackupScheduler(service)
    running.start()
    try:
        yield running
    finally:
        running.stop()


def test_cron_expressions_are_checked() -> None:
    check_cron("0 3 * * *")
    check_cron("*/15 8-18 * * mon-fri")
    for wrong in ("0 3 * *", "0 3 * * * *", "61 * * * *", "0 25 * * *", "nonsense"):
        with pytest.raises(ValueError):
            check_cron(wrong)


def test_enabled_jobs_are_scheduled_on_their_cron(
    app: AppContext, service: BackupService, scheduler: BackupScheduler
) -> None:
    service.add_job("nightly", cron="30 3 * * *", destination=service.default_destination)
    service.add_job("paused", cron="0 * * * *", destination="s3://b/p", enabled=False)
    assert service.job("nightly").next_run_at is None  # not reloaded yet
    scheduler.reload()

    nightly = service.job("nightly")
    when = nightly.next_run_at
    assert when is not None and when > utcnow()
    local = when.astimezone()
    assert (local.hour, local.minute) == (3, 30)
    expected = cron_trigger("30 3 * * *").get_next_fire_time(None, datetime.now().astimezone())
    assert when == expected
    assert BackupService.for_context(app).job("nightly") == nightly  # any service here
    assert service.job("paused").next_run_at is None
    assert [j.name for j in service.jobs() if j.next_run_at] == ["nightly"]

    service.update_job("nightly", enabled=False)
    scheduler.reload()
    assert service.job("nightly").next_run_at is None


def test_changes_made_by_another_process_are_seen(
    app: AppContext, service: BackupService, scheduler: BackupScheduler
) -> None:
    assert scheduler.check_changes() is False
    elsewhere = BackupService.for_context(app)  # as another process's, on the same catalog
    elsewhere.add_job("hourly", cron="0 * * * *", destination="s3://b/p")

    assert scheduler.check_changes() is True
    assert service.job("hourly").next_run_at is not None
    assert scheduler.check_changes() is False
    elsewhere.remove_job("hourly")
    assert scheduler.check_changes() is True
    assert service.jobs() == []


def test_a_scheduled_run_makes_a_backup_then_applies_retention(
    app: AppContext, service: BackupService, scheduler: BackupScheduler
) -> None:
    service.add_job(
        "daily", cron="0 2 * * *", destination=service.default_destination, retention_days=1
    )
    old = service.run(job="daily")
    with app.catalog.engine.begin() as conn:
        when = utcnow() - timedelta(days=3)
        conn.execute(update(store.R).where(store.R.id == old.id).values(started_at=when))

    made = scheduler.run_job("daily")

    assert made is not None and made.status == "succeeded", made
    assert (made.trigger, made.job) == ("scheduled", "daily")
    assert [run.id for run in service.runs()] == [made.id]  # the old one deleted


def test_a_scheduled_run_is_skipped_while_another_runs(
    app: AppContext,
    service: BackupService,
    scheduler: BackupScheduler,
    caplog: pytest.LogCaptureFixture,
) -> None:
    service.add_job("daily", cron="0 2 * * *", destination=service.default_destination)
    holder = store.claim_run(
        app.catalog.engine, trigger="manual", destination="s3://b/p", job_id=None,
        host="another-host", pid=1,
    )  # fmt: skip
    assert holder is not None
    with caplog.at_level(logging.WARNING, logger="autorag.backup.scheduler"):
        assert scheduler.run_job("daily") is None
    assert f"scheduled backup daily skipped: a backup is already running (run {holder}" in (
        caplog.text
    )
    assert [run.id for run in service.runs()] == [holder]
    assert scheduler.run_job("removed-meanwhile") is None
    service.update_job("daily", enabled=False)  # by another process: not reloaded here
    with caplog.at_level(logging.INFO, logger="autorag.backup.scheduler"):
        assert scheduler.run_job("daily") is None
    assert "scheduled backup daily skipped: the job is disabled or gone" in caplog.text


def test_start_fails_runs_left_by_a_dead_process_and_stop_unschedules(
    app: AppContext, service: BackupService
) -> None:
    left = store.claim_run(
        app.catalog.engine, trigger="scheduled", destination="s3://b/p", job_id=None,
        host=socket.gethostname(), pid=2**22 + 1,  # above any pid this machine hands out
    )  # fmt: skip
    service.add_job("nightly", cron="0 3 * * *", destination="s3://b/p")
    scheduler = BackupScheduler(service)
    scheduler.start()
    try:
        assert service.get_run(left or 0).status == "failed"
        assert service.job("nightly").next_run_at is not None
    finally:
        scheduler.stop()
    assert not scheduler.running
    assert service.job("nightly").next_run_at is None
