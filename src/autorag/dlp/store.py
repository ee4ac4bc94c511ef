"""The DLP tables: ``dlp_patterns`` and ``dlp_originals``. Catalog reads and writes only;
what they mean is ``autorag.dlp.service``'s business.

Originals are sealed at rest (``autorag.secretbox``, purpose ``dlp_originals``, bound to
the row id) with the workspace's key, which is never in the database. Rows written
before that are read as they are; migration 0011 seals them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from autorag.dlp.patterns import BUILTINS, DISABLED_BY_DEFAULT, Pattern
from autorag.errors import Conflict, NotFound
from autorag.secretbox import SecretBox, catalog_box, is_sealed
from autorag.store.catalog.models import DlpOriginalRow, DlpPatternRow, utcnow
from autorag.store.catalog.repository import Catalog
from autorag.times import as_utc

SEAL_PURPOSE = "dlp_originals"


@dataclass(frozen=True)
class PatternRecord:
    id: int
    name: str
    regex: str
    builtin: bool
    enabled: bool
    description: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class OriginalRecord:
    id: str
    workspace_id: int | None
    user_id: int | None
    source: str
    ref: str | None
    original: str
    redacted: str
    types: tuple[str, ...]
    created_at: datetime


# -- patterns -------------------------------------------------------------------------
def seed_builtins(catalog: Catalog) -> None:
    """Insert the built-ins a catalog lacks (all of them on first start), and bring the
    regex and description of those it has up to this version's."""
    with catalog.engine.connect() as conn:
        present = {
            row.name: (row.regex, row.description)
            for row in conn.execute(
                select(DlpPatternRow.name, DlpPatternRow.regex, DlpPatternRow.description)
            )
        }
    for pattern in BUILTINS:
        if pattern.name not in present:
            _insert_builtin(catalog, pattern)
        elif present[pattern.name] != (pattern.regex, pattern.description):
            with catalog.engine.begin() as conn:
                conn.execute(
                    update(DlpPatternRow)
                    .where(DlpPatternRow.name == pattern.name, DlpPatternRow.builtin.is_(True))
                    .values(regex=pattern.regex, description=pattern.description)
                )


def _insert_builtin(catalog: Catalog, pattern: Pattern) -> None:
    now = utcnow()
    try:
        with catalog.engine.begin() as conn:
            conn.execute(
                insert(DlpPatternRow).values(
                    name=pattern.name,
                    regex=pattern.regex,
                    builtin=True,
                    enabled=pattern.name not in DISABLED_BY_DEFAULT,
                    description=pattern.description,
                    created_at=now,
                    updated_at=now,
                )
            )
    except IntegrityError:  # another process seeded it first
        pass


def list_patterns(catalog: Catalog) -> list[PatternRecord]:
    with Session(catalog.engine) as session:
        rows = session.scalars(select(DlpPatternRow).order_by(DlpPatternRow.id)).all()
        return [_pattern(row) for row in rows]


def get_pattern(catalog: Catalog, pattern_id: int) -> PatternRecord:
    with Session(catalog.engine) as session:
        return _pattern(_pattern_row(session, DlpPatternRow.id == pattern_id, f"id {pattern_id}"))


def find_pattern(catalog: Catalog, name: str) -> PatternRecord:
    with Session(catalog.engine) as session:
        return _pattern(_pattern_row(session, DlpPatternRow.name == name, repr(name)))


def insert_custom(
    catalog: Catalog, name: str, regex: str, description: str, enabled: bool, *, limit: int
) -> PatternRecord:
    """A new custom pattern, unless ``limit`` custom ones exist or the name is taken."""
    try:
        with catalog.engine.begin() as conn:
            count = conn.execute(
                select(func.count(DlpPatternRow.id)).where(DlpPatternRow.builtin.is_(False))
            ).scalar_one()
            if count >= limit:
                raise Conflict(
                    f"there are already {count} custom patterns, the most allowed "
                    f"({limit}); delete one first",
                    code="pattern_limit",
                )
            now = utcnow()
            key = conn.execute(
                insert(DlpPatternRow).values(
                    name=name,
                    regex=regex,
                    builtin=False,
                    enabled=enabled,
                    description=description,
                    created_at=now,
                    updated_at=now,
                )
            ).inserted_primary_key
    except IntegrityError:
        raise Conflict(f"a pattern named {name!r} already exists") from None
    assert key is not None
    return get_pattern(catalog, int(key[0]))


def update_pattern(catalog: Catalog, pattern_id: int, changes: Mapping[str, Any]) -> PatternRecord:
    try:
        with Session(catalog.engine) as session, session.begin():
            _pattern_row(session, DlpPatternRow.id == pattern_id, f"id {pattern_id}")
            if changes:
                session.execute(
                    update(DlpPatternRow)
                    .where(DlpPatternRow.id == pattern_id)
                    .values(**changes, updated_at=utcnow())
                )
    except IntegrityError:
        raise Conflict(f"a pattern named {changes.get('name')!r} already exists") from None
    return get_pattern(catalog, pattern_id)


def delete_pattern(catalog: Catalog, pattern_id: int) -> None:
    with catalog.engine.begin() as conn:
        conn.execute(delete(DlpPatternRow).where(DlpPatternRow.id == pattern_id))


def _pattern_row(session: Session, condition: Any, label: str) -> DlpPatternRow:
    row = session.scalars(select(DlpPatternRow).where(condition)).one_or_none()
    if row is None:
        raise NotFound(f"no DLP pattern {label}")
    return row


def _pattern(row: DlpPatternRow) -> PatternRecord:
    return PatternRecord(
        row.id,
        row.name,
        row.regex,
        row.builtin,
        row.enabled,
        row.description,
        as_utc(row.created_at),
        as_utc(row.updated_at),
    )


# -- originals of redacted texts ------------------------------------------------------
def insert_original(
    catalog: Catalog,
    *,
    original: str,
    redacted: str,
    types: Sequence[str],
    source: str,
    user_id: int | None,
    workspace_id: int | None,
    ref: str | None,
) -> str:
    original_id = secrets.token_urlsafe(16)  # unguessable: an id alone reveals nothing
    sealed = _box(catalog.engine).seal(original, bound_to=original_id)
    with catalog.engine.begin() as conn:
        conn.execute(
            insert(DlpOriginalRow).values(
                id=original_id,
                workspace_id=workspace_id,
                user_id=user_id,
                source=source,
                ref=ref,
                original=sealed,
                redacted=redacted,
                types=json.dumps(sorted(set(types))),
                created_at=utcnow(),
            )
        )
    return original_id


def get_original(session: Session, *, original_id: str | None, ref: str | None) -> OriginalRecord:
    """By id, or the newest one recorded for ``ref``."""
    query = select(DlpOriginalRow)
    if original_id is not None:
        query = query.where(DlpOriginalRow.id == original_id)
    else:
        query = query.where(DlpOriginalRow.ref == ref).order_by(DlpOriginalRow.created_at.desc())
    row = session.scalars(query.limit(1)).one_or_none()
    if row is None:
        raise NotFound("no redacted text recorded under that id")
    return OriginalRecord(
        row.id,
        row.workspace_id,
        row.user_id,
        row.source,
        row.ref,
        _open_original(session, row),
        row.redacted,
        tuple(json.loads(row.types or "[]")),
        as_utc(row.created_at),
    )


def _box(engine: Engine) -> SecretBox:
    return catalog_box(engine, SEAL_PURPOSE)


def _open_original(session: Session, row: DlpOriginalRow) -> str:
    if not is_sealed(row.original):
        return row.original  # written before originals were sealed
    return _box(session.get_bind().engine).open(row.original, bound_to=row.id)


def seal_clear_originals(conn: Connection) -> int:
    """Seal the originals still stored in clear; how many there were."""
    rows = conn.execute(select(DlpOriginalRow.id, DlpOriginalRow.original)).all()
    clear = [(row.id, row.original) for row in rows if not is_sealed(row.original)]
    if not clear:
        return 0
    box = _box(conn.engine)
    for original_id, original in clear:
        conn.execute(
            update(DlpOriginalRow)
            .where(DlpOriginalRow.id == original_id)
            .values(original=box.seal(original, bound_to=original_id))
        )
    return len(clear)


def open_sealed_originals(conn: Connection) -> int:
    """Undo ``seal_clear_originals`` (a schema downgrade); how many were opened."""
    rows = conn.execute(select(DlpOriginalRow.id, DlpOriginalRow.original)).all()
    sealed = [(row.id, row.original) for row in rows if is_sealed(row.original)]
    if not sealed:
        return 0
    box = _box(conn.engine)
    for original_id, value in sealed:
        conn.execute(
            update(DlpOriginalRow)
            .where(DlpOriginalRow.id == original_id)
            .values(original=box.open(value, bound_to=original_id))
        )
    return len(sealed)


def delete_originals(catalog: Catalog, ref: str) -> int:
    with catalog.engine.begin() as conn:
        return conn.execute(delete(DlpOriginalRow).where(DlpOriginalRow.ref == ref)).rowcount
