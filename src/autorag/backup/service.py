"""``BackupService``: backups as every face uses them (commands, routes, the scheduler).

``run`` makes one backup: it takes the mutex (a ``running`` row; ``Conflict`` while
another process backs up), writes the encrypted archive to a temporary file (0600) in
the local backup folder, puts it at the destination (retried) and records what it made;
a failure is recorded and e-mailed. ``restore`` reads one back: verified first (refused
with its problems, nothing touched), refused while a server holds the workspace, a
safety backup of what it replaces, then the all-or-nothing restore. Jobs schedule runs
(``backup.scheduler``) and keep each job's backups ``retention_days``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine

from autorag import audit
from autorag.backup import notify, store
from autorag.backup.models import (
    ARCHIVE_SUFFIX,
    BackupJob,
    BackupRun,
    Progress,
    RekeyReport,
    RestoreReport,
    RetentionReport,
    Trigger,
    VerifyReport,
)
from autorag.backup.presence import exclusive_workspace
from autorag.backup.scheduler import check_cron, running_scheduler
from autorag.backup.store import StoredJob, StoredRun
from autorag.config import Settings
from autorag.errors import AutoragError, Conflict, InvalidInput, NotFound, Unavailable
from autorag.ingest.parsers.guards import human_size
from autorag.private_files import make_private_dir
from autorag.store.catalog import outbox
from autorag.store.catalog.models import utcnow
from autorag.store.catalog.repository import Catalog
from autorag.workspace import Workspace

if TYPE_CHECKING:
    from autorag.backup.destinations.base import Destination
    from autorag.context import AppContext
    from autorag.keyring import Keyring

__all__ = ["JOB_NAME", "BackupService", "FetchedArchive", "backup_dir"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[Progress], None]
MAX_RUNS = 500
HEARTBEAT_S = 10.0  # a running run's heartbeat, written this often
# A running run whose heartbeat is older is taken for dead, wherever its process was.
STALE_HEARTBEAT = timedelta(minutes=5)
QUIET_HEARTBEAT = timedelta(minutes=1)  # with a heartbeat every HEARTBEAT_S: a missed few
JOB_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_JOB_NAME = re.compile(JOB_NAME)
PARTIAL_SUFFIX = ".partial"  # an archive being written or fetched, in the backup folder
INTERRUPTED = "interrupted"
LEFTOVER_AGE = timedelta(days=1)
_LEFTOVERS = (".run-", ".fetch-")  # what runs and fetches write in the backup folder
_EVENT_RESTORED = "backup.restored"

# Runs this process is making: a row naming this pid but not here was left by a
# thread that died (or by a process whose pid was reused for this one). Held while a
# run is claimed, so no thread here takes a run being claimed for a stale one.
_ACTIVE: set[int] = set()
_ACTIVE_LOCK = threading.RLock()


def backup_dir(workspace: Workspace, settings: Settings) -> Path:
    """The local backup folder: ``backup.dir``, else ``backups/`` in the data folder."""
    return settings.backup.dir or workspace.backups_dir


def archive_name(moment: datetime) -> str:
    """``autorag-20261204T174233Z-1a2b3c4d.autorag-backup``: sorts by time, never clashes."""
    return f"autorag-{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}{ARCHIVE_SUFFIX}"


@dataclass(frozen=True)
class FetchedArchive:
    """An archive as a local file: ``release`` when done with it (a copy fetched from
    the destination is removed then)."""

    path: Path
    name: str  # the archive's name at its destination
    sha256: str | None  # as recorded when it was made; None for a file given by path
    temporary: bool

    def release(self) -> None:
        if self.temporary:
            self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                self.path.parent.rmdir()


@dataclass(frozen=True)
class _Claim:
    run: BackupRun
    url: str
    include_vectors: bool


class BackupService:
    """Backups of one workspace (see the module docstring)."""

    def __init__(
        self, workspace: Workspace, engine: Engine, settings: Settings, keyring: Keyring
    ) -> None:
        self.workspace = workspace
        self.engine = engine
        self.settings = settings
        self.keyring = keyring

    @classmethod
    def for_context(cls, context: AppContext) -> BackupService:
        from autorag.keyring import workspace_keyring

        keyring = workspace_keyring(context.workspace.data_dir)
        return cls(context.workspace, context.catalog.engine, context.settings, keyring)

    def local_dir(self) -> Path:
        """The local backup folder, made 0700 when it is ours (a folder the user chose
        keeps its mode; the archives in it are 0600 all the same)."""
        return make_private_dir(
            backup_dir(self.workspace, self.settings),
            tighten_existing=self.settings.backup.dir is None,
        )

    @property
    def default_destination(self) -> str:
        return self.settings.backup.destination or f"local:{self.local_dir()}"

    # -- making backups ----------------------------------------------------------------
    def run(
        self,
        destination: str | None = None,
        job: str | None = None,
        trigger: Trigger = "manual",
        include_vectors: bool | None = None,
        progress: ProgressCallback | None = None,
        on_start: Callable[[BackupRun], None] | None = None,
    ) -> BackupRun:
        """Make a backup (see the module docstring) and return its run, succeeded or
        failed. ``Conflict`` (nothing recorded) while another run holds the mutex.
        ``on_start`` is told the run as soon as it holds the mutex."""
        claim = self._claim(destination, job, trigger, include_vectors)
        return self._perform(claim, progress, on_start)

    def _claim(
        self,
        destination: str | None,
        job: str | None,
        trigger: Trigger,
        include_vectors: bool | None,
    ) -> _Claim:
        stored = self._job(job) if job is not None else None
        url = self._checked_destination(
            destination or (stored.job.destination if stored else None) or self.default_destination
        )
        if include_vectors is None:
            include_vectors = (
                stored.job.include_vectors if stored else self.settings.backup.include_vectors
            )
        values: dict[str, Any] = {
            "trigger": trigger, "destination": url, "job_id": stored.id if stored else None,
            "host": socket.gethostname(), "pid": os.getpid(),
        }  # fmt: skip
        with _ACTIVE_LOCK:
            run_id = store.claim_run(self.engine, **values)
            if run_id is None and self.fail_stale_runs():
                run_id = store.claim_run(self.engine, **values)
            if run_id is not None:
                _ACTIVE.add(run_id)
        if run_id is None:
            raise _already_running(store.running_run(self.engine))
        return _Claim(self.get_run(run_id), url, include_vectors)

    def _perform(
        self,
        claim: _Claim,
        progress: ProgressCallback | None,
        on_start: Callable[[BackupRun], None] | None,
    ) -> BackupRun:
        run_id = claim.run.id
        # In the backup folder: a local destination there takes it by a rename.
        partial = backup_dir(self.workspace, self.settings) / f".run-{run_id}{PARTIAL_SUFFIX}"
        beat = _Heartbeat(self.engine, run_id)
        beat.start()
        try:
            if on_start is not None:
                on_start(claim.run)
            self.local_dir()
            self._make(claim, partial, progress)
        except (AutoragError, OSError) as exc:
            return self._failed(run_id, _reason(exc))
        except BaseException as exc:
            self._failed(run_id, INTERRUPTED if _interrupt(exc) else _reason(exc))
            raise
        finally:
            beat.stop()
            partial.unlink(missing_ok=True)
            with _ACTIVE_LOCK:
                _ACTIVE.discard(run_id)
        return self.get_run(run_id)

    def _make(self, claim: _Claim, partial: Path, progress: ProgressCallback | None) -> None:
        from autorag.backup.archive import write_archive

        run_id = claim.run.id
        say = _Say(self.engine, run_id, progress)
        vectors = "with" if claim.include_vectors else "without"
        say.line(f"backing up {self.workspace.root} ({vectors} vectors)")
        manifest, size, sha256 = write_archive(
            self.workspace, self.settings, self.engine, self.keyring.current, partial,
            include_vectors=claim.include_vectors, progress=progress,
        )  # fmt: skip
        say.line(
            f"archive written: {len(manifest.files)} files, {human_size(size)}, sha256 {sha256}"
            f"{'' if manifest.vectors_included else ' (vectors to be rebuilt on restore)'}"
        )
        name = archive_name(utcnow())
        destination = self._destination(claim.url)
        say("upload", f"putting {name} at {destination.label}", total=size)
        self._put(destination, partial, name, say)
        say("upload", f"stored as {name} at {destination.label}", done=size, total=size)
        values = {"status": "succeeded", "archive": name, "size_bytes": size, "sha256": sha256}
        done = {"trigger": claim.run.trigger, "job": claim.run.job, "archive": name}
        announce = _announce("backup.completed", run_id, **done, sizeBytes=size)
        if not store.finish_run(self.engine, run_id, values, on_finished=announce):
            raise Conflict(f"run {run_id} was marked failed meanwhile (taken for stale)")

    def _put(self, destination: Destination, partial: Path, name: str, say: _Say) -> None:
        from autorag.backup.destinations import put_with_retry
        from autorag.backup.destinations.local import LocalDestination

        if isinstance(destination, LocalDestination):
            destination.adopt(partial, name)  # a rename when on the same file system
        else:
            put_with_retry(destination, partial, name, on_retry=say.line)

    def _failed(self, run_id: int, error: str) -> BackupRun:
        store.append_log(self.engine, run_id, f"failed: {error}")
        announce = _announce("backup.failed", run_id, interrupted=error == INTERRUPTED)
        values = {"status": "failed", "error": error}
        store.finish_run(self.engine, run_id, values, on_finished=announce)
        run = self.get_run(run_id)
        log.warning("backup run %d failed: %s", run_id, error)
        notify.send_failure(self.settings.backup, str(self.workspace.root), run)
        return run

    def fail_stale_runs(self) -> list[int]:
        """Free the mutex of a run left ``running`` by a process that is gone: its
        process on this host is dead, its heartbeat stopped, or it started more than
        ``backup.stale_after_hours`` ago. It is marked failed ("interrupted"); the ids."""
        stored = store.running_run(self.engine)
        if stored is None:
            return []
        why = self._stale_reason(stored)
        if why is None:
            return []
        run_id = stored.run.id
        store.append_log(self.engine, run_id, f"{INTERRUPTED}: {why}")
        values = {"status": "failed", "error": INTERRUPTED}
        announce = _announce("backup.failed", run_id, interrupted=True)
        if not store.finish_run(self.engine, run_id, values, on_finished=announce):
            return []
        log.warning("backup run %d marked failed: %s", run_id, why)
        if stored.host == socket.gethostname():
            (self.local_dir() / f".run-{run_id}{PARTIAL_SUFFIX}").unlink(missing_ok=True)
        return [run_id]

    def sweep_leftovers(self) -> list[Path]:
        """Remove what processes killed while writing or fetching an archive left in the
        local backup folder (``.run-*`` and ``.fetch-*``, untouched for a day: a younger
        one may be in use); what was removed."""
        folder = backup_dir(self.workspace, self.settings)
        if not folder.is_dir():
            return []
        cutoff = time.time() - LEFTOVER_AGE.total_seconds()
        removed = []
        for entry in folder.iterdir():
            if not entry.name.startswith(_LEFTOVERS):
                continue
            try:
                if entry.lstat().st_mtime > cutoff:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            except OSError as exc:  # someone else's, or gone meanwhile: left as it is
                log.warning("backup leftover %s not removed: %s", entry, exc)
                continue
            removed.append(entry)
        return removed

    def _stale_reason(self, stored: StoredRun) -> str | None:
        now = utcnow()
        if stored.host == socket.gethostname():
            if _alive(stored.pid, stored.run.id):
                return None  # a long backup still at work here is never taken from it
            return f"its process (pid {stored.pid}) is gone"
        if now - stored.heartbeat_at > STALE_HEARTBEAT:
            return f"no heartbeat from {stored.host} since {stored.heartbeat_at:%Y-%m-%d %H:%M} UTC"
        # The seed's ceiling, for another host's run that beats irregularly: old, and not
        # heard from within the last minute.
        limit = timedelta(hours=self.settings.backup.stale_after_hours)
        quiet = now - stored.heartbeat_at > QUIET_HEARTBEAT
        if now - stored.run.started_at > limit and quiet:
            return f"it started more than {self.settings.backup.stale_after_hours:g} h ago"
        return None

    # -- reading runs ------------------------------------------------------------------
    def runs(self, limit: int = 100) -> list[BackupRun]:
        """The runs, newest first."""
        return store.list_runs(self.engine, limit=max(1, min(limit, MAX_RUNS)))

    def get_run(self, run_id: int) -> BackupRun:
        return self._stored_run(run_id).run

    def _stored_run(self, run_id: int) -> StoredRun:
        stored = store.load_run(self.engine, run_id)
        if stored is None:
            raise NotFound(f"no backup run {run_id}", code="backup_run_not_found")
        return stored

    def fetch(self, ref: int | str | Path) -> FetchedArchive:
        """The archive of a run (by id or archive name) as a local file, fetched from its
        destination; or a file given by path. ``release`` it when done."""
        if isinstance(ref, Path) or (isinstance(ref, str) and _is_file(ref)):
            path = Path(ref)
            return FetchedArchive(path, path.name, None, temporary=False)
        stored = self._run_of(ref)
        run = stored.run
        if run.status != "succeeded" or run.archive is None:
            raise NotFound(
                f"backup run {run.id} made no archive ({run.status}"
                f"{f': {run.error}' if run.error else ''})",
                code="backup_archive_not_found",
            )
        # A folder of its own (0700): the copy keeps the archive's name, which reports show.
        folder = Path(tempfile.mkdtemp(prefix=".fetch-", dir=self.local_dir()))
        fetched = FetchedArchive(folder / run.archive, run.archive, run.sha256, temporary=True)
        try:
            self._destination(run.destination).get(run.archive, fetched.path)
        except BaseException:
            fetched.release()
            raise
        return fetched

    def _run_of(self, ref: int | str) -> StoredRun:
        if isinstance(ref, int) or ref.isdigit():
            return self._stored_run(int(ref))
        stored = store.run_by_archive(self.engine, ref)
        if stored is None:
            raise NotFound(
                f"no backup {ref!r}: give a run id (autorag backup list), an archive name, "
                "or the path of an archive file",
                code="backup_not_found",
            )
        return stored

    @contextlib.contextmanager
    def _fetched(self, ref: int | str | Path) -> Iterator[FetchedArchive]:
        fetched = self.fetch(ref)
        try:
            yield fetched
        finally:
            fetched.release()

    # -- verify, restore, rekey --------------------------------------------------------
    def verify(
        self, ref: int | str | Path, progress: ProgressCallback | None = None
    ) -> VerifyReport:
        """Check a backup without restoring it: checksum (against the run's), every
        encrypted segment, the manifest and every file's hash."""
        from autorag.backup.verify import verify_archive

        with self._fetched(ref) as fetched:
            report = verify_archive(
                fetched.path, self.keyring, expected_sha256=fetched.sha256, progress=progress
            )
        return replace(report, archive=fetched.name)

    def restore(
        self,
        ref: int | str | Path,
        progress: ProgressCallback | None = None,
        *,
        in_server: bool = False,
    ) -> RestoreReport:
        """Replace the workspace's catalog, files and vectors with a backup's (see the
        module docstring). ``in_server``: the caller is a server that stopped its work
        and closed its catalog for this; otherwise a server holding the workspace is a
        ``Conflict``."""
        from autorag.backup.verify import verify_archive

        with self._fetched(ref) as fetched:
            _step(progress, "verify", f"verifying {fetched.name}")
            report = verify_archive(fetched.path, self.keyring, expected_sha256=fetched.sha256)
            if not report.ok:
                raise InvalidInput(
                    f"refused to restore {fetched.name}: {' '.join(report.problems)} "
                    "Nothing was changed.",
                    code="backup_invalid",
                )
            hold = contextlib.nullcontext() if in_server else exclusive_workspace(self.workspace)
            with hold:
                restored = self._replace(fetched, progress)
        self._record_restore(restored)
        return restored

    def _replace(self, fetched: FetchedArchive, progress: ProgressCallback | None) -> RestoreReport:
        from autorag.backup.restore import restore_archive

        _step(progress, "safety", "safety backup of the current state")
        safety = self.run(
            destination=f"local:{self.local_dir()}", trigger="safety", progress=progress
        )
        if safety.status != "succeeded":
            raise Unavailable(
                f"the safety backup failed ({safety.error}); nothing was restored",
                code="safety_backup_failed",
            )
        # The catalog file may be swapped under this engine: no connection may outlive it.
        self.engine.dispose()
        try:
            restored = restore_archive(
                self.workspace, self.settings, fetched.path, self.keyring, progress=progress
            )
        finally:
            self.engine.dispose()
        return replace(restored, archive=fetched.name, safety_run=safety)

    def _record_restore(self, report: RestoreReport) -> None:
        safety = report.safety_run.id if report.safety_run else None
        log.info("restored %s (safety backup: run %s)", report.archive, safety)
        details = {"archive": report.archive, "safetyRun": safety, "vectors": report.vectors}
        try:
            audit.record(Catalog(self.engine), _EVENT_RESTORED, source="backup", details=details)
        except AutoragError as exc:  # the restore is done; the record is a nicety
            log.warning("the restore could not be recorded in the audit log: %s", exc.message)

    def rekey(self) -> RekeyReport:
        """Reseal every stored secret under the current key."""
        from autorag.backup.rekey import rekey

        return rekey(self.engine, self.workspace.data_dir, self.keyring)

    # -- jobs --------------------------------------------------------------------------
    def jobs(self) -> list[BackupJob]:
        return [self._with_next(stored.job) for stored in store.list_jobs(self.engine)]

    def job(self, name: str) -> BackupJob:
        return self._with_next(self._job(name).job)

    def _job(self, name: str) -> StoredJob:
        stored = store.load_job(self.engine, name)
        if stored is None:
            raise NotFound(f"no backup job {name!r}", code="backup_job_not_found")
        return stored

    def _with_next(self, job: BackupJob) -> BackupJob:
        """The job with its next run, when a scheduler in this process runs it."""
        scheduler = running_scheduler(self.engine)
        if scheduler is None or not job.enabled:
            return job
        return replace(job, next_run_at=scheduler.next_run_at(job.name))

    def add_job(
        self,
        name: str,
        *,
        cron: str,
        destination: str,
        retention_days: int | None = None,
        include_vectors: bool | None = None,
        enabled: bool = True,
    ) -> BackupJob:
        """A job making a backup on the cron schedule (five fields, this machine's time
        zone). ``Conflict`` when the name is taken."""
        backup = self.settings.backup
        values = {
            "name": _checked_name(name),
            "cron": _checked_cron(cron),
            "destination": self._checked_destination(destination),
            "retention_days": _checked_days(retention_days or backup.retention_days),
            "include_vectors": (
                backup.include_vectors if include_vectors is None else include_vectors
            ),
            "enabled": enabled,
        }  # fmt: skip
        if not store.insert_job(self.engine, values):
            raise Conflict(f"a backup job named {name!r} exists", code="backup_job_exists")
        log.info("backup job %s added: %s to %s", name, cron, values["destination"])
        return self.job(name)

    def update_job(
        self,
        name: str,
        *,
        cron: str | None = None,
        destination: str | None = None,
        retention_days: int | None = None,
        include_vectors: bool | None = None,
        enabled: bool | None = None,
    ) -> BackupJob:
        """Change what is given of a job."""
        changes: dict[str, Any] = {}
        if cron is not None:
            changes["cron"] = _checked_cron(cron)
        if destination is not None:
            changes["destination"] = self._checked_destination(destination)
        if retention_days is not None:
            changes["retention_days"] = _checked_days(retention_days)
        if include_vectors is not None:
            changes["include_vectors"] = include_vectors
        if enabled is not None:
            changes["enabled"] = enabled
        if not store.update_job(self.engine, name, changes):
            raise NotFound(f"no backup job {name!r}", code="backup_job_not_found")
        return self.job(name)

    def remove_job(self, name: str) -> None:
        """The job runs no more; its backups and their history stay."""
        if not store.delete_job(self.engine, name):
            raise NotFound(f"no backup job {name!r}", code="backup_job_not_found")

    def apply_retention(self, job: str) -> RetentionReport:
        """Delete the job's succeeded backups older than its ``retention_days``: the
        archive at its destination, then the run. The job's newest backup is always
        kept (a schedule that keeps failing never leaves nothing). One that cannot be
        deleted is reported in ``failed``; the others are deleted all the same."""
        stored = self._job(job)
        cutoff = utcnow() - timedelta(days=stored.job.retention_days)
        newest = store.newest_succeeded(self.engine, stored.id)
        expired = [
            run for run in store.runs_started_before(self.engine, stored.id, cutoff)
            if run.id != newest
        ]  # fmt: skip
        opened: dict[str, Destination] = {}
        deleted: list[str] = []
        failed: list[str] = []
        for run in expired:
            name = run.archive or f"run {run.id}"
            try:
                self._delete_archive(run, opened)
                store.delete_run(self.engine, run.id)
            except (AutoragError, OSError) as exc:
                failed.append(f"{name}: {_reason(exc)}")
                log.warning("retention of job %s: %s not deleted: %s", job, name, _reason(exc))
                continue
            deleted.append(name)
        return RetentionReport(job, tuple(deleted), tuple(failed))

    def _delete_archive(self, run: BackupRun, opened: dict[str, Destination]) -> None:
        if run.archive is None:
            return
        if run.destination not in opened:
            opened[run.destination] = self._destination(run.destination)
        # Already gone (deleted by hand): nothing left to delete.
        with contextlib.suppress(NotFound):
            opened[run.destination].delete(run.archive)

    def _destination(self, url: str) -> Destination:
        from autorag.backup.destinations import open_destination

        return open_destination(url, self.settings.backup, default_dir=self.local_dir())

    def _checked_destination(self, url: str) -> str:
        """The destination as written, checked as opening it checks (a known scheme, no
        password in the URL: it would be stored and shown); nothing is connected to."""
        url = url.strip()
        if not url:
            raise InvalidInput("no backup destination given")
        self._destination(url)
        return url


# -- helpers ---------------------------------------------------------------------------
class _Heartbeat:
    """Writes the run's heartbeat every ``HEARTBEAT_S`` until stopped: a run whose
    process is on another host is known alive by it."""

    def __init__(self, engine: Engine, run_id: int) -> None:
        self.engine = engine
        self.run_id = run_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"backup-{run_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if not store.heartbeat(self.engine, self.run_id):
                    return
            except Exception as exc:  # a busy or unreachable catalog: try again next time
                log.warning("backup run %d: heartbeat not written: %s", self.run_id, exc)


class _Say:
    """A step's line in the run's log (and its progress bar, when there is one)."""

    def __init__(self, engine: Engine, run_id: int, progress: ProgressCallback | None) -> None:
        self.engine = engine
        self.run_id = run_id
        self.progress = progress

    def line(self, line: str) -> None:
        store.append_log(self.engine, self.run_id, line)

    def __call__(self, step: str, line: str, *, done: int = 0, total: int | None = None) -> None:
        self.line(line)
        if self.progress is not None:
            self.progress(Progress(step, done, total, line))


def _step(progress: ProgressCallback | None, step: str, message: str) -> None:
    if progress is not None:
        progress(Progress(step, 0, None, message))


def _already_running(stored: StoredRun | None) -> Conflict:
    if stored is None:  # it ended between the two statements
        return Conflict("a backup is already running; try again", code="backup_running")
    run = stored.run
    where = f" by pid {stored.pid} on {stored.host}" if stored.host else ""
    return Conflict(
        f"a backup is already running (run {run.id}, started "
        f"{run.started_at:%Y-%m-%d %H:%M:%S} UTC{where})",
        code="backup_running",
    )


def _alive(pid: int | None, run_id: int) -> bool:
    """Whether the process that claimed a run (on this host) still runs it."""
    if pid is None:
        return False
    if pid == os.getpid():
        with _ACTIVE_LOCK:
            return run_id in _ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed child its parent has not reaped yet still answers ``kill(pid, 0)``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def _interrupt(exc: BaseException) -> bool:
    return isinstance(exc, KeyboardInterrupt | SystemExit)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, AutoragError):
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _is_file(ref: str) -> bool:
    return ("/" in ref or ref.endswith(ARCHIVE_SUFFIX)) and Path(ref).expanduser().is_file()


def _checked_name(name: str) -> str:
    if not _JOB_NAME.match(name):
        raise InvalidInput(
            f"bad job name {name[:80]!r}: letters, digits, '.', '_' and '-', "
            "at most 64, starting with a letter or digit"
        )
    return name


def _checked_cron(cron: str) -> str:
    cron = " ".join(cron.split())
    try:
        check_cron(cron)
    except ValueError as exc:
        raise InvalidInput(f"bad cron expression {cron!r}: {exc}", code="bad_cron") from None
    return cron


def _checked_days(days: int) -> int:
    if days < 1:
        raise InvalidInput(f"retention must be at least 1 day, not {days}")
    return days


def _announce(name: str, run_id: int, **data: object) -> Callable[[Connection], int]:
    """A run's event, written as the run ends (in its transaction): the run, its
    trigger, job and archive names, never the error's text (it may name a server)."""
    return lambda conn: outbox.emit(conn, name, {"run": run_id, **data}, actor="system")
