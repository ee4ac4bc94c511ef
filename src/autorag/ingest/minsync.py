"""MinSync: bring the index in step with the search paths, doing the least work.

Unchanged files are skipped on (size, mtime) without being read; changed files whose
content hash did not change are only re-stamped; deleted files leave every store. Pages
without a text layer (scans, images) are queued for OCR when an ``OcrPlanner`` is given.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatch
from pathlib import Path
from typing import Protocol

from autorag.config import CONFIG_FILE_NAME
from autorag.errors import Conflict
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome
from autorag.sources import SourceRoot, normalize_source
from autorag.store.catalog.repository import Catalog, DocumentMeta, FileState, WorkspaceInfo

# Statuses a file keeps while its (size, mtime) is unchanged; others are redone.
SETTLED = frozenset({"ready", "failed", "needs_ocr", "pending"})
# Why a scan has no text that stands while its bytes do: a reviewer's call, or none read.
_OCR_DECIDED = frozenset({"ocr_review", "ocr_rejected", "ocr_empty"})
# Scans OCR never read in their current version: queued as soon as OCR is on.
_OCR_UNREAD = frozenset({"needs_ocr", "source_missing", "source_changed"})

# Queues OCR of a document's pages (autorag.ingest.ocr.service.plan_ocr): the job's id,
# or None when none was queued.
OcrPlanner = Callable[[int, Sequence[int]], int | None]


@dataclass(frozen=True)
class FileEntry:
    source_id: str
    path: Path
    size: int
    mtime_ns: int


@dataclass
class RefreshReport:
    files_seen: int = 0
    indexed: int = 0
    unchanged: int = 0
    failed: int = 0
    needs_ocr: int = 0  # files with no text yet: waiting for OCR, or not read by it
    deleted: int = 0
    ocr_queued: int = 0  # files whose pages without text are queued for OCR
    failures: list[IngestOutcome] = field(default_factory=list)

    def count(self, outcome: IngestOutcome) -> None:
        if outcome.status == "ready":
            self.indexed += 1
        elif outcome.status == "unchanged":
            self.unchanged += 1
        elif outcome.status == "needs_ocr":
            self.needs_ocr += 1
        elif outcome.status == "failed":
            self.failed += 1
            self.failures.append(outcome)


class RefreshObserver(Protocol):
    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None: ...

    def done(self, outcome: IngestOutcome) -> None: ...


class _Silent:
    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None:
        pass

    def done(self, outcome: IngestOutcome) -> None:
        pass


def scan(
    roots: Sequence[SourceRoot], ignore: Sequence[str]
) -> tuple[list[FileEntry], list[IngestOutcome]]:
    """Every indexable file under the roots, plus the paths that could not be walked."""
    entries: list[FileEntry] = []
    problems: list[IngestOutcome] = []
    for root in roots:
        _walk(Path(root.path), roots, ignore, entries, problems)
    return entries, problems


def _walk(
    top: Path,
    roots: Sequence[SourceRoot],
    ignore: Sequence[str],
    entries: list[FileEntry],
    problems: list[IngestOutcome],
) -> None:
    seen_dirs: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            info = directory.stat()
            if (info.st_dev, info.st_ino) in seen_dirs:
                continue  # a symlink cycle or a second link to a walked folder
            seen_dirs.add((info.st_dev, info.st_ino))
            listing = list(os.scandir(directory))
        except OSError as exc:
            problems.append(_walk_problem(directory, roots, exc))
            continue
        for entry in listing:
            if entry.name == CONFIG_FILE_NAME or any(fnmatch(entry.name, p) for p in ignore):
                continue
            try:
                if entry.is_dir():
                    stack.append(Path(entry.path))
                    continue
                if not entry.is_file():
                    continue
                stat = entry.stat()
            except OSError as exc:
                problems.append(_walk_problem(Path(entry.path), roots, exc))
                continue
            source_id = normalize_source(entry.path, roots)
            if source_id is not None:
                entries.append(
                    FileEntry(source_id, Path(entry.path), stat.st_size, stat.st_mtime_ns)
                )


def _walk_problem(path: Path, roots: Sequence[SourceRoot], exc: OSError) -> IngestOutcome:
    code = "symlink_loop" if exc.errno == errno.ELOOP else "unreadable"
    source_id = normalize_source(str(path), roots) or str(path)
    return IngestOutcome(source_id, "failed", error_code=code, error=f"{path}: {exc.strerror}")


def _item(entry: FileEntry, known: FileState | None) -> IngestItem:
    meta = DocumentMeta(
        source_id=entry.source_id,
        doc_type=entry.path.suffix.lower().lstrip(".") or "unknown",
        title=entry.path.stem,
        size=entry.size,
        mtime_ns=entry.mtime_ns,
        content_hash=None,
        doc_date=datetime.fromtimestamp(entry.mtime_ns / 1e9, UTC),
    )
    if known is None:
        return IngestItem(meta, path=entry.path)
    return IngestItem(
        meta,
        path=entry.path,
        known_hash=known.content_hash,
        known_status=known.status,
        known_document_id=known.document_id,
    )


def _is_unchanged(entry: FileEntry, known: FileState | None) -> bool:
    if known is None or known.status not in SETTLED:
        return False
    return known.size == entry.size and known.mtime_ns == entry.mtime_ns


@dataclass(frozen=True)
class _Plan:
    """What a refresh does beyond indexing new and changed files."""

    retry_failed: bool
    ocr: OcrPlanner | None

    def redo(self, known: FileState) -> bool:
        """Whether a file is read afresh even if its bytes are the same: a failure
        retried, or a scan OCR has not read (it was off, or the file was away)."""
        if known.status == "failed":
            return self.retry_failed
        if known.status != "needs_ocr" or self.ocr is None:
            return False
        code = known.error_code
        return code in _OCR_UNREAD or (self.retry_failed and code not in _OCR_DECIDED)

    def queue_ocr(self, outcome: IngestOutcome) -> bool:
        if self.ocr is None or not outcome.ocr_pages or outcome.document_id is None:
            return False
        return self.ocr(outcome.document_id, outcome.ocr_pages) is not None


@contextmanager
def refresh_lock(lock_file: Path) -> Iterator[None]:
    """One refresh per workspace at a time; the OS drops the lock if we are killed."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Conflict("another refresh of this workspace is running") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def refresh(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    indexer: Indexer,
    roots: Sequence[SourceRoot],
    *,
    ignore: Sequence[str],
    observer: RefreshObserver | None = None,
    retry_failed: bool = False,
    ocr: OcrPlanner | None = None,
) -> RefreshReport:
    """Index new and changed files under ``roots``, drop deleted ones; with ``ocr``,
    queue OCR of the pages that have no text layer."""
    observer = observer or _Silent()
    plan = _Plan(retry_failed, ocr)
    report = RefreshReport()
    run_id = catalog.start_run(workspace.id, "minsync")
    status, error = "interrupted", None
    try:
        _sync(catalog, workspace, indexer, roots, ignore, observer, plan, report)
        status = "completed"
    except Exception as exc:
        status, error = "failed", str(exc)
        raise
    finally:  # KeyboardInterrupt leaves "interrupted"; kill -9 leaves "running"
        catalog.finish_run(run_id, status, error=error, **_counts(report))
    return report


def _sync(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    indexer: Indexer,
    roots: Sequence[SourceRoot],
    ignore: Sequence[str],
    observer: RefreshObserver,
    plan: _Plan,
    report: RefreshReport,
) -> None:
    # Removals a killed run left half-done are finished first.
    indexer.remove(catalog.documents_with_status(workspace.id, "deleting"))
    entries, problems = scan(roots, ignore)
    report.files_seen = len(entries)
    known = catalog.file_states(workspace.id)
    present = {e.source_id for e in entries}
    gone = [state.document_id for sid, state in known.items() if sid not in present]
    todo = _todo(entries, known, plan)
    report.unchanged = len(entries) - len(todo)
    observer.planned(len(todo), report.unchanged, len(gone))
    indexer.remove(gone)
    report.deleted = len(gone)

    def done(outcome: IngestOutcome) -> None:
        report.count(outcome)
        if plan.queue_ocr(outcome):
            report.ocr_queued += 1
        observer.done(outcome)

    indexer.index((_item(entry, state) for entry, state in todo), done)
    for problem in problems:
        report.count(problem)
    if todo or gone:
        indexer.vectors.optimize()


def _todo(
    entries: Sequence[FileEntry], known: dict[str, FileState], plan: _Plan
) -> list[tuple[FileEntry, FileState | None]]:
    """The files to index, each with what the catalog knows of it (None: read afresh)."""
    todo: list[tuple[FileEntry, FileState | None]] = []
    for entry in entries:
        state = known.get(entry.source_id)
        if state is not None and plan.redo(state):
            todo.append((entry, None))
        elif not _is_unchanged(entry, state):
            todo.append((entry, state))
    return todo


def _counts(report: RefreshReport) -> dict[str, int]:
    return {
        "files_seen": report.files_seen,
        "indexed": report.indexed,
        "unchanged": report.unchanged,
        "failed": report.failed,
        "needs_ocr": report.needs_ocr,
        "deleted": report.deleted,
    }
