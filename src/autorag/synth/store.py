"""Synthesis's tables (migration 0016) and all of its SQL.

Rows leave this module as the dataclasses of ``synth.models`` (what faces see) or as the
small records below (what the runner and the service work with). Every pass step writes
its result, the run's progress and the tokens it used in one transaction, so a run that
stops anywhere resumes at the first step with no stored result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter
from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Mapped, mapped_column

from autorag.ingest import reading_store
from autorag.store.catalog import queue
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import Base, DocumentRow, utcnow
from autorag.synth.base import SourceText
from autorag.synth.models import (
    OPEN_STATUSES,
    PASSES,
    Passage,
    PassName,
    PassProgress,
    Selection,
    SkippedSource,
    SynthItem,
    SynthRun,
)
from autorag.times import as_utc, as_utc_or_none
from autorag.wiki.store import ArchiveRow

SYNTH_JOB = "synthesis"  # the kind of a run's job in the durable queue
# Items a person's approval writes as a page version (skip and contradiction are read).
APPLICABLE = ("create", "update", "overview")
UNDECIDED = ("pending", "conflict")
T = TypeVar("T")


class SynthRunRow(Base):
    __tablename__ = "synth_runs"
    __table_args__ = (
        Index("ix_synth_runs_workspace", "workspace_id", "id"),
        Index("ix_synth_runs_archive", "archive_id", "status"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    archive_id: Mapped[int] = mapped_column(ForeignKey("archives.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20))
    mode: Mapped[str] = mapped_column(String(16))
    model: Mapped[str] = mapped_column(String(300))
    selection: Mapped[str] = mapped_column(Text, default="{}")  # JSON, Selection
    current_pass: Mapped[str | None] = mapped_column(String(32))
    progress: Mapped[str] = mapped_column(Text, default="{}")  # JSON: pass → done/total/state
    state: Mapped[str] = mapped_column(Text, default="{}")  # JSON: entities, candidates
    skipped: Mapped[str] = mapped_column(Text, default="[]")  # JSON, [SkippedSource]
    model_calls: Mapped[int] = mapped_column(BigInteger, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    error_code: Mapped[str | None] = mapped_column(String(64))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    job_id: Mapped[int | None] = mapped_column(Integer)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    decided_by: Mapped[str | None] = mapped_column(String(200))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SynthSourceRow(Base):
    """A document a run reads, as it was read (its passages), with each pass's result."""

    __tablename__ = "synth_sources"
    __table_args__ = (Index("ix_synth_sources_document", "document_id"),)

    run_id: Mapped[int] = mapped_column(
        ForeignKey("synth_runs.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str | None] = mapped_column(String(64))  # the version read
    title: Mapped[str] = mapped_column(Text, default="")
    passages: Mapped[str] = mapped_column(Text, default="[]")  # JSON, [Passage]
    extraction: Mapped[str | None] = mapped_column(Text)  # JSON, Extraction; None: not yet
    summary: Mapped[str | None] = mapped_column(Text)  # None: not yet


class SynthItemRow(Base):
    __tablename__ = "synth_items"
    __table_args__ = (
        UniqueConstraint("run_id", "position", name="uq_synth_items_position"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("synth_runs.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(16))
    entity: Mapped[str] = mapped_column(Text, default="")
    path: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text, default="")
    body: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str] = mapped_column(Text, default="")
    sources: Mapped[str] = mapped_column(Text, default="[]")  # JSON, [Passage]
    contradiction: Mapped[str] = mapped_column(Text, default="[]")  # JSON, [Passage]
    base_version: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    applied_version: Mapped[int | None] = mapped_column(Integer)
    decided_by: Mapped[str | None] = mapped_column(String(200))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SynthDoneRow(Base):
    """The version of a document an applied run read into an archive."""

    __tablename__ = "synth_done"

    archive_id: Mapped[int] = mapped_column(
        ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True
    )
    document_id: Mapped[int] = mapped_column(
        ForeignKey("documents.id", ondelete="CASCADE"), primary_key=True
    )
    content_hash: Mapped[str | None] = mapped_column(String(64))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("synth_runs.id", ondelete="SET NULL"))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


R = SynthRunRow
S = SynthSourceRow
I = SynthItemRow  # noqa: E741
D = SynthDoneRow


# -- JSON: what the passes store between steps -----------------------------------------
_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def to_json(kind: Any, value: Any) -> str:
    """``value`` (of type ``kind``: a dataclass, or a tuple of them) as JSON text."""
    return dumps(_adapter(kind).dump_python(value, mode="json"))


def dumps(data: Any) -> str:
    """Plain JSON data as compact text."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def from_json(kind: type[T] | Any, text: str) -> T:
    return _adapter(kind).validate_python(json.loads(text))  # type: ignore[no-any-return]


# -- records ----------------------------------------------------------------------------
@dataclass(frozen=True)
class StoredRun:
    """A run with what only the runner and the service read."""

    run: SynthRun
    progress: dict[str, dict[str, Any]]
    state: dict[str, Any]
    cancel_requested: bool
    job_id: int | None


@dataclass(frozen=True)
class DocumentRef:
    """A document a run may read."""

    id: int
    source_id: str
    title: str
    content_hash: str | None
    doc_type: str
    status: str


@dataclass(frozen=True)
class StoredSource:
    position: int
    document_id: int
    source_id: str
    content_hash: str | None
    title: str
    passages: tuple[Passage, ...]
    extraction: str | None  # JSON; None: entity_extraction has not read it yet
    summary: str | None

    @property
    def text(self) -> SourceText:
        return SourceText(self.document_id, self.source_id, self.title, self.passages)


# -- documents ---------------------------------------------------------------------------
def documents(engine: Engine, workspace_id: int, selection: Selection) -> list[DocumentRef]:
    """The workspace's documents the selection names (any status: the caller says why
    one that is not ready is left out), oldest first."""
    query = select(
        DocumentRow.id, DocumentRow.source_id, DocumentRow.title, DocumentRow.content_hash,
        DocumentRow.doc_type, DocumentRow.status,
    ).where(DocumentRow.workspace_id == workspace_id)  # fmt: skip
    if selection.document_ids:
        query = query.where(DocumentRow.id.in_(sorted(set(selection.document_ids))))
    else:
        query = query.where(DocumentRow.status == "ready")
    if selection.since is not None:
        query = query.where(DocumentRow.indexed_at >= selection.since)
    if selection.doc_type:
        query = query.where(DocumentRow.doc_type == selection.doc_type)
    with engine.connect() as conn:
        return [DocumentRef(*row) for row in conn.execute(query.order_by(DocumentRow.id))]


def passages(
    engine: Engine, document: DocumentRef, *, max_chars: int
) -> tuple[tuple[Passage, ...], bool]:
    """The document's chunks in document order (as reading it shows them) as passages,
    up to ``max_chars`` characters in all; and whether some of it was left unread."""
    found: list[Passage] = []
    used = 0
    for chunk in reading_store.passages(engine, document.id):
        room = max_chars - used
        if room <= 0:
            return tuple(found), True
        piece = chunk.text[:room]
        found.append(Passage(piece, document.id, document.source_id, document.title, chunk.page))
        used += len(piece)
        if len(piece) < len(chunk.text):
            return tuple(found), True
    return tuple(found), False


def done_versions(
    engine: Engine, archive_id: int, document_ids: Iterable[int]
) -> dict[int, tuple[str | None, int | None]]:
    """For documents already read into the archive by an applied run: the version read
    and the run (document id → (content hash, run id))."""
    found: dict[int, tuple[str | None, int | None]] = {}
    with engine.connect() as conn:
        for batch in _batches(document_ids):
            query = select(D.document_id, D.content_hash, D.run_id).where(
                D.archive_id == archive_id, D.document_id.in_(batch)
            )
            found.update((row[0], (row[1], row[2])) for row in conn.execute(query))
    return found


def open_runs_reading(
    engine: Engine, archive_id: int, document_ids: Iterable[int]
) -> dict[int, int]:
    """Documents a run of the archive that is not decided yet reads (id → run id)."""
    found: dict[int, int] = {}
    with engine.connect() as conn:
        for batch in _batches(document_ids):
            query = (
                select(S.document_id, R.id)
                .join(R, R.id == S.run_id)
                .where(R.archive_id == archive_id, R.status.in_(OPEN_STATUSES))
                .where(S.document_id.in_(batch))
            )
            found.update((row[0], row[1]) for row in conn.execute(query))
    return found


def _batches(ids: Iterable[int], size: int = 500) -> Iterable[list[int]]:
    wanted = sorted(set(ids))
    for start in range(0, len(wanted), size):
        yield wanted[start : start + size]


# -- runs ------------------------------------------------------------------------------
def create_run(engine: Engine, values: dict[str, Any], sources: Sequence[dict[str, Any]]) -> int:
    """A run (``queued``), the documents it reads and its queue job, in one transaction."""
    now = utcnow()
    with engine.begin() as conn:
        run_id = int(
            conn.execute(
                insert(R)
                .values(**values, status="queued", created_at=now, updated_at=now)
                .returning(R.id)
            ).scalar_one()
        )
        conn.execute(insert(S), [{**source, "run_id": run_id} for source in sources])
        job_id = queue.enqueue(conn, values["workspace_id"], SYNTH_JOB, payload={"runId": run_id})
        conn.execute(update(R).where(R.id == run_id).values(job_id=job_id))
    return run_id


def requeue_run(
    engine: Engine, run_id: int, workspace_id: int, from_statuses: Sequence[str]
) -> bool:
    """The run queued again with a new job, if it is in one of ``from_statuses``."""
    with engine.begin() as conn:
        changed = conn.execute(
            update(R)
            .where(R.id == run_id, R.status.in_(from_statuses))
            .values(
                status="queued",
                error=None,
                error_code=None,
                finished_at=None,
                cancel_requested=False,
                updated_at=utcnow(),
            )
        ).rowcount
        if changed != 1:
            return False
        job_id = queue.enqueue(conn, workspace_id, SYNTH_JOB, payload={"runId": run_id})
        conn.execute(update(R).where(R.id == run_id).values(job_id=job_id))
    return True


def update_run(
    engine: Engine | Connection,
    run_id: int,
    values: dict[str, Any],
    *,
    from_statuses: Sequence[str] | None = None,
) -> bool:
    """Change the run (only from ``from_statuses`` when given); whether it changed."""
    statement = update(R).where(R.id == run_id)
    if from_statuses is not None:
        statement = statement.where(R.status.in_(from_statuses))
    statement = statement.values(**values, updated_at=utcnow())
    if isinstance(engine, Connection):
        return engine.execute(statement).rowcount == 1
    with engine.begin() as conn:
        return conn.execute(statement).rowcount == 1


def cancel_requested(engine: Engine, run_id: int) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(select(R.cancel_requested).where(R.id == run_id)).scalar())


def _runs_query() -> Any:
    sources = select(func.count()).where(S.run_id == R.id).scalar_subquery()
    items = select(func.count()).where(I.run_id == R.id).scalar_subquery()
    pending = (
        select(func.count())
        .where(I.run_id == R.id, I.action.in_(APPLICABLE), I.status.in_(UNDECIDED))
        .scalar_subquery()
    )
    return select(
        R.__table__,
        ArchiveRow.name.label("archive_name"),
        sources.label("source_count"),
        items.label("item_count"),
        pending.label("pending_count"),
    ).join(ArchiveRow, ArchiveRow.id == R.archive_id)


def load_run(engine: Engine, workspace_id: int, run_id: int) -> StoredRun | None:
    """The run, if it is the workspace's."""
    query = _runs_query().where(R.id == run_id, R.workspace_id == workspace_id)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    if row is None:
        return None
    progress = _loads(row.progress, {})
    return StoredRun(
        _run(row, progress), progress, _loads(row.state, {}), bool(row.cancel_requested),
        row.job_id,
    )  # fmt: skip


def list_runs(
    engine: Engine, workspace_id: int, *, archive_id: int | None, limit: int
) -> list[SynthRun]:
    query = _runs_query().where(R.workspace_id == workspace_id)
    if archive_id is not None:
        query = query.where(R.archive_id == archive_id)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(R.id.desc()).limit(limit))
        return [_run(row, _loads(row.progress, {})) for row in rows]


def _run(row: Any, progress: dict[str, dict[str, Any]]) -> SynthRun:
    return SynthRun(
        id=row.id, workspace_id=row.workspace_id, archive_id=row.archive_id,
        archive=row.archive_name, status=row.status, mode=row.mode, model=row.model,
        selection=from_json(Selection, row.selection or "{}"),
        current_pass=row.current_pass, passes=passes_of(progress),
        sources=int(row.source_count), skipped=from_json(tuple[SkippedSource, ...], row.skipped),
        items=int(row.item_count), pending=int(row.pending_count),
        model_calls=int(row.model_calls), prompt_tokens=int(row.prompt_tokens),
        completion_tokens=int(row.completion_tokens), error=row.error, error_code=row.error_code,
        created_by=row.created_by, created_at=as_utc(row.created_at),
        updated_at=as_utc(row.updated_at), finished_at=as_utc_or_none(row.finished_at),
        decided_by=row.decided_by, decided_at=as_utc_or_none(row.decided_at),
        cancel_requested=bool(row.cancel_requested),
    )  # fmt: skip


def passes_of(progress: dict[str, dict[str, Any]]) -> tuple[PassProgress, ...]:
    """Each pass's progress in order, from the run's progress JSON."""
    shown = []
    for name in PASSES:
        entry = progress.get(name) or {}
        shown.append(
            PassProgress(
                cast("PassName", name),
                int(entry.get("done", 0)),
                int(entry.get("total", 0)),
                entry.get("state", "waiting"),
            )
        )
    return tuple(shown)


def _loads(text: str | None, default: Any) -> Any:
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


# -- sources and steps -----------------------------------------------------------------
def load_sources(engine: Engine, run_id: int) -> list[StoredSource]:
    query = S.__table__.select().where(S.run_id == run_id).order_by(S.position)
    with engine.connect() as conn:
        return [
            StoredSource(
                row.position,
                row.document_id,
                row.source_id,
                row.content_hash,
                row.title,
                from_json(tuple[Passage, ...], row.passages),
                row.extraction,
                row.summary,
            )
            for row in conn.execute(query)
        ]


def source_ids(engine: Engine, run_id: int) -> list[str]:
    """The canonical ids of the documents the run reads, in order."""
    query = select(S.source_id).where(S.run_id == run_id).order_by(S.position)
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def save_step(
    engine: Engine,
    run_id: int,
    run: dict[str, Any],
    *,
    source: tuple[int, dict[str, Any]] | None = None,
    item: dict[str, Any] | None = None,
    calls: int = 0,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
) -> bool:
    """One step's result (a source's extraction or summary, or a proposed item), the
    run's progress and state, and the model use it cost, in one transaction. Returns
    whether a person asked the run to stop (read in the same statement: no query of
    its own between steps)."""
    with engine.begin() as conn:
        if source is not None:
            position, values = source
            conn.execute(
                update(S).where(S.run_id == run_id, S.position == position).values(**values)
            )
        if item is not None:
            conn.execute(insert(I).values(**item, run_id=run_id))
        stop = conn.execute(
            update(R)
            .where(R.id == run_id)
            .values(
                **run,
                model_calls=R.model_calls + calls,
                prompt_tokens=R.prompt_tokens + prompt_tokens,
                completion_tokens=R.completion_tokens + completion_tokens,
                updated_at=utcnow(),
            )
            .returning(R.cancel_requested)
        ).scalar()
    return bool(stop)


# -- items -----------------------------------------------------------------------------
def load_items(engine: Engine, run_id: int) -> list[SynthItem]:
    query = I.__table__.select().where(I.run_id == run_id).order_by(I.position)
    with engine.connect() as conn:
        return [_item(row) for row in conn.execute(query)]


def _item(row: Any) -> SynthItem:
    return SynthItem(
        id=row.id, run_id=row.run_id, position=row.position, action=row.action,
        entity=row.entity, path=row.path, title=row.title, body=row.body, reason=row.reason,
        sources=from_json(tuple[Passage, ...], row.sources),
        contradiction=from_json(tuple[Passage, ...], row.contradiction),
        base_version=row.base_version, status=row.status,
        applied_version=row.applied_version, decided_by=row.decided_by,
        decided_at=as_utc_or_none(row.decided_at),
    )  # fmt: skip


def decide_item(
    engine: Engine,
    item_id: int,
    values: dict[str, Any],
    *,
    announce: Callable[[Connection], object] | None = None,
) -> bool:
    """Record a decision on an item still undecided (pending or in conflict); False
    when another decision came first. ``announce`` writes the decision's event in the
    same transaction (both commit or neither), when the decision is recorded."""
    with engine.begin() as conn:
        statement = update(I).where(I.id == item_id, I.status.in_(UNDECIDED)).values(**values)
        decided = conn.execute(statement).rowcount == 1
        if decided and announce is not None:
            announce(conn)
        return decided


def mark_done(engine: Engine, archive_id: int, run_id: int) -> None:
    """The run's sources, at the version it read, count as read into the archive."""
    with engine.connect() as conn:
        rows = conn.execute(select(S.document_id, S.content_hash).where(S.run_id == run_id)).all()
    if not rows:
        return
    now = utcnow()
    values = [
        {"archive_id": archive_id, "document_id": document_id, "content_hash": content_hash,
         "run_id": run_id, "at": now}
        for document_id, content_hash in rows
    ]  # fmt: skip
    statement = dialect_insert(engine, D)
    statement = statement.on_conflict_do_update(
        index_elements=["archive_id", "document_id"],
        set_={
            "content_hash": statement.excluded.content_hash,
            "run_id": statement.excluded.run_id,
            "at": statement.excluded.at,
        },
    )
    with engine.begin() as conn:
        conn.execute(statement, values)
