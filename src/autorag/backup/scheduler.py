"""Backup jobs on their cron schedules, in ``autorag serve`` and ``autorag worker``.

One APScheduler cron job per enabled backup job (``CronTrigger.from_crontab``, in this
machine's time zone). ``reload`` reads the jobs again (the server calls it when one
changes); jobs changed by another process are seen within ``check_every_s`` (the
table's newest ``updated_at`` and its count). A scheduled backup that finds another
running (in this process or another: the catalog's mutex) is logged and skipped; after
each one, the job's old backups are deleted (``apply_retention``).
"""

from __future__ import annotations

import logging
import threading
import weakref
from datetime import datetime
from pathlib import Path
from typing import Protocol

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import Engine

from autorag.backup import store
from autorag.backup.models import BackupJob, BackupRun, RetentionReport, Trigger
from autorag.errors import AutoragError, Conflict
from autorag.times import as_utc_or_none

log = logging.getLogger(__name__)

CHECK_EVERY_S = 60.0
_PREFIX = "backup:"  # the ids of the scheduler's jobs that run backup jobs
_CHECK = "backup-jobs-changed"
# A run due while the process was busy or asleep still starts within this many seconds.
_MISFIRE_GRACE_S = 3600


# The scheduler running in this process for a catalog: every service on that catalog
# (one per API request, say) tells its jobs' next runs from it.
_RUNNING: weakref.WeakKeyDictionary[Engine, BackupScheduler] = weakref.WeakKeyDictionary()


def running_scheduler(engine: Engine) -> BackupScheduler | None:
    """The scheduler started in this process on the catalog at ``engine``, if any."""
    return _RUNNING.get(engine)


def cron_trigger(cron: str) -> CronTrigger:
    """The trigger of a five-field cron expression; ``ValueError`` saying what is wrong."""
    return CronTrigger.from_crontab(cron)


def check_cron(cron: str) -> None:
    """``ValueError`` with the reason when ``cron`` is not five valid cron fields."""
    cron_trigger(cron)


class ScheduledService(Protocol):
    """What the scheduler uses of ``BackupService``."""

    engine: Engine

    def jobs(self) -> list[BackupJob]: ...

    def run(
        self,
        destination: str | None = None,
        job: str | None = None,
        trigger: Trigger = "manual",
        include_vectors: bool | None = None,
    ) -> BackupRun: ...

    def apply_retention(self, job: str) -> RetentionReport: ...

    def fail_stale_runs(self) -> list[int]: ...

    def sweep_leftovers(self) -> list[Path]: ...


class BackupScheduler:
    """The enabled backup jobs of ``service``'s catalog, each on its cron schedule."""

    def __init__(self, service: ScheduledService, *, check_every_s: float = CHECK_EVERY_S) -> None:
        self.service = service
        self.check_every_s = check_every_s
        self._scheduler = BackgroundScheduler()
        self._lock = threading.Lock()
        self._signature: tuple[int, datetime | None] | None = None

    @property
    def running(self) -> bool:
        return bool(self._scheduler.running)

    def start(self) -> None:
        """Fail the runs a killed process left ``running`` (and remove its temporary
        files), then schedule the jobs."""
        self.service.fail_stale_runs()
        self.service.sweep_leftovers()
        self._scheduler.start()
        self._scheduler.add_job(
            self.check_changes, "interval", seconds=self.check_every_s, id=_CHECK,
            coalesce=True, max_instances=1,
        )  # fmt: skip
        self.reload()
        _RUNNING[self.service.engine] = self

    def stop(self) -> None:
        """No more runs start; one running goes on until it ends (a backup is not cut)."""
        if _RUNNING.get(self.service.engine) is self:
            del _RUNNING[self.service.engine]
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def reload(self) -> None:
        """Schedule the enabled jobs as the catalog has them now."""
        with self._lock:
            self._signature = store.jobs_signature(self.service.engine)
            jobs = [job for job in self.service.jobs() if job.enabled]
            for scheduled in self._scheduler.get_jobs():
                if scheduled.id.startswith(_PREFIX):
                    scheduled.remove()
            for job in jobs:
                self._schedule(job)
        log.info("backup jobs scheduled: %s", ", ".join(j.name for j in jobs) or "none")

    def _schedule(self, job: BackupJob) -> None:
        try:
            trigger = cron_trigger(job.cron)
        except ValueError as exc:  # written by hand into the catalog: said, not fatal
            log.warning("backup job %s not scheduled: bad cron %r: %s", job.name, job.cron, exc)
            return
        self._scheduler.add_job(
            self.run_job, trigger, args=[job.name], id=_PREFIX + job.name, name=job.name,
            coalesce=True, max_instances=1, misfire_grace_time=_MISFIRE_GRACE_S,
        )  # fmt: skip

    def check_changes(self) -> bool:
        """Reload when the jobs changed since the last look (another process changed
        them); whether it did."""
        try:
            signature = store.jobs_signature(self.service.engine)
        except AutoragError as exc:
            log.warning("backup jobs not checked: %s", exc.message)
            return False
        if signature == self._signature:
            return False
        self.reload()
        return True

    def next_run_at(self, job: str) -> datetime | None:
        scheduled = self._scheduler.get_job(_PREFIX + job) if self.running else None
        if scheduled is None:
            return None
        return as_utc_or_none(getattr(scheduled, "next_run_time", None))

    def run_job(self, name: str) -> BackupRun | None:
        """What the schedule runs: the job's backup, then its retention. Skipped (None)
        while another backup runs."""
        if not any(job.name == name and job.enabled for job in self.service.jobs()):
            # Disabled or removed by another process since the last reload.
            log.info("scheduled backup %s skipped: the job is disabled or gone", name)
            return None
        try:
            run = self.service.run(job=name, trigger="scheduled")
        except Conflict as exc:
            log.warning("scheduled backup %s skipped: %s", name, exc.message)
            return None
        except AutoragError as exc:  # the job was removed meanwhile, say
            log.warning("scheduled backup %s not run: %s", name, exc.message)
            return None
        if run.status == "succeeded":
            self._retain(name)
        return run

    def _retain(self, name: str) -> None:
        try:
            report = self.service.apply_retention(name)
        except AutoragError as exc:
            log.warning("retention of backup job %s not applied: %s", name, exc.message)
            return
        if report.deleted or report.failed:
            log.info(
                "backup job %s: %d old backup(s) deleted, %d could not be: %s",
                name, len(report.deleted), len(report.failed), "; ".join(report.failed),
            )  # fmt: skip
