"""Put a backup back in place of a workspace's state: all of it, or nothing.

The caller has verified the archive, made the safety backup and holds the workspace
alone (no server working on it, its catalog engine disposed). Then:

1. Every entry is extracted into a staging folder beside ``.autorag/`` (the same file
   system, so what follows are renames), its bytes checked against the manifest again.
2. A SQLite catalog is brought to the newest schema there, with the current catalog's
   backup jobs and runs carried into it (a restore loses neither the schedule nor the
   history), then swapped in with ``os.replace``. Each part of the workspace (vectors,
   uploads, P2P files, ``autorag.toml``, the keys) is swapped by rename, the replaced
   one kept aside. A PostgreSQL catalog is dumped first (to put back), then replaced by
   ``psql`` in one transaction, migrated and given the carried rows.
3. Vectors not in the backup (left out, or in a store the backup does not hold) are
   rebuilt from the restored catalog's chunks, and readiness is checked.

Any failure on the way undoes every swap already made, in reverse, and removes what
was staged: the workspace is as it was. Each swap is journalled in the staging folder
before it is made, so a restore killed half-way is taken back at the next start
(``recover_interrupted_restores``). ``autorag.toml`` comes back from the backup
except its ``database_url``, which stays the one this workspace uses.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine, MetaData, Table, delete, insert, inspect, select, text
from sqlalchemy.engine import make_url

from autorag.backup.archive import ProgressFn
from autorag.backup.crypto import BackupDamaged
from autorag.backup.dump import dump_postgres, postgres_facts, restore_postgres
from autorag.backup.models import Manifest, Progress, RestoreReport
from autorag.backup.paths import (
    ALL_AREAS,
    CONFIG_ENTRY,
    POSTGRES_ENTRY,
    SQLITE_ENTRY,
    area_of,
    place_of,
)
from autorag.backup.verify import copy_entry, entry_problems, open_backup
from autorag.config import Settings
from autorag.context import AppContext, open_context
from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.ingest.reindex import reindex
from autorag.keyring import Keyring
from autorag.private_files import create_private, make_private_dir
from autorag.store.catalog.db import (
    bind_data_dir,
    create_catalog_engine,
    migrate,
    normalize_database_url,
    sqlite_url,
)
from autorag.store.catalog.models import DocumentRow, WorkspaceRow
from autorag.store.catalog.repository import VISIBLE_STATUS, WorkspaceInfo
from autorag.workspace import RESTORE_STAGING_PREFIX, Workspace

JOURNAL = "journal.jsonl"  # in a staging folder: the swaps made, one JSON line each
DONE = "done"  # in a staging folder: the restore succeeded
# The catalog's own record of backups, kept from the current catalog (parents first).
CARRIED_TABLES = ("backup_jobs", "backup_runs")
_SQLITE_SIDE_FILES = ("-wal", "-shm")
_UNHEALTHY = ("degraded", "unavailable")

Carried = dict[str, list[dict[str, Any]]]


def restore_staging_dir(workspace: Workspace) -> Path:
    """A new staging folder's path: beside ``.autorag/``, on the same file system."""
    return workspace.root / f"{RESTORE_STAGING_PREFIX}{secrets.token_hex(4)}"


def restore_archive(
    workspace: Workspace,
    settings: Settings,
    path: Path,
    keyring: Keyring,
    *,
    progress: ProgressFn | None = None,
) -> RestoreReport:
    """Replace ``workspace``'s catalog, vectors, files, configuration and keys with the
    backup at ``path`` (see the module docstring); ``settings`` are the workspace's
    current ones (where its catalog is)."""
    report = progress or _ignore
    staging = make_private_dir(restore_staging_dir(workspace))
    undo = _Undo(staging)
    try:
        url = _catalog_url(workspace, settings)
        manifest = _extract(path, keyring, staging, url, report)
        result = _put_in_place(workspace, settings, staging, manifest, undo, report)
    except BaseException as exc:
        _roll_back(undo, staging, exc)
        raise
    (staging / DONE).touch()  # from here a restart only removes the leftovers
    shutil.rmtree(staging, ignore_errors=True)
    report(Progress("restore", 1, 1, f"restored {path.name}"))
    return RestoreReport(path.name, None, manifest, *result)


def _ignore(_progress: Progress) -> None:
    return None


def _roll_back(undo: _Undo, staging: Path, cause: BaseException) -> None:
    failures = undo.run()
    if not failures:
        shutil.rmtree(staging, ignore_errors=True)
        return
    raise Unavailable(
        f"the restore failed ({_reason(cause)}) and could not put everything back: "
        f"{'; '.join(failures)}. What it replaced is kept in {staging / 'replaced'}; "
        "the safety backup holds the state before the restore"
    ) from cause


def _reason(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AutoragError) else f"{type(exc).__name__}: {exc}"


# -- 1. extract ------------------------------------------------------------------------
def _extract(path: Path, keyring: Keyring, staging: Path, url: str, report: ProgressFn) -> Manifest:
    new = Workspace(staging / "new")
    make_private_dir(new.data_dir)
    with open_backup(path, keyring) as (archive, manifest):
        problems = entry_problems(archive, manifest)
        if problems:
            raise BackupDamaged(f"refused to restore {path.name}: {' '.join(problems)}")
        _require_same_catalog(manifest, url)
        infos = {info.filename: info for info in archive.infolist()}
        total = sum(f.size for f in manifest.files)
        done = 0
        for expected in manifest.files:
            target = _staged_path(new, staging, expected.path)
            make_private_dir(target.parent)
            with create_private(target) as out:
                copy_entry(archive, infos[expected.path], expected, out.write)
            done += expected.size
            report(Progress("extract", done, total))
    return manifest


def _catalog_url(workspace: Workspace, settings: Settings) -> str:
    return normalize_database_url(settings.database_url or sqlite_url(workspace.database_file))


def _require_same_catalog(manifest: Manifest, url: str) -> None:
    kind = "sqlite" if url.startswith("sqlite") else "postgresql"
    if manifest.catalog_kind != kind:
        raise InvalidInput(
            f"this backup holds a {manifest.catalog_kind} catalog and this workspace's "
            f"catalog is {kind}: restore it into a workspace with a {manifest.catalog_kind} "
            "catalog (then `autorag migrate` to move it, if wanted)",
            code="backup_catalog_kind",
        )


def _staged_path(new: Workspace, staging: Path, name: str) -> Path:
    """Where entry ``name`` is extracted: inside ``staging``, whatever it says."""
    if name == SQLITE_ENTRY:
        target = new.database_file
    elif name == POSTGRES_ENTRY:
        target = staging / "catalog.sql"
    else:
        area = area_of(name)
        if area is None:
            raise BackupDamaged(f"{name}: not a part of a workspace this AutoRAG restores")
        target = place_of(new, area, name)
    if not target.resolve().is_relative_to(staging.resolve()):
        raise BackupDamaged(f"{name}: would be written outside the restore's folder")
    return target


# -- 2. swap ---------------------------------------------------------------------------
class _Undo:
    """The swaps made so far, each with how to take it back; what they replaced is kept
    in ``aside`` until the restore succeeds. Each swap is written to the staging
    folder's journal before it is made, so a restore killed half-way is taken back at
    the next start (``recover_interrupted_restores``)."""

    def __init__(self, staging: Path) -> None:
        self._aside = staging / "replaced"
        self._journal = staging / JOURNAL
        self._actions: list[Callable[[], None]] = []

    def note(self, record: dict[str, Any]) -> None:
        """Journal a swap about to be made (what a restart needs to take it back)."""
        _append_journal(self._journal, record)

    def push(self, action: Callable[[], None]) -> None:
        """How to take back a swap being made, should this restore fail."""
        self._actions.append(action)

    def replace(self, live: Path, new: Path | None) -> None:
        """``new`` (None: nothing) where ``live`` is; the live one kept aside."""
        make_private_dir(self._aside)
        number = len(self._actions)
        had = os.path.lexists(live)
        kept = self._aside / f"{number}-{live.name}" if had else None
        undone = self._aside / f"{number}-undone-{live.name}"
        record = {"live": str(live), "kept": str(kept) if kept else None, "undone": str(undone)}
        self.note(record)
        self.push(partial(_put_back, live, kept, undone))
        arriving = new is not None and os.path.lexists(new)
        if kept is not None and arriving and not live.is_dir():
            os.link(live, kept, follow_symlinks=False)  # a file never missing: replaced
        elif kept is not None:
            os.rename(live, kept)
        if arriving and new is not None:
            make_private_dir(live.parent, tighten_existing=False)
            os.replace(new, live)

    def run(self) -> list[str]:
        """Take every swap back, newest first; what could not be."""
        failures = []
        for action in reversed(self._actions):
            try:
                action()
            except (OSError, AutoragError) as exc:
                failures.append(_reason(exc))
        self._actions.clear()
        return failures


def _put_back(live: Path, kept: Path | None, undone: Path) -> None:
    """``live`` as it was before its swap (which may have been cut short)."""
    if kept is not None and not os.path.lexists(kept):
        return  # the swap never began: what is live is the original
    if kept is not None and not live.is_dir() and not kept.is_dir():
        os.replace(kept, live)
        return
    if os.path.lexists(live):
        os.rename(live, undone)
    if kept is not None:
        os.rename(kept, live)


def _append_journal(journal: Path, record: dict[str, Any]) -> None:
    with journal.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
        out.flush()
        os.fsync(out.fileno())


def recover_interrupted_restores(workspace: Workspace, settings: Settings) -> list[str]:
    """Take back what a restore killed half-way had replaced (from its staging folder's
    journal, newest swap first) and remove its staging folder; one sentence for each.
    Run at start-up, holding the workspace alone, before the catalog is opened."""
    said = []
    for staging in workspace.restore_staging_dirs():
        if not staging.is_dir() or staging.is_symlink():
            continue
        journal = staging / JOURNAL
        finished = (staging / DONE).exists() or not journal.exists()
        if not finished:
            for line in reversed(journal.read_text(encoding="utf-8").splitlines()):
                _recover(json.loads(line), settings)
        shutil.rmtree(staging, ignore_errors=True)
        what = "removed its leftovers" if finished else "put back what it had replaced"
        said.append(f"an interrupted restore ({staging.name}): {what}")
    return said


def _recover(record: dict[str, Any], settings: Settings) -> None:
    if "rollback" in record:
        schemas = tuple(record["schemas"])
        _put_back_postgres(settings, Path(record["rollback"]), schemas)
        return
    kept = Path(record["kept"]) if record["kept"] else None
    _put_back(Path(record["live"]), kept, Path(record["undone"]))


def _put_in_place(
    workspace: Workspace,
    settings: Settings,
    staging: Path,
    manifest: Manifest,
    undo: _Undo,
    report: ProgressFn,
) -> tuple[Literal["restored", "rebuilt", "none"], int, tuple[str, ...]]:
    new = Workspace(staging / "new")
    _keep_database_url(workspace, new)
    report(Progress("restore", 0, 1, "replacing the catalog"))
    if manifest.catalog_kind == "sqlite":
        live = Path(make_url(_catalog_url(workspace, settings)).database or "")
        carried = _read_carried(live)
        _prepare_sqlite(new, carried)
        for suffix in _SQLITE_SIDE_FILES:  # the old WAL must never meet the new file
            undo.replace(_side_file(live, suffix), None)
        undo.replace(live, new.database_file)
    for area in ALL_AREAS:
        fresh = area.place(new)
        if area.entry == CONFIG_ENTRY and not fresh.is_file():
            continue  # a workspace is never left without its configuration
        undo.replace(area.place(workspace), fresh)
    if manifest.catalog_kind == "postgresql":
        _replace_postgres(workspace, settings, staging, manifest, undo)
    report(Progress("restore", 1, 1, "catalog and files in place"))
    return _finish(workspace, manifest, report)


def _side_file(database: Path, suffix: str) -> Path:
    return database.with_name(database.name + suffix)


def _keep_database_url(workspace: Workspace, new: Workspace) -> None:
    """The restored ``autorag.toml`` keeps this workspace's catalog (the backup's may
    name another server, or none)."""
    if not new.config_file.is_file():
        return
    restored = new.read_config()
    current = workspace.read_config().get("database_url")
    if restored.get("database_url") == current:
        return  # the file as it was backed up, comments and all
    restored.pop("database_url", None)
    if current:
        restored["database_url"] = current
    new.write_config(restored)


def _prepare_sqlite(new: Workspace, carried: Carried) -> None:
    """The restored SQLite catalog at the newest schema, the carried rows in it, as one
    file (no WAL beside it) ready to swap in. Migrations that seal secrets use the
    restored key (``new``'s data folder)."""
    engine = create_catalog_engine(sqlite_url(new.database_file))
    bind_data_dir(engine, new.data_dir)
    try:
        migrate(engine)
        _write_carried(engine, carried)
    finally:
        engine.dispose()
    with closing(sqlite3.connect(new.database_file)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")


def _replace_postgres(
    workspace: Workspace, settings: Settings, staging: Path, manifest: Manifest, undo: _Undo
) -> None:
    assert settings.database_url is not None
    engine = create_catalog_engine(settings.database_url)
    bind_data_dir(engine, workspace.data_dir)  # the restored keys are in place by now
    bin_dir = settings.backup.pg_bin_dir
    try:
        carried = _read_carried_from(engine)
        with engine.connect() as conn:
            own = str(conn.execute(text("SELECT current_schema()")).scalar_one())
        schemas = (own, settings.vectors.pgvector_schema)
        rollback = staging / "rollback.sql"
        dump_postgres(engine, rollback, bin_dir)
        engine.dispose()  # psql drops tables: no idle connection of ours may hold them
        undo.note({"rollback": str(rollback), "schemas": list(schemas)})
        restore_postgres(engine, staging / "catalog.sql", bin_dir, schemas=schemas)
        undo.push(partial(_put_back_postgres, settings, rollback, schemas))
        with engine.connect() as conn:
            _, counts = postgres_facts(conn)
        _require_counts(manifest, counts)
        migrate(engine)
        _write_carried(engine, carried)
    finally:
        engine.dispose()


def _put_back_postgres(settings: Settings, rollback: Path, schemas: tuple[str, ...]) -> None:
    assert settings.database_url is not None
    engine = create_catalog_engine(settings.database_url)
    try:
        restore_postgres(engine, rollback, settings.backup.pg_bin_dir, schemas=schemas)
    finally:
        engine.dispose()


def _require_counts(manifest: Manifest, counts: dict[str, int]) -> None:
    differ = sorted(
        f"{name} ({counts.get(name)} rows, the backup had {rows})"
        for name, rows in manifest.table_counts.items()
        if counts.get(name) != rows
    )
    if differ:
        raise BackupDamaged(f"the restored catalog differs from the backup: {', '.join(differ)}")


# -- carried tables -----------------------------------------------------------------------
def _read_carried(database: Path) -> Carried:
    if not database.is_file():  # opening it would make an empty one
        return {}
    engine = create_catalog_engine(sqlite_url(database))
    try:
        return _read_carried_from(engine)
    finally:
        engine.dispose()


def _read_carried_from(engine: Engine) -> Carried:
    carried: Carried = {}
    with engine.connect() as conn:
        present = set(inspect(conn).get_table_names())
        for name in CARRIED_TABLES:
            if name in present:
                table = Table(name, MetaData(), autoload_with=conn)
                carried[name] = [dict(row._mapping) for row in conn.execute(select(table))]
    return carried


def _write_carried(engine: Engine, carried: Carried) -> None:
    """The restored catalog's backup tables replaced by the carried rows (a table the
    current catalog lacked is left as the backup had it)."""
    if not carried:
        return
    with engine.begin() as conn:
        metadata = MetaData()
        tables = {name: Table(name, metadata, autoload_with=conn) for name in carried}
        for name in reversed(CARRIED_TABLES):
            if name in tables:
                conn.execute(delete(tables[name]))
        for name in CARRIED_TABLES:
            rows = carried.get(name)
            if rows:
                columns = set(tables[name].columns.keys())
                values = [{k: v for k, v in row.items() if k in columns} for row in rows]
                conn.execute(insert(tables[name]), values)
            if name in tables and engine.dialect.name == "postgresql":
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                        f"coalesce(max(id), 1), max(id) IS NOT NULL) FROM {name}"
                    )
                )


# -- 3. vectors and readiness ------------------------------------------------------------
def _finish(
    workspace: Workspace, manifest: Manifest, report: ProgressFn
) -> tuple[Literal["restored", "rebuilt", "none"], int, tuple[str, ...]]:
    context = open_context(workspace)
    try:
        vectors: Literal["restored", "rebuilt", "none"] = "restored"
        reindexed = 0
        if not _vectors_restored(manifest, context.settings):
            report(Progress("vectors", 0, None, "rebuilding the vectors from the catalog"))
            reindexed = rebuild_vectors(context, report)
            vectors = "rebuilt" if reindexed else "none"
        readiness = context.readiness()
    finally:
        context.close()
    warnings: tuple[str, ...] = ()
    if readiness.state in _UNHEALTHY:
        warnings = (f"the restored workspace is {readiness.state}: {readiness.reason}",)
    return vectors, reindexed, warnings


def _vectors_restored(manifest: Manifest, settings: Settings) -> bool:
    """Whether the backup brought back the vectors this workspace searches: LanceDB's
    folder, or pgvector's tables inside the catalog's dump."""
    store = settings.vector_store
    return manifest.vectors_included and manifest.vector_store == store and store != "qdrant"


def rebuild_vectors(context: AppContext, progress: ProgressFn | None = None) -> int:
    """Re-embed every workspace of the catalog (hidden namespaces too) into fresh
    vector tables; the number of documents whose vectors were rebuilt."""
    with context.catalog.engine.connect() as conn:
        rows = conn.execute(select(WorkspaceRow.id, WorkspaceRow.name, WorkspaceRow.short_id))
        infos = [WorkspaceInfo(r.id, r.name, r.short_id) for r in rows]
    chunks = 0
    for info in infos:
        scoped = context.for_workspace(info)
        chunks += reindex(
            scoped.catalog,
            scoped.info,
            scoped.fulltext,
            partial(scoped.open_vectors, recreate=True),
            scoped.embedder,
            on_batch=(lambda n: progress(Progress("vectors", n, None))) if progress else None,
        )
    if not chunks:
        return 0
    with context.catalog.engine.connect() as conn:
        query = select(DocumentRow.id).where(
            DocumentRow.status == VISIBLE_STATUS, DocumentRow.chunk_count > 0
        )
        return len(conn.execute(query).all())
