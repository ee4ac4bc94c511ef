"""The bounded worker pool: ``workers`` threads running jobs from the durable queue.

Started by the API's lifespan and stopped on shutdown; a job that fails marks its
document ``failed`` with the reason and the worker carries on. Jobs are claimed from
the catalog, so what was queued before a restart resumes after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from autorag.chat.attachments import ATTACHMENT_JOB, abandon_attachment, read_attachment
from autorag.context import AppContext
from autorag.errors import AutoragError, NotFound
from autorag.ingest.pipeline import Indexer
from autorag.ingest.reembed import REEMBED_JOB, reembed_workspace
from autorag.ingest.uploads import UPLOAD_JOB, process_upload, set_status, sweep_incoming
from autorag.models import SearchFilters
from autorag.ocr.service import ocr_wanted, plan_ocr, run_ocr_job
from autorag.ocr.store import OCR_JOB
from autorag.ops.workspaces import workspace_by_id
from autorag.store.catalog import queue
from autorag.store.vectors import VectorRecord, VectorStore
from autorag.synth.service import SYNTH_JOB, SynthService

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
TICK_INTERVAL_S = 0.5
REQUEUE_INTERVAL_S = 60.0
STOP_TIMEOUT_S = 30.0


class WorkspaceLock:
    """Shared for indexing documents, exclusive for swapping or removing what they use.

    Writers are preferred so a stream of jobs cannot starve a rename or a delete.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class WorkspaceLocks:
    """One :class:`WorkspaceLock` per workspace id, made on first use."""

    def __init__(self) -> None:
        self._locks: dict[int, WorkspaceLock] = {}
        self._guard = threading.Lock()

    def __call__(self, workspace_id: int) -> WorkspaceLock:
        with self._guard:
            return self._locks.setdefault(workspace_id, WorkspaceLock())


class _SerializedWrites:
    """A vector store whose writes take a lock: the pool's threads share one table.

    Opened on first use: a table that cannot open yet (vectors of another size before a
    re-embed) must not keep the pool from building its state for the workspace.
    """

    def __init__(self, open_store: Callable[[], VectorStore], lock: threading.Lock) -> None:
        self._open_store = open_store
        self._lock = lock

    @property
    def _store(self) -> VectorStore:
        return self._open_store()

    def add(self, records: Sequence[VectorRecord]) -> None:
        with self._lock:
            self._store.add(records)

    def delete_documents(self, document_ids: Sequence[int]) -> None:
        with self._lock:
            self._store.delete_documents(document_ids)

    def search(
        self, vector: npt.NDArray[np.float32], *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        return self._store.search(vector, depth=depth, filters=filters)

    def count(self) -> int:
        return self._store.count()

    def document_ids(self) -> set[int]:
        return self._store.document_ids()

    def optimize(self) -> None:
        with self._lock:
            self._store.optimize()

    def drop(self) -> None:
        with self._lock:
            self._store.drop()

    def copy_to(self, table: str) -> None:
        with self._lock:
            self._store.copy_to(table)


@dataclass
class _Scoped:
    """What the pool keeps per workspace: its context and an indexer on shared vectors."""

    context: AppContext
    indexer: Indexer
    vectors_lock: threading.Lock
    dirty: bool = False  # written since the last optimize


class WorkerPool:
    def __init__(
        self, context: AppContext, *, workers: int, poll_interval: float = POLL_INTERVAL_S
    ) -> None:
        self.context = context
        self.workers = workers
        self.poll_interval = poll_interval
        self.locks = WorkspaceLocks()
        self.identity = queue.process_identity()
        self._wake = threading.Condition()
        self._pending_wakeups = 0
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._scoped: dict[int, _Scoped] = {}
        self._scoped_lock = threading.Lock()
        self._last_requeue = 0.0
        # A handler returns why the job failed when that is already recorded on its
        # document (a parse error, say), and raises for anything unexpected.
        self._handlers: dict[str, Callable[[queue.Job], str | None]] = {
            UPLOAD_JOB: self._process_upload,
            REEMBED_JOB: self._reembed,
            OCR_JOB: self._ocr,
            ATTACHMENT_JOB: self._read_attachment,
            SYNTH_JOB: self._synthesise,
        }

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> None:
        """Re-queue jobs a killed process left running, then start the threads."""
        self._requeue_stale()
        sweep_incoming(self.context.workspace.incoming_uploads_dir)
        for index in range(self.workers):
            thread = threading.Thread(
                target=self._run, args=(f"{self.identity}#{index}",), name=f"autorag-worker-{index}"
            )
            thread.daemon = True  # a hung job must not keep a killed server alive
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Let running jobs finish (up to ``timeout``); unfinished ones resume next start."""
        self._stopping.set()
        self.notify(self.workers)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = sum(t.is_alive() for t in self._threads)
        if alive:
            log.warning("%d worker(s) still busy at shutdown; their jobs resume next start", alive)
        self._threads = []

    def run_queued(
        self,
        *,
        kinds: Collection[str],
        workspace_id: int,
        tick: Callable[[], None],
    ) -> None:
        """Run the workspace's queued jobs of ``kinds`` on ``workers`` threads until none is
        left, calling ``tick`` meanwhile (a progress bar): ``autorag refresh --ocr-now``.

        Unlike :meth:`start`, the uploads being received by a server are left alone.
        """
        self._requeue_stale()
        threads = [
            threading.Thread(
                target=self._drain,
                args=(f"{self.identity}#now{index}", kinds, workspace_id),
                name=f"autorag-now-{index}",
                daemon=True,  # Ctrl+C ends the command: its jobs resume in the next worker
            )
            for index in range(self.workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                tick()
                thread.join(TICK_INTERVAL_S)
        self._optimize_dirty()
        tick()

    def _drain(self, worker: str, kinds: Collection[str], workspace_id: int) -> None:
        engine = self.context.catalog.engine
        while job := queue.claim(engine, worker, kinds=kinds, workspace_id=workspace_id):
            self._execute(job, worker)

    def notify(self, jobs: int = 1) -> None:
        """Wake idle workers: ``jobs`` new jobs were queued."""
        with self._wake:
            self._pending_wakeups += jobs
            self._wake.notify(jobs)

    # -- the loop ---------------------------------------------------------------------
    def _run(self, worker: str) -> None:
        while not self._stopping.is_set():
            try:
                # Only kinds this version knows: a newer process may queue others.
                job = queue.claim(self.context.catalog.engine, worker, kinds=self._handlers)
                if job is None:
                    self._idle()
                else:
                    self._execute(job, worker)
            except Exception:  # the catalog hiccupped: the worker must outlive it
                log.exception("worker %s: job bookkeeping failed", worker)
                self._stopping.wait(self.poll_interval)

    def _idle(self) -> None:
        self._optimize_dirty()
        if time.monotonic() - self._last_requeue > REQUEUE_INTERVAL_S:
            self._requeue_stale()
        with self._wake:
            if self._pending_wakeups == 0 and not self._stopping.is_set():
                self._wake.wait(self.poll_interval)
            self._pending_wakeups = max(0, self._pending_wakeups - 1)

    def _execute(self, job: queue.Job, worker: str) -> None:
        engine = self.context.catalog.engine
        handler = self._handlers.get(job.kind)
        try:
            if handler is None:
                raise AutoragError(f"unknown job kind {job.kind!r}", code="unknown_job")
            failure = handler(job)
        except Exception as exc:
            if not isinstance(exc, AutoragError):
                log.exception("job %d (%s) failed", job.id, job.kind)
            message = _describe(exc)
            if job.document_id is not None:
                code = exc.code if isinstance(exc, AutoragError) else "processing_error"
                set_status(engine, job.document_id, "failed", code=code, message=message)
            queue.fail(engine, job.id, worker, message)
            return
        if failure is not None:
            queue.fail(engine, job.id, worker, failure)
        else:
            queue.complete(engine, job.id, worker)

    # -- handlers ---------------------------------------------------------------------
    def _process_upload(self, job: queue.Job) -> str | None:
        if job.document_id is None:
            raise AutoragError("an upload job names no document", code="bad_job")
        with self.locks(job.workspace_id).shared():
            # Resolved under the lock: a rename that went first changed the vector table.
            scoped = self._scope(job.workspace_id)
            if scoped is None:
                return None  # the workspace was deleted, its documents with it
            outcome = process_upload(
                scoped.indexer,
                self.context.workspace.data_dir,
                job.document_id,
                ocr_follows=ocr_wanted(scoped.context, job.payload.get("ocr_mode")),
            )
        if outcome is None:
            return None
        if outcome.status == "ready":
            scoped.dirty = True
        if outcome.ocr_pages and self._plan_ocr(scoped, job, outcome.ocr_pages):
            return None  # the scanned pages are read by a job of their own
        if outcome.status in ("failed", "needs_ocr"):
            return f"{outcome.error_code}: {outcome.error}"
        return None

    def _plan_ocr(self, scoped: _Scoped, job: queue.Job, pages: tuple[int, ...]) -> bool:
        assert job.document_id is not None
        mode = job.payload.get("ocr_mode")
        planned = plan_ocr(scoped.context, job.document_id, pages, mode)
        if planned is not None:
            self.notify()
        return planned is not None

    def _ocr(self, job: queue.Job) -> str | None:
        scoped = self._scope(job.workspace_id)
        if scoped is None:
            return None
        # Pages are read without the workspace lock (minutes, for a long scan); only
        # indexing the text takes it, as an upload's does.
        failure = run_ocr_job(
            scoped.context,
            int(job.payload.get("ocr_job", 0)),
            indexer=scoped.indexer,
            guard=self.locks(job.workspace_id).shared,
        )
        scoped.dirty = True
        return failure

    def _read_attachment(self, job: queue.Job) -> str | None:
        # No workspace lock: a chat attachment touches neither documents nor vectors.
        scoped = self._scope(job.workspace_id)
        if scoped is None:
            return None
        info = read_attachment(scoped.context, job.payload)
        if info is not None and info.status == "failed":
            return f"{info.error_code}: {info.error}"
        return None

    def _synthesise(self, job: queue.Job) -> str | None:
        # No workspace lock: a run reads the text it stored when it started, and writes
        # only its own rows (pages are written when a person approves).
        scoped = self._scope(job.workspace_id)
        if scoped is None:
            return None
        run = SynthService.for_context(scoped.context).execute(int(job.payload.get("runId", 0)))
        if run.status == "failed":
            return f"{run.error_code}: {run.error}"
        return None  # ready, cancelled, or paused until resumed (a job of its own)

    def _reembed(self, job: queue.Job) -> str | None:
        scoped = self._scope(job.workspace_id)
        if scoped is None:
            return None
        context = scoped.context
        embedder = context.embedder

        def open_table(name: str, recreate: bool) -> VectorStore:
            return context.open_vector_table(name, recreate=recreate)

        report = reembed_workspace(
            context.catalog,
            context.info,
            embedder,
            open_table,
            exclusive=self.locks(job.workspace_id).exclusive,
        )
        log.info(
            "re-embedded workspace %s: %d documents, %d chunks",
            context.info.name,
            report.documents,
            report.chunks,
        )
        return None

    # -- per-workspace state ----------------------------------------------------------
    def _scope(self, workspace_id: int) -> _Scoped | None:
        """The pool's context for a workspace, rebuilt when it was renamed."""
        try:
            info = workspace_by_id(self.context.catalog, workspace_id)
        except NotFound:
            return None
        with self._scoped_lock:
            scoped = self._scoped.get(workspace_id)
            if scoped is not None and scoped.context.info == info:
                return scoped
            context = (
                self.context if info == self.context.info else self.context.for_workspace(info)
            )
            lock = threading.Lock()
            shared = _SerializedWrites(lambda: context.vectors, lock)
            indexer = Indexer(
                context.catalog,
                info,
                vectors=lambda: shared,
                embedder=lambda: context.embedder,
                settings=context.settings.ingest,
            )
            scoped = _Scoped(context, indexer, lock)
            self._scoped[workspace_id] = scoped
            return scoped

    def forget(self, workspace_id: int) -> None:
        """Drop the cached state of a workspace (deleted or renamed)."""
        with self._scoped_lock:
            self._scoped.pop(workspace_id, None)

    def _optimize_dirty(self) -> None:
        with self._scoped_lock:
            dirty = [(wid, s) for wid, s in self._scoped.items() if s.dirty]
            for _, scoped in dirty:
                scoped.dirty = False
        for workspace_id, scoped in dirty:
            try:
                with self.locks(workspace_id).shared():
                    scoped.indexer.vectors.optimize()
            except Exception:
                log.exception("optimizing the vectors of workspace %d failed", workspace_id)

    def _abandon_attachment(self, job: queue.Job) -> None:
        try:
            abandon_attachment(self.context, job.payload)
        except AutoragError as exc:
            log.warning("job %d: %s", job.id, exc.message)

    def _requeue_stale(self) -> None:
        self._last_requeue = time.monotonic()
        engine = self.context.catalog.engine
        try:
            report = queue.requeue_stale(engine)
        except Exception:
            log.exception("re-queueing stale jobs failed")
            return
        for job in report.abandoned:
            if job.kind == ATTACHMENT_JOB:
                self._abandon_attachment(job)
            elif job.document_id is not None:
                set_status(
                    engine,
                    job.document_id,
                    "failed",
                    code="processing_crashed",
                    message="processing stopped the server several times; upload it again",
                )
        if report.requeued:
            log.info("re-queued %d job(s) left running by a stopped process", len(report.requeued))
            self.notify(len(report.requeued))


def _describe(exc: Exception) -> str:
    if isinstance(exc, AutoragError):
        return exc.message
    return f"processing failed: {type(exc).__name__}"
