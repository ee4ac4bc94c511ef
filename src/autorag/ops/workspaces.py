"""Workspaces: list, create, rename and delete them across every store.

A workspace owns catalog rows (documents, chunks and so full-text rows, jobs), one
vector table named after it, a folder of uploads named by its short id, and its
archives, each with a hidden index namespace (``archive:<id>``, never listed here).
Renaming moves the vector table and the upload source ids; deleting removes all of it.
"""

from __future__ import annotations

import re
import secrets
import shutil
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, literal, select, update
from sqlalchemy.exc import IntegrityError

from autorag.context import AppContext
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.ingest.reembed import REEMBED_JOB
from autorag.ingest.uploads import uploads_dir
from autorag.store.catalog import outbox, queue
from autorag.store.catalog.models import DocumentRow, JobRow, WorkspaceRow, utcnow
from autorag.store.catalog.repository import WORKSPACE_KIND, Catalog, WorkspaceInfo
from autorag.wiki.service import WikiService
from autorag.workspace_settings import WorkspaceSettings, parse_settings

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
_NAME = re.compile(NAME_PATTERN)


@dataclass(frozen=True)
class WorkspaceSummary:
    info: WorkspaceInfo
    created_at: datetime
    documents: int
    settings: WorkspaceSettings


def validate_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid workspace name {name!r}: 1 to 63 characters, lowercase letters, digits, "
            "'-' and '_', starting with a letter or digit",
            code="invalid_workspace_name",
        )
    return name


# -- reads ----------------------------------------------------------------------------
def list_workspaces(catalog: Catalog, *, hidden: bool = False) -> list[WorkspaceSummary]:
    """The workspaces people use; with ``hidden``, the hidden namespaces too (archives'
    indexes), for whole-catalog work such as a migration."""
    counts = (
        select(DocumentRow.workspace_id, func.count(DocumentRow.id).label("n"))
        .where(DocumentRow.status != "deleting")
        .group_by(DocumentRow.workspace_id)
        .subquery()
    )
    query = (
        select(WorkspaceRow, func.coalesce(counts.c.n, 0))
        .outerjoin(counts, counts.c.workspace_id == WorkspaceRow.id)
        .order_by(WorkspaceRow.name)
    )
    if not hidden:
        query = query.where(WorkspaceRow.kind == WORKSPACE_KIND)
    with catalog.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        WorkspaceSummary(
            WorkspaceInfo(r.id, r.name, r.short_id),
            r.created_at,
            int(r[-1]),
            parse_settings(r.settings),
        )
        for r in rows
    ]


def workspace_by_id(catalog: Catalog, workspace_id: int) -> WorkspaceInfo:
    query = select(WorkspaceRow.id, WorkspaceRow.name, WorkspaceRow.short_id).where(
        WorkspaceRow.id == workspace_id
    )
    with catalog.engine.connect() as conn:
        row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"no workspace with id {workspace_id}")
    return WorkspaceInfo(row[0], row[1], row[2])


def describe_workspace(catalog: Catalog, name: str) -> WorkspaceSummary:
    for summary in list_workspaces(catalog):
        if summary.info.name == name:
            return summary
    raise NotFound(f"no workspace {name!r}")


# -- changes --------------------------------------------------------------------------
def create_workspace(catalog: Catalog, name: str) -> WorkspaceInfo:
    validate_name(name)
    try:
        with catalog.engine.begin() as conn:
            created = conn.execute(
                insert(WorkspaceRow)
                .values(
                    name=name,
                    short_id=secrets.token_hex(4),
                    settings="{}",
                    created_at=utcnow(),
                )
                .returning(WorkspaceRow.id)
            ).scalar_one()
            outbox.emit(conn, "workspace.created", {"workspace": created}, workspace=name)
    except IntegrityError:
        raise Conflict(f"workspace {name!r} already exists") from None
    return catalog.get_workspace(name)


def rename_workspace(
    context: AppContext, new_name: str, *, protected: str, this_process: str | None = None
) -> WorkspaceInfo:
    """Rename the workspace ``context`` is scoped to; its vector table moves with it.

    The caller holds the workspace exclusively within its process; jobs another process
    is running on it make this a ``Conflict``. ``protected`` is the workspace the
    server's configuration names, which keeps its name.
    """
    old = context.info
    validate_name(new_name)
    if new_name == old.name:
        return old
    _check_changeable(context.catalog, old, protected, this_process)
    if _exists(context.catalog, new_name):
        raise Conflict(f"workspace {new_name!r} already exists")
    new = WorkspaceInfo(old.id, new_name, old.short_id)
    # Names that differ only past 40 characters or in '-' for '_' share a table.
    moves = new.vector_table != old.vector_table
    vectors = context.vectors
    if moves:  # copy first, drop last: a crash between leaves a spare table, not a lost one
        vectors.copy_to(new.vector_table)
    old_prefix, new_prefix = f"/uploads/{old.name}/", f"/uploads/{new_name}/"
    try:
        with context.catalog.engine.begin() as conn:
            conn.execute(
                update(WorkspaceRow).where(WorkspaceRow.id == old.id).values(name=new_name)
            )
            conn.execute(
                update(DocumentRow)
                .where(
                    DocumentRow.workspace_id == old.id,
                    DocumentRow.origin == "upload",
                    func.substr(DocumentRow.source_id, 1, len(old_prefix)) == old_prefix,
                )
                .values(
                    source_id=literal(new_prefix)
                    + func.substr(DocumentRow.source_id, len(old_prefix) + 1)
                )
            )
            renamed = {"workspace": old.id, "renamedFrom": old.name}
            outbox.emit(conn, "workspace.updated", renamed, workspace=new_name)
    except IntegrityError:  # lost a race for the name: the copied table is a spare
        raise Conflict(f"workspace {new_name!r} already exists") from None
    if moves:
        vectors.drop()
    return new


def delete_workspace(
    context: AppContext, *, protected: str, this_process: str | None = None
) -> None:
    """Delete the workspace ``context`` is scoped to, from every store."""
    info = context.info
    _check_changeable(context.catalog, info, protected, this_process)
    wiki = WikiService(context)
    for archive in wiki.list_archives():  # each with its hidden index namespace
        wiki.delete_archive(archive.id)
    context.catalog.delete_workspace_rows(info.id)
    # Recreate-then-drop opens the table whatever vector size it holds.
    context.open_vectors(recreate=True).drop()
    shutil.rmtree(uploads_dir(context.workspace.data_dir, info), ignore_errors=True)


def _check_changeable(
    catalog: Catalog, info: WorkspaceInfo, protected: str, this_process: str | None
) -> None:
    if info.name == protected:
        raise Conflict(
            f"workspace {info.name!r} is the one the configuration names (`workspace` in "
            "autorag.toml); it cannot be renamed or deleted"
        )
    if queue.active_job(catalog.engine, info.id, REEMBED_JOB) is not None:
        raise Conflict(f"workspace {info.name!r} is being re-embedded; try again afterwards")
    query = select(JobRow.claimed_by).where(
        JobRow.workspace_id == info.id, JobRow.status == queue.RUNNING
    )
    with catalog.engine.connect() as conn:
        claimers = [r[0] for r in conn.execute(query)]
    foreign = [
        c
        for c in claimers
        if not (this_process and (c or "").startswith(this_process))
        and queue.claimer_alive(c) is not False
    ]
    if foreign:
        raise Conflict(
            f"workspace {info.name!r} has {len(foreign)} job(s) running in another process; "
            "try again when they finish"
        )


def _exists(catalog: Catalog, name: str) -> bool:
    with catalog.engine.connect() as conn:
        found = conn.execute(select(WorkspaceRow.id).where(WorkspaceRow.name == name)).first()
    return found is not None
