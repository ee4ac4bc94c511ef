"""The archive's tables (migration 0015) and all of the wiki's SQL.

Rows leave this module as the dataclasses of ``autorag.wiki.models``. Functions that
take a ``Connection`` run inside the caller's transaction (a save writes the page, its
version and its links in one); those that take an ``Engine`` open their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    union,
    union_all,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.elements import ColumnElement

from autorag.errors import Conflict, NotFound
from autorag.store.catalog.models import Base, utcnow
from autorag.times import as_utc
from autorag.wiki.links import ParsedLink
from autorag.wiki.models import (
    Archive,
    ArchiveConfig,
    Attachment,
    Link,
    Page,
    PageSummary,
    PageVersion,
    Template,
)

# Rows per IN (…) list: well under every backend's bound-parameter limit.
_IN_BATCH = 500
T = TypeVar("T")


class ArchiveRow(Base):
    __tablename__ = "archives"
    __table_args__ = (
        UniqueConstraint("workspace_id", "name", name="uq_archives_workspace_name"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(63))
    title: Mapped[str] = mapped_column(Text, default="")
    description: Mapped[str] = mapped_column(Text, default="")
    config: Mapped[str] = mapped_column(Text, default="{}")  # JSON, ArchiveConfig
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")


class ArchivePageRow(Base):
    __tablename__ = "archive_pages"
    __table_args__ = (
        UniqueConstraint("archive_id", "path", name="uq_archive_pages_path"),
        Index("ix_archive_pages_title", "archive_id", "title_key"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    archive_id: Mapped[int] = mapped_column(ForeignKey("archives.id", ondelete="CASCADE"))
    path: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text)
    title_key: Mapped[str] = mapped_column(String(300))  # links.key_of(title)
    body: Mapped[str] = mapped_column(Text)
    front_matter: Mapped[str] = mapped_column(Text, default="{}")  # JSON
    version: Mapped[int] = mapped_column(Integer)
    # The page's document in the archive's index namespace; indexed_version < version:
    # the index is behind (an embedding failed) and reindex_pages catches it up.
    document_id: Mapped[int | None] = mapped_column(Integer)
    indexed_version: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(200), default="")


class ArchivePageVersionRow(Base):
    """Every saved version of a page, the current one included."""

    __tablename__ = "archive_page_versions"

    page_id: Mapped[int] = mapped_column(
        ForeignKey("archive_pages.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(String(200))
    title: Mapped[str] = mapped_column(Text)
    body: Mapped[str] = mapped_column(Text)
    front_matter: Mapped[str] = mapped_column(Text, default="{}")
    saved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    saved_by: Mapped[str] = mapped_column(String(200), default="")
    note: Mapped[str] = mapped_column(Text, default="")


class ArchiveLinkRow(Base):
    __tablename__ = "archive_links"
    __table_args__ = (
        Index("ix_archive_links_source", "source_page_id", "position"),
        Index("ix_archive_links_target", "target_page_id"),
        Index("ix_archive_links_key", "archive_id", "target_key"),
        Index("ix_archive_links_slug", "archive_id", "target_slug"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    archive_id: Mapped[int] = mapped_column(ForeignKey("archives.id", ondelete="CASCADE"))
    source_page_id: Mapped[int] = mapped_column(ForeignKey("archive_pages.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    target: Mapped[str] = mapped_column(String(300))  # as written
    target_key: Mapped[str] = mapped_column(String(300))  # title match key
    target_slug: Mapped[str | None] = mapped_column(String(200))  # path match key
    target_page_id: Mapped[int | None] = mapped_column(
        ForeignKey("archive_pages.id", ondelete="SET NULL")
    )
    label: Mapped[str | None] = mapped_column(Text)
    heading: Mapped[str | None] = mapped_column(Text)
    context: Mapped[str] = mapped_column(Text, default="")


class ArchiveAliasRow(Base):
    """An old path (kind ``path``) or title (kind ``title``) that still names a page."""

    __tablename__ = "archive_aliases"
    __table_args__ = (Index("ix_archive_aliases_page", "page_id"),)

    archive_id: Mapped[int] = mapped_column(
        ForeignKey("archives.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    page_id: Mapped[int] = mapped_column(ForeignKey("archive_pages.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ArchiveTemplateRow(Base):
    """A workspace's own page template (the built-ins live in code)."""

    __tablename__ = "archive_templates"
    __table_args__ = (UniqueConstraint("workspace_id", "name", name="uq_archive_templates_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(63))
    title: Mapped[str] = mapped_column(Text, default="")
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")


class ArchiveAttachmentRow(Base):
    __tablename__ = "archive_attachments"
    __table_args__ = (UniqueConstraint("archive_id", "name", name="uq_archive_attachments_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    archive_id: Mapped[int] = mapped_column(ForeignKey("archives.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    media_type: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    created_by: Mapped[str] = mapped_column(String(200), default="")


A = ArchiveRow
P = ArchivePageRow
V = ArchivePageVersionRow
L = ArchiveLinkRow
AL = ArchiveAliasRow


@dataclass(frozen=True)
class PageState:
    """What a save checks and the index needs beside the page itself."""

    page: Page
    title_key: str
    document_id: int | None
    indexed_version: int


def batches(items: Iterable[T], size: int = _IN_BATCH) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# -- archives ---------------------------------------------------------------------------
def config_json(config: ArchiveConfig) -> str:
    return json.dumps(
        {
            "allow_agent_writes": config.allow_agent_writes,
            "local_llm_only": config.local_llm_only,
            "writers": list(config.writers),
        }
    )


def _config(raw: str) -> ArchiveConfig:
    try:
        data = json.loads(raw or "{}")
    except ValueError:
        data = {}
    return ArchiveConfig(
        allow_agent_writes=bool(data.get("allow_agent_writes", False)),
        local_llm_only=bool(data.get("local_llm_only", False)),
        writers=tuple(str(name) for name in data.get("writers") or () if isinstance(name, str)),
    )


def _archive(row: Any) -> Archive:
    return Archive(
        id=row.id, workspace_id=row.workspace_id, name=row.name, title=row.title,
        description=row.description, config=_config(row.config),
        created_at=as_utc(row.created_at), updated_at=as_utc(row.updated_at),
        created_by=row.created_by,
        page_count=getattr(row, "page_count", 0),
    )  # fmt: skip


def _archives_query() -> Any:
    # Counted per archive row through the (archive_id, path) index, not grouped over all.
    pages = select(func.count()).where(P.archive_id == A.id).scalar_subquery()
    return select(A.__table__, pages.label("page_count"))


def insert_archive(
    engine: Engine, workspace_id: int, name: str, *, title: str, description: str,
    config: ArchiveConfig, by: str,
) -> Archive:  # fmt: skip
    now = utcnow()
    values = {
        "workspace_id": workspace_id, "name": name, "title": title, "description": description,
        "config": config_json(config), "created_at": now, "updated_at": now, "created_by": by,
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            archive_id = conn.execute(insert(A).values(**values).returning(A.id)).scalar_one()
    except IntegrityError:
        raise Conflict(f"an archive named {name!r} exists already", code="archive_exists") from None
    return _archive(SimpleNamespace(id=archive_id, **values))


def list_archives(engine: Engine, workspace_id: int) -> list[Archive]:
    query = _archives_query().where(A.workspace_id == workspace_id).order_by(A.name)
    with engine.connect() as conn:
        return [_archive(row) for row in conn.execute(query)]


def has_archive(engine: Engine, workspace_id: int) -> bool:
    """Whether the workspace has an archive at all (one indexed row read, no counts)."""
    query = select(A.id).where(A.workspace_id == workspace_id).limit(1)
    with engine.connect() as conn:
        return conn.execute(query).first() is not None


def archive_names(engine: Engine, workspace_id: int, ids: Iterable[int]) -> dict[int, str]:
    """The names of the workspace's archives among ``ids`` (another workspace's: none)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    query = select(A.id, A.name).where(A.workspace_id == workspace_id, A.id.in_(wanted))
    with engine.connect() as conn:
        return {row.id: row.name for row in conn.execute(query)}


def find_archive(engine: Engine, workspace_id: int, *, name: str | None = None,
                 archive_id: int | None = None,
                 counted: bool = True) -> Archive | None:  # fmt: skip
    """The archive by name or id; ``counted=False`` leaves its ``page_count`` at 0 (no
    count query: for lookups that only need the archive itself)."""
    # (``select(A.__table__)`` inferred through its overloads crashes mypy 2.4.)
    query = _archives_query() if counted else A.__table__.select()
    query = query.where(A.workspace_id == workspace_id)
    query = query.where(A.name == name) if name is not None else query.where(A.id == archive_id)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return _archive(row) if row is not None else None


def update_archive(engine: Engine, archive_id: int, values: dict[str, Any]) -> None:
    with engine.begin() as conn:
        conn.execute(update(A).where(A.id == archive_id).values(**values, updated_at=utcnow()))


def forget_index(engine: Engine, archive_id: int) -> None:
    """Mark every page of the archive as not indexed (before its index is dropped: an
    archive whose deletion then fails gets its pages indexed again by reindex_pages)."""
    with engine.begin() as conn:
        conn.execute(
            update(P).where(P.archive_id == archive_id).values(indexed_version=0, document_id=None)
        )


def delete_archive(engine: Engine, archive_id: int) -> None:
    with engine.begin() as conn:
        # Links first: their SET NULL on pages would otherwise run for every row.
        conn.execute(delete(L).where(L.archive_id == archive_id))
        conn.execute(delete(A).where(A.id == archive_id))


# -- pages ------------------------------------------------------------------------------
_SUMMARY = (P.id, P.archive_id, P.path, P.title, P.version, P.updated_at, P.updated_by)


def _summary(row: Any) -> PageSummary:
    page_id, archive_id, path, title, version, updated_at, updated_by = row
    return PageSummary(page_id, archive_id, path, title, version, as_utc(updated_at), updated_by)


def list_pages(engine: Engine, archive_id: int) -> list[PageSummary]:
    query = select(*_SUMMARY).where(P.archive_id == archive_id).order_by(P.path)
    with engine.connect() as conn:
        return [_summary(row) for row in conn.execute(query)]


def full_pages(engine: Engine, archive_id: int) -> list[Page]:
    """Every page of the archive with its body, by path (one query: an export)."""
    query = select(P.__table__).where(P.archive_id == archive_id).order_by(P.path)
    with engine.connect() as conn:
        return [_page(row) for row in conn.execute(query)]


def pages_by_paths(engine: Engine, archive_id: int, paths: Iterable[str]) -> dict[str, PageSummary]:
    """The pages at these paths (paths with no page are left out)."""
    found: dict[str, PageSummary] = {}
    with engine.connect() as conn:
        for batch in batches(set(paths)):
            query = select(*_SUMMARY).where(P.archive_id == archive_id, P.path.in_(batch))
            for row in conn.execute(query):
                found[row.path] = _summary(row)
    return found


def _page(row: Any) -> Page:
    return Page(
        id=row.id, archive_id=row.archive_id, path=row.path, title=row.title, body=row.body,
        front_matter=json.loads(row.front_matter or "{}"), version=row.version,
        created_at=as_utc(row.created_at), created_by=row.created_by,
        updated_at=as_utc(row.updated_at), updated_by=row.updated_by,
    )  # fmt: skip


def _state(row: Any) -> PageState:
    return PageState(_page(row), row.title_key, row.document_id, row.indexed_version)


def page_state(conn: Connection, archive_id: int, *, path: str | None = None,
               page_id: int | None = None) -> PageState | None:  # fmt: skip
    query = select(P.__table__).where(P.archive_id == archive_id)
    query = query.where(P.path == path) if path is not None else query.where(P.id == page_id)
    row = conn.execute(query).first()
    return _state(row) if row is not None else None


def behind_index(engine: Engine, archive_id: int) -> list[PageState]:
    query = select(P.__table__).where(P.archive_id == archive_id, P.indexed_version != P.version)
    with engine.connect() as conn:
        return [_state(row) for row in conn.execute(query.order_by(P.id))]


def find_page_id(conn: Connection, archive_id: int, *, slug: str | None, key: str) -> int | None:
    """A page named by a path, a title or an alias: ``resolve`` for one name."""
    return resolve(conn, archive_id, [(slug, key)]).get((slug, key))


def insert_page(conn: Connection, archive_id: int, values: dict[str, Any]) -> int:
    return int(
        conn.execute(insert(P).values(archive_id=archive_id, **values).returning(P.id)).scalar_one()
    )


def update_page(conn: Connection, page_id: int, base_version: int, values: dict[str, Any]) -> bool:
    """The page's new content, only if it is still at ``base_version`` (one atomic
    statement: of two racing saves on one base, exactly one matches)."""
    result = conn.execute(
        update(P)
        .where(P.id == page_id, P.version == base_version)
        .values(version=P.version + 1, **values)
    )
    return result.rowcount == 1


def current_version(conn: Connection, page_id: int) -> int | None:
    return conn.execute(select(P.version).where(P.id == page_id)).scalar()


def mark_indexed(engine: Engine, page_id: int, version: int, document_id: int) -> bool:
    """Record that ``version`` is in the index; False when a newer one was recorded
    first (its put may then have been overwritten by this older one's)."""
    with engine.begin() as conn:
        result = conn.execute(
            update(P)
            .where(P.id == page_id, P.indexed_version < version)
            .values(indexed_version=version, document_id=document_id)
        )
        return result.rowcount == 1


def lock_archive(conn: Connection, archive_id: int) -> None:
    """Writers of one archive's pages take turns (PostgreSQL's row lock; SQLite has one
    writer anyway): a save resolves its links against what the others committed, so two
    pages created at once never leave a link dangling, and a deleted page's row is never
    the target of a link being written."""
    conn.execute(select(A.id).where(A.id == archive_id).with_for_update())


def delete_page(conn: Connection, page_id: int) -> None:
    conn.execute(delete(P).where(P.id == page_id))


# -- versions ---------------------------------------------------------------------------
def insert_version(conn: Connection, page_id: int, version: int, values: dict[str, Any]) -> None:
    conn.execute(insert(V).values(page_id=page_id, version=version, **values))


def _version(row: Any) -> PageVersion:
    return PageVersion(
        page_id=row.page_id, version=row.version, path=row.path, title=row.title, body=row.body,
        front_matter=json.loads(row.front_matter or "{}"), saved_at=as_utc(row.saved_at),
        saved_by=row.saved_by, note=row.note,
    )  # fmt: skip


def versions(engine: Engine, page_id: int) -> list[PageVersion]:
    query = select(V.__table__).where(V.page_id == page_id).order_by(V.version.desc())
    with engine.connect() as conn:
        return [_version(row) for row in conn.execute(query)]


def version(engine: Engine, page_id: int, number: int) -> PageVersion | None:
    query = select(V.__table__).where(V.page_id == page_id, V.version == number)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return _version(row) if row is not None else None


# -- links ------------------------------------------------------------------------------
Name = tuple[str | None, str]  # (slug, key): how a link names its target


def resolve(conn: Connection, archive_id: int, names: Iterable[Name]) -> dict[Name, int]:
    """The page each name resolves to: by path, else by title (case-insensitive; the
    oldest page when titles repeat), else by an old path, else by an old title. One
    query per 500 names, each of its four parts on an index."""
    names = set(names)
    found: dict[tuple[int, str], int] = {}  # (rank, path or key) -> page id
    for batch in batches(names):
        slugs = sorted({slug for slug, _ in batch if slug})
        keys = sorted({key for _, key in batch})
        aliases = AL.archive_id == archive_id
        query = union_all(
            select(literal(1, Integer), P.path, P.id).where(
                P.archive_id == archive_id, P.path.in_(slugs)
            ),
            select(literal(2, Integer), P.title_key, func.min(P.id))
            .where(P.archive_id == archive_id, P.title_key.in_(keys))
            .group_by(P.title_key),
            select(literal(3, Integer), AL.key, AL.page_id).where(
                aliases, AL.kind == "path", AL.key.in_(slugs)
            ),
            select(literal(4, Integer), AL.key, AL.page_id).where(
                aliases, AL.kind == "title", AL.key.in_(keys)
            ),
        )
        found.update({(row[0], row[1]): row[2] for row in conn.execute(query)})
    resolved: dict[Name, int] = {}
    for slug, key in names:
        candidates = ((1, slug), (2, key), (3, slug), (4, key))
        page_id = next((found[c] for c in candidates if c[1] and c in found), None)
        if page_id is not None:
            resolved[(slug, key)] = page_id
    return resolved


def replace_links(
    conn: Connection, archive_id: int, page_id: int, parsed: Sequence[ParsedLink]
) -> None:
    """The page's outgoing links, as parsed from its new content, each resolved now."""
    conn.execute(delete(L).where(L.source_page_id == page_id))
    if not parsed:
        return
    resolved = resolve(conn, archive_id, ((link.slug, link.key) for link in parsed))
    rows = [
        {
            "archive_id": archive_id,
            "source_page_id": page_id,
            "position": link.position,
            "target": link.target,
            "target_key": link.key,
            "target_slug": link.slug,
            "target_page_id": resolved.get((link.slug, link.key)),
            "label": link.label,
            "heading": link.heading,
            "context": link.context,
        }
        for link in parsed
    ]
    conn.execute(insert(L), rows)


def reresolve(
    conn: Connection, archive_id: int, *, slugs: Iterable[str] = (), keys: Iterable[str] = ()
) -> None:
    """Resolve again the links that name one of these paths or titles (a page by that
    name appeared, moved or went): only those rows, never the whole table."""
    slugs, keys = sorted(set(slugs)), sorted(set(keys))
    names: set[Name] = set()
    if slugs or keys:  # a handful: the old and new path and title of one page
        query = union(
            select(L.target_slug, L.target_key).where(
                L.archive_id == archive_id, L.target_slug.in_(slugs)
            ),
            select(L.target_slug, L.target_key).where(
                L.archive_id == archive_id, L.target_key.in_(keys)
            ),
        )
        names.update((row[0], row[1]) for row in conn.execute(query))
    if not names:
        return
    resolved = resolve(conn, archive_id, names)
    for slug, key in sorted(names, key=lambda name: (name[0] or "", name[1])):
        target = resolved.get((slug, key))
        same_slug = L.target_slug.is_(None) if slug is None else L.target_slug == slug
        changed: ColumnElement[bool] = (
            L.target_page_id.is_not(None)
            if target is None
            else or_(L.target_page_id.is_(None), L.target_page_id != target)
        )
        conn.execute(
            update(L)
            .where(L.archive_id == archive_id, L.target_key == key, same_slug, changed)
            .values(target_page_id=target)
        )


def _link_query() -> Any:
    source = P.__table__.alias("source")
    target = P.__table__.alias("target")
    query = (
        select(
            L.source_page_id,
            source.c.path,
            L.target,
            L.target_page_id,
            target.c.path,
            L.label,
            L.heading,
            L.context,
        )
        .join(source, source.c.id == L.source_page_id)
        .outerjoin(target, target.c.id == L.target_page_id)
    )
    return query, source


def _links(conn: Connection, query: Any) -> list[Link]:
    return [Link(*row) for row in conn.execute(query)]


def outgoing(engine: Engine, page_id: int) -> list[Link]:
    query, _ = _link_query()
    with engine.connect() as conn:
        return _links(conn, query.where(L.source_page_id == page_id).order_by(L.position))


def backlinks(engine: Engine, page_id: int) -> list[Link]:
    query, source = _link_query()
    query = query.where(L.target_page_id == page_id).order_by(source.c.path, L.position)
    with engine.connect() as conn:
        return _links(conn, query)


def page_nodes(engine: Engine, archive_id: int) -> list[tuple[int, str, str]]:
    query = select(P.id, P.path, P.title).where(P.archive_id == archive_id).order_by(P.path)
    with engine.connect() as conn:
        return [(row[0], row[1], row[2]) for row in conn.execute(query)]


Edge = tuple[int, int | None, str, str]  # (source id, target id or None, target key, target)


def all_edges(engine: Engine, archive_id: int) -> list[Edge]:
    query = (
        select(L.source_page_id, L.target_page_id, L.target_key, func.min(L.target))
        .where(L.archive_id == archive_id)
        .group_by(L.source_page_id, L.target_page_id, L.target_key)
    )
    with engine.connect() as conn:
        return [(row[0], row[1], row[2], row[3]) for row in conn.execute(query)]


def nearest_pages(engine: Engine, start: int, depth: int, limit: int) -> list[tuple[int, str, str]]:
    """``(id, path, title)`` of the pages within ``depth`` links of ``start``, following
    links both ways, nearest first (then by id), at most ``limit``: one statement, the
    walk done by the database through the source and target indexes."""
    rings: list[Any] = [select(literal(start, Integer).label("id"), literal(0, Integer).label("d"))]
    previous = select(literal(start, Integer).label("id")).cte("ring0")
    for step in range(1, depth + 1):
        ids = select(previous.c.id)
        out = select(L.target_page_id.label("id")).where(
            L.source_page_id.in_(ids), L.target_page_id.is_not(None)
        )
        back = select(L.source_page_id.label("id")).where(L.target_page_id.in_(ids))
        previous = union(out, back).cte(f"ring{step}")
        rings.append(select(previous.c.id, literal(step, Integer).label("d")))
    walked = union_all(*rings).subquery("walked")
    nearest = (
        select(walked.c.id, func.min(walked.c.d).label("d"))
        .group_by(walked.c.id)
        .order_by(func.min(walked.c.d), walked.c.id)
        .limit(limit)
        .subquery("nearest")
    )
    query = (
        select(P.id, P.path, P.title)
        .join(nearest, nearest.c.id == P.id)
        .order_by(nearest.c.d, nearest.c.id)
    )
    with engine.connect() as conn:
        return [(row[0], row[1], row[2]) for row in conn.execute(query)]


def edges_among(engine: Engine, page_ids: Sequence[int]) -> list[Edge]:
    """The links from these pages to one another or to nothing yet (dangling), found
    through the source index."""
    among = set(page_ids)
    edges: list[Edge] = []
    with engine.connect() as conn:
        for batch in batches(page_ids):
            query = select(L.source_page_id, L.target_page_id, L.target_key, L.target).where(
                L.source_page_id.in_(batch)
            )
            edges.extend(
                (row[0], row[1], row[2], row[3])
                for row in conn.execute(query)
                if row[1] is None or row[1] in among
            )
    return edges


# -- aliases ----------------------------------------------------------------------------
def add_alias(conn: Connection, archive_id: int, page_id: int, kind: str, key: str) -> None:
    """``key`` (an old path or title key) names ``page_id`` from now on."""
    conn.execute(delete(AL).where(AL.archive_id == archive_id, AL.kind == kind, AL.key == key))
    conn.execute(
        insert(AL).values(
            archive_id=archive_id, kind=kind, key=key, page_id=page_id, created_at=utcnow()
        )
    )


def aliases_of(conn: Connection, page_id: int) -> list[tuple[str, str]]:
    query = select(AL.kind, AL.key).where(AL.page_id == page_id)
    return [(row[0], row[1]) for row in conn.execute(query)]


# -- templates --------------------------------------------------------------------------
def list_templates(engine: Engine, workspace_id: int) -> list[Template]:
    T_ = ArchiveTemplateRow
    query = select(T_.name, T_.title, T_.body).where(T_.workspace_id == workspace_id)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(T_.name))
        return [Template(row[0], row[1], row[2], builtin=False) for row in rows]


def insert_template(engine: Engine, workspace_id: int, template: Template, *, by: str) -> None:
    values = {
        "workspace_id": workspace_id, "name": template.name, "title": template.title,
        "body": template.body, "created_at": utcnow(), "created_by": by,
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            conn.execute(insert(ArchiveTemplateRow).values(**values))
    except IntegrityError:
        raise Conflict(
            f"a template named {template.name!r} exists already", code="template_exists"
        ) from None


def delete_template(engine: Engine, workspace_id: int, name: str) -> None:
    T_ = ArchiveTemplateRow
    with engine.begin() as conn:
        result = conn.execute(delete(T_).where(T_.workspace_id == workspace_id, T_.name == name))
    if result.rowcount == 0:
        raise NotFound(f"no template named {name!r}", code="template_not_found")


# -- attachments ------------------------------------------------------------------------
_ATT = ArchiveAttachmentRow


def _attachment(row: Any) -> Attachment:
    return Attachment(
        row.archive_id, row.name, row.media_type, row.size, row.sha256,
        as_utc(row.created_at), row.created_by,
    )  # fmt: skip


def put_attachment(
    engine: Engine, archive_id: int, name: str, *, media_type: str, data: bytes, sha256: str,
    by: str,
) -> Attachment:  # fmt: skip
    """Store (or replace) the file ``name`` of an archive."""
    values = {
        "archive_id": archive_id, "name": name, "media_type": media_type, "size": len(data),
        "sha256": sha256, "data": data, "created_at": utcnow(), "created_by": by,
    }  # fmt: skip
    with engine.begin() as conn:
        # Uploads of one name take turns: the second replaces the first, never a 500.
        lock_archive(conn, archive_id)
        conn.execute(delete(_ATT).where(_ATT.archive_id == archive_id, _ATT.name == name))
        conn.execute(insert(_ATT).values(**values))
    return _attachment(SimpleNamespace(**values))


def list_attachments(engine: Engine, archive_id: int) -> list[Attachment]:
    columns = [c for c in _ATT.__table__.c if c.name != "data"]
    query = select(*columns).where(_ATT.archive_id == archive_id).order_by(_ATT.name)
    with engine.connect() as conn:
        return [_attachment(row) for row in conn.execute(query)]


def get_attachment(engine: Engine, archive_id: int, name: str) -> tuple[str, bytes] | None:
    query = select(_ATT.media_type, _ATT.data).where(
        _ATT.archive_id == archive_id, _ATT.name == name
    )
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return (row[0], bytes(row[1])) if row is not None else None
