"""MinSync: bring the index in step with the search paths, doing the least work.

Unchanged files are skipped on (size, mtime) without being read; changed files whose
content hash did not change are only re-stamped; deleted files leave every store. Pages
without a text layer (scans, images) are queued for OCR when an ``OcrPlanner`` is given.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatch
from pathlib import Path
from typing import Protocol

from autorag.config import CONFIG_FILE_NAME, Settings
from autorag.embeddings.cache import default_cache_path
from autorag.errors import Conflict
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome
from autorag.ingest.readiness import SKIPPED_REASONS, failed_and_skipped_counts
from autorag.sources import SourceRoot, escape_name, local_source_id
from autorag.store.catalog.repository import Catalog, DocumentMeta, FileState, WorkspaceInfo
from autorag.workspace import Workspace

# Statuses a file keeps while its (size, mtime) is unchanged; others are redone.
SETTLED = frozenset({"ready", "failed", "skipped", "needs_ocr", "pending"})
# Why a scan has no text that stands while its bytes do: a reviewer's call, or none read.
_OCR_DECIDED = frozenset({"ocr_review", "ocr_rejected", "ocr_empty"})
# Scans OCR never read in their current version: queued as soon as OCR is on.
_OCR_UNREAD = frozenset({"needs_ocr", "source_missing", "source_changed"})

# Queues OCR of a document's pages (autorag.ocr.service.plan_ocr): the job's id,
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
    """What a refresh did. ``failed`` and ``skipped`` count the files in that state once
    it is over, whether this run or an earlier one found them (the same files ``autorag
    status`` lists); ``failures`` and ``skips`` are those this run read."""

    files_seen: int = 0
    indexed: int = 0
    unchanged: int = 0
    failed: int = 0
    skipped: int = 0  # not read by design: empty, unsupported type, duplicate content
    needs_ocr: int = 0  # files with no text yet: waiting for OCR, or not read by it
    deleted: int = 0
    ocr_queued: int = 0  # files whose pages without text are queued for OCR
    failures: list[IngestOutcome] = field(default_factory=list)
    skips: list[IngestOutcome] = field(default_factory=list)

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
        elif outcome.status == "skipped":
            self.skipped += 1
            self.skips.append(outcome)

    def settle(self, failed: int, skipped: int) -> None:
        """Take the workspace's totals once the run is over: a file that failed before and
        is unchanged is still a failure."""
        self.failed, self.skipped = failed, skipped


class RefreshObserver(Protocol):
    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None: ...

    def done(self, outcome: IngestOutcome) -> None: ...


class _Silent:
    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None:
        pass

    def done(self, outcome: IngestOutcome) -> None:
        pass


@dataclass(frozen=True)
class ScanRules:
    """What a walk of the search paths may read.

    ``follow_links`` names the roots (real paths) whose symbolic links may lead outside
    every search path; elsewhere such a link is recorded, not followed. ``protected`` are
    real paths never indexed however they are reached: the workspace's own data and
    configuration. ``hard_links``: index files that have other names on disk too (their
    policy cannot be decided from the one name the walk sees).
    """

    ignore: Sequence[str] = ()
    follow_links: frozenset[str] = frozenset()
    protected: tuple[str, ...] = ()
    hard_links: bool = False


def scan(
    roots: Sequence[SourceRoot], rules: ScanRules | Sequence[str]
) -> tuple[list[FileEntry], list[IngestOutcome]]:
    """Every indexable file under the roots, each once under the id of its real path, plus
    the paths that could not be walked or given an id (with the reason)."""
    rules = rules if isinstance(rules, ScanRules) else ScanRules(ignore=tuple(rules))
    walk = _Walk(roots, rules)
    for root in roots:
        walk.root(root)
    return list(walk.entries.values()), walk.problems


class _Walk:
    """One scan. Links are never read as themselves: a link to a file or folder under a
    search path is left to the walk of its target (so the file gets the id, and the
    policy, of its real path); a link out of every search path is followed only where
    the operator allowed it, and then indexed under the target's real path."""

    def __init__(self, roots: Sequence[SourceRoot], rules: ScanRules) -> None:
        self.roots = roots
        self.rules = rules
        self.entries: dict[str, FileEntry] = {}
        self.problems: list[IngestOutcome] = []
        self._seen_dirs: set[tuple[int, int]] = set()

    def root(self, root: SourceRoot) -> None:
        if os.path.isfile(root.path):  # a single file added as a search path of its own
            self._file(root.path)
            return
        follow = root.path in self.rules.follow_links
        stack = [root.path]
        while stack:
            directory = stack.pop()
            for entry in self._listing(directory):
                target = self._target(entry, follow)
                if target is None:
                    continue
                path, is_dir = target
                if is_dir:
                    stack.append(path)
                else:
                    self._file(path)

    def _listing(self, directory: str) -> list[os.DirEntry[str]]:
        try:
            info = os.stat(directory)
            if (info.st_dev, info.st_ino) in self._seen_dirs:
                return []  # a symlink cycle or a second way to a walked folder
            self._seen_dirs.add((info.st_dev, info.st_ino))
            return list(os.scandir(directory))
        except OSError as exc:
            self._problem(directory, _error_code(exc), exc.strerror or str(exc))
            return []

    def _target(self, entry: os.DirEntry[str], follow: bool) -> tuple[str, bool] | None:
        """(real path, is a folder) of what ``entry`` leads to, or None to pass it by."""
        if entry.name == CONFIG_FILE_NAME or any(fnmatch(entry.name, p) for p in self.rules.ignore):
            return None
        try:
            if not entry.is_symlink():
                return entry.path, entry.is_dir(follow_symlinks=False)
            real = os.path.realpath(entry.path, strict=True)
            is_dir = os.path.isdir(real)
        except OSError as exc:
            self._problem(entry.path, _error_code(exc), exc.strerror or str(exc))
            return None
        if self._is_under_a_root(real):
            return None  # the walk of its real path reads it, under its real id
        if not follow:
            self._problem(
                entry.path,
                "link_outside",
                f"a link to {real}, outside every search path: not followed",
            )
            return None
        return real, is_dir

    def _file(self, path: str) -> None:
        if self._is_protected(path):
            self._problem(path, "protected", "the workspace's own data: never indexed")
            return
        try:
            info = os.lstat(path)
        except OSError as exc:
            self._problem(path, _error_code(exc), exc.strerror or str(exc))
            return
        if not stat.S_ISREG(info.st_mode):
            return  # sockets, fifos, devices: nothing to read
        if info.st_nlink > 1 and not self.rules.hard_links:
            self._problem(
                path,
                "hard_link",
                f"has {info.st_nlink} names on disk; one name cannot decide its policy",
            )
            return
        source_id = local_source_id(path, self.roots)
        if source_id is None:
            self._problem(path, "bad_name", "no source id can be given to this name")
            return
        self.entries.setdefault(
            source_id, FileEntry(source_id, Path(path), info.st_size, info.st_mtime_ns)
        )

    def _is_under_a_root(self, real: str) -> bool:
        return any(real == r.path or real.startswith(f"{r.path}/") for r in self.roots)

    def _is_protected(self, path: str) -> bool:
        return any(path == p or path.startswith(f"{p}/") for p in self.rules.protected)

    def _problem(self, path: str, code: str, why: str) -> None:
        source_id = local_source_id(path, self.roots) or escape_name(path)
        shown = path.encode("unicode_escape", "backslashreplace").decode()  # one line
        self.problems.append(
            IngestOutcome(source_id, "failed", error_code=code, error=f"{shown}: {why}")
        )


def _error_code(exc: OSError) -> str:
    return "symlink_loop" if exc.errno == errno.ELOOP else "unreadable"


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
            # Files older catalogs called failed that are skipped by design now.
            return self.retry_failed or known.error_code in SKIPPED_REASONS
        if known.status == "skipped":
            # A duplicate is indexed once the copy that was kept is gone.
            return known.error_code == "duplicate"
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
    ignore: Sequence[str] | ScanRules,
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
        report.settle(*failed_and_skipped_counts(catalog.readiness_facts(workspace.id)))
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
    ignore: Sequence[str] | ScanRules,
    observer: RefreshObserver,
    plan: _Plan,
    report: RefreshReport,
) -> None:
    # Removals a killed run left half-done are finished first.
    indexer.remove(catalog.documents_with_status(workspace.id, "deleting"))
    entries, problems = scan(roots, ignore)
    report.files_seen = len(entries)
    known = catalog.file_states(workspace.id)
    present = {e.source_id for e in entries} | {p.source_id for p in problems}
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
        report.count(_record(indexer, problem))
    if todo or gone:
        indexer.vectors.optimize()


def _record(indexer: Indexer, problem: IngestOutcome) -> IngestOutcome:
    """A file the walk could not take, kept in the catalog with its reason."""
    name = problem.source_id.rpartition("/")[2]
    meta = DocumentMeta(
        source_id=problem.source_id,
        doc_type=Path(name).suffix.lower().lstrip(".") or "unknown",
        title=Path(name).stem or name,
        size=0,
        mtime_ns=0,
        content_hash=None,
        doc_date=datetime.now(UTC),
    )
    return indexer.record_failure(meta, problem.error_code or "unreadable", problem.error or "")


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


def scan_rules(settings: Settings, workspace: Workspace) -> ScanRules:
    """The walk's rules for a workspace: its ignore globs and link settings, and its own
    data (``.autorag/``, ``autorag.toml``, the embedding cache) protected."""
    ingest = settings.ingest
    cache_dir = settings.embedding.cache_dir or default_cache_path().parent
    protected = (workspace.data_dir, workspace.config_file, cache_dir)
    return ScanRules(
        ignore=tuple(ingest.ignore),
        follow_links=frozenset(os.path.realpath(path) for path in ingest.follow_links),
        protected=tuple(os.path.realpath(path) for path in protected),
        hard_links=ingest.index_hard_links,
    )
