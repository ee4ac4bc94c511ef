"""Bring one datasource namespace in step with a fresh set of records, doing the least work.

A datasource (a chat export, a mailbox…) yields records whose text is already known. They
go through the same :class:`~autorag.ingest.pipeline.Indexer` as files, as documents with
origin ``datasource``. Records whose content hash is unchanged are skipped without being
embedded again; documents of the namespace that the new records no longer name are removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autorag.ingest.minsync import RefreshObserver
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome
from autorag.models import ParsedDocument, Segment
from autorag.sources import is_datasource_id, normalize_source
from autorag.store.catalog.repository import Catalog, DocumentMeta, FileState, WorkspaceInfo

ORIGIN = "datasource"


@dataclass(frozen=True)
class DatasourceRecord:
    """One document of a datasource: its identity, title, text and date."""

    source_id: str  # /<kind>/<instance>/... (seed 000)
    title: str
    text: str
    doc_date: datetime
    doc_type: str = "txt"

    @property
    def content_hash(self) -> str:
        # The title is part of what is indexed (it is embedded with every chunk), so a
        # renamed chat re-indexes its documents.
        return hashlib.sha256(f"{self.title}\n{self.text}".encode()).hexdigest()


@dataclass
class SyncReport:
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    failures: list[IngestOutcome] = field(default_factory=list)

    def count(self, outcome: IngestOutcome) -> None:
        if outcome.status == "ready":
            self.indexed += 1
        elif outcome.status in ("failed", "needs_ocr"):
            self.failed += 1
            self.failures.append(outcome)


class _Silent:
    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None:
        pass

    def done(self, outcome: IngestOutcome) -> None:
        pass


def sync_namespace(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    indexer: Indexer,
    namespace: str,
    records: Sequence[DatasourceRecord],
    *,
    observer: RefreshObserver | None = None,
) -> SyncReport:
    """Make the documents under ``namespace`` (``/kakao/<instance>/``) exactly ``records``.

    The caller holds the workspace's refresh lock: this writes the catalog and vectors.
    """
    _check_records(namespace, records)
    observer = observer or _Silent()
    report = SyncReport()
    known = _known(catalog, workspace, namespace)
    wanted = {record.source_id for record in records}
    gone = [state.document_id for source_id, state in known.items() if source_id not in wanted]
    todo = [r for r in records if not _is_current(r, known.get(r.source_id))]
    report.unchanged = len(records) - len(todo)
    observer.planned(len(todo), report.unchanged, len(gone))
    indexer.remove(gone)
    report.removed = len(gone)

    def done(outcome: IngestOutcome) -> None:
        report.count(outcome)
        observer.done(outcome)

    indexer.index((_item(record) for record in todo), done)
    if todo or gone:
        indexer.vectors.optimize()
    return report


def _check_records(namespace: str, records: Sequence[DatasourceRecord]) -> None:
    """Every identity is canonical, a datasource id, unique and inside the namespace.

    These are programming errors, not user input: identities are built, never typed.
    """
    if not namespace.startswith("/") or not namespace.endswith("/"):
        raise ValueError(f"a namespace is /<kind>/<instance>/, got {namespace!r}")
    seen: set[str] = set()
    for record in records:
        source_id = record.source_id
        if normalize_source(source_id, []) != source_id or not is_datasource_id(source_id):
            raise ValueError(f"not a canonical datasource identity: {source_id!r}")
        if not source_id.startswith(namespace):
            raise ValueError(f"{source_id} lies outside the namespace {namespace}")
        if source_id in seen:
            raise ValueError(f"duplicate datasource identity {source_id}")
        seen.add(source_id)


def _known(catalog: Catalog, workspace: WorkspaceInfo, namespace: str) -> dict[str, FileState]:
    states = catalog.file_states(workspace.id, origin=ORIGIN)
    return {sid: state for sid, state in states.items() if sid.startswith(namespace)}


def _is_current(record: DatasourceRecord, known: FileState | None) -> bool:
    # Anything but ready (indexing, deleting: a run killed half-way) is redone.
    return (
        known is not None and known.status == "ready" and known.content_hash == record.content_hash
    )


def _item(record: DatasourceRecord) -> IngestItem:
    meta = DocumentMeta(
        source_id=record.source_id,
        doc_type=record.doc_type,
        title=record.title,
        size=len(record.text.encode()),
        mtime_ns=0,  # a record has no file time; its content hash decides what changed
        content_hash=record.content_hash,
        doc_date=record.doc_date,
        origin=ORIGIN,
    )
    parsed = ParsedDocument([Segment(record.text)], title=record.title, doc_type=record.doc_type)
    return IngestItem(meta, parsed=parsed)
