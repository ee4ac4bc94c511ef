"""MinSync: bring the index in step with the search paths, doing the least work.

Unchanged files are skipped on (size, mtime) without being read; changed files whose
content hash did not change are only re-stamped; deleted files leave every store.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator, Sequence
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
SETTLED = frozenset({"ready", "failed", "needs_ocr"})


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
    needs_ocr: int = 0
    deleted: int = 0
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


def _is_unchanged(entry: FileEntry, known: FileState | None, retry_failed: bool) -> bool:
    if known is None or known.status not in SETTLED:
        return False
    if retry_failed and known.status == "failed":
        return False
    return known.size == entry.size and known.mtime_ns == entry.mtime_ns


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
) -> RefreshReport:
    observer = observer or _Silent()
    report = RefreshReport()
    run_id = catalog.start_run(workspace.id, "minsync")
    status, error = "interrupted", None
    try:
        _sync(catalog, workspace, indexer, roots, ignore, observer, retry_failed, report)
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
    retry_failed: bool,
    report: RefreshReport,
) -> None:
    # Removals a killed run left half-done are finished first.
    indexer.remove(catalog.documents_with_status(workspace.id, "deleting"))
    entries, problems = scan(roots, ignore)
    report.files_seen = len(entries)
    known = catalog.file_states(workspace.id)
    present = {e.source_id for e in entries}
    gone = [state.document_id for sid, state in known.items() if sid not in present]
    todo = [e for e in entries if not _is_unchanged(e, known.get(e.source_id), retry_failed)]
    report.unchanged = len(entries) - len(todo)
    observer.planned(len(todo), report.unchanged, len(gone))
    indexer.remove(gone)
    report.deleted = len(gone)

    def done(outcome: IngestOutcome) -> None:
        report.count(outcome)
        observer.done(outcome)

    indexer.index((_item(e, known.get(e.source_id)) for e in todo), done)
    for problem in problems:
        report.count(problem)
    if todo or gone:
        indexer.vectors.optimize()


def _counts(report: RefreshReport) -> dict[str, int]:
    return {
        "files_seen": report.files_seen,
        "indexed": report.indexed,
        "unchanged": report.unchanged,
        "failed": report.failed + report.needs_ocr,
        "deleted": report.deleted,
    }
