"""The ``model_connections`` table (migration 0014) and its SQL.

Rows leave this module as ``StoredConnection`` dataclasses; the API key stays sealed
here and is opened only by ``autorag.connections.service`` to build a provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Boolean, DateTime, Engine, Integer, String, Text, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from autorag.errors import Conflict, NotFound
from autorag.store.catalog.models import Base, utcnow


class ModelConnectionRow(Base):
    __tablename__ = "model_connections"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    base_url: Mapped[str] = mapped_column(String(2000))
    api_key_sealed: Mapped[str | None] = mapped_column(Text)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(200), default="")


@dataclass(frozen=True)
class StoredConnection:
    id: int
    name: str
    kind: str
    base_url: str
    api_key_sealed: str | None
    enabled: bool
    revision: int
    created_at: datetime
    created_by: str
    updated_at: datetime
    updated_by: str


@dataclass(frozen=True)
class Changes:
    """What an update sets; None leaves a field as it is (``api_key_sealed`` is set,
    to a sealed value or to None, only when ``set_api_key``)."""

    kind: str | None = None
    base_url: str | None = None
    enabled: bool | None = None
    set_api_key: bool = False
    api_key_sealed: str | None = None


def _out(row: ModelConnectionRow) -> StoredConnection:
    return StoredConnection(
        row.id, row.name, row.kind, row.base_url, row.api_key_sealed, row.enabled,
        row.revision, row.created_at, row.created_by, row.updated_at, row.updated_by,
    )  # fmt: skip


def list_all(engine: Engine) -> list[StoredConnection]:
    with Session(engine) as session:
        rows = session.scalars(select(ModelConnectionRow).order_by(ModelConnectionRow.name))
        return [_out(row) for row in rows]


def get(engine: Engine, name: str) -> StoredConnection:
    with Session(engine) as session:
        row = session.scalar(select(ModelConnectionRow).where(ModelConnectionRow.name == name))
        if row is None:
            raise NotFound(f"no model connection named {name!r}", code="connection_not_found")
        return _out(row)


def versions(engine: Engine) -> frozenset[tuple[int, int]]:
    """(id, revision) of every row: changes whenever a row is added, changed or removed."""
    with engine.connect() as conn:
        rows = conn.execute(select(ModelConnectionRow.id, ModelConnectionRow.revision))
        return frozenset((row[0], row[1]) for row in rows)


def insert(
    engine: Engine, *, name: str, kind: str, base_url: str, api_key_sealed: str | None,
    enabled: bool, by: str,
) -> StoredConnection:  # fmt: skip
    now = utcnow()
    row = ModelConnectionRow(
        name=name, kind=kind, base_url=base_url, api_key_sealed=api_key_sealed,
        enabled=enabled, revision=1, created_at=now, created_by=by, updated_at=now,
        updated_by=by,
    )  # fmt: skip
    try:
        with Session(engine) as session, session.begin():
            session.add(row)
            session.flush()
            return _out(row)
    except IntegrityError:
        raise taken(name) from None


def update(engine: Engine, name: str, changes: Changes, *, by: str) -> StoredConnection:
    with Session(engine) as session, session.begin():
        row = session.scalar(
            select(ModelConnectionRow).where(ModelConnectionRow.name == name).with_for_update()
        )
        if row is None:
            raise NotFound(f"no model connection named {name!r}", code="connection_not_found")
        if changes.kind is not None:
            row.kind = changes.kind
        if changes.base_url is not None:
            row.base_url = changes.base_url
        if changes.enabled is not None:
            row.enabled = changes.enabled
        if changes.set_api_key:
            row.api_key_sealed = changes.api_key_sealed
        row.revision += 1
        row.updated_at, row.updated_by = utcnow(), by
        session.flush()
        return _out(row)


def remove(engine: Engine, name: str) -> None:
    with engine.begin() as conn:
        result = conn.execute(delete(ModelConnectionRow).where(ModelConnectionRow.name == name))
        if result.rowcount == 0:
            raise NotFound(f"no model connection named {name!r}", code="connection_not_found")


def taken(name: str) -> Conflict:
    return Conflict(f"a model connection named {name!r} exists already", code="connection_exists")
