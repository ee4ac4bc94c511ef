"""The catalog as one file for a backup, and that file back into a catalog.

SQLite is copied through its online backup API: one read transaction, so the copy is
the database as of one moment even while the server writes (in WAL mode a reader never
blocks a writer), and what only the WAL holds yet is in it. PostgreSQL is dumped with
``pg_dump`` in plain SQL, reading a snapshot this module exports, so the table counts
recorded beside the dump describe exactly what the dump holds. ``pg_dump`` and ``psql``
are spawned without a shell, from an argument list; the connection (password included)
travels in libpq's environment variables, never in the arguments other users can see.
A dump goes back in through ``psql`` in a single transaction that stops at the first
error: all of it, or nothing.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterable, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sqlalchemy import Connection, Engine, bindparam, text
from sqlalchemy.engine import URL

from autorag.backup.paths import POSTGRES_ENTRY, SQLITE_ENTRY
from autorag.config import BackupSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.private_files import touch_private
from autorag.store.catalog.db import sqlite_file

CatalogKind = Literal["sqlite", "postgresql"]
# What libpq reads from the environment, for each part of a connection URL's query.
_LIBPQ_QUERY_ENV = {
    "host": "PGHOST",
    "port": "PGPORT",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "options": "PGOPTIONS",
    "application_name": "PGAPPNAME",
    "target_session_attrs": "PGTARGETSESSIONATTRS",
}
# The last lines of a failing tool's error output worth repeating.
_STDERR_LINES = 8
_FTS_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")
_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


@dataclass(frozen=True)
class CatalogDump:
    kind: CatalogKind
    path: Path  # the dump on disk
    entry: str  # its name in the archive
    revision: str | None  # the Alembic revision the catalog was at
    table_counts: dict[str, int]


def catalog_kind(engine: Engine) -> CatalogKind:
    name = engine.dialect.name
    if name == "sqlite":
        return "sqlite"
    if name == "postgresql":
        return "postgresql"
    raise InvalidInput(f"backups support SQLite and PostgreSQL catalogs, not {name}")


def dump_catalog(engine: Engine, settings: BackupSettings, folder: Path) -> CatalogDump:
    """The catalog of ``engine`` dumped into ``folder`` (a file of its own, 0600)."""
    if catalog_kind(engine) == "sqlite":
        source = sqlite_file(engine)
        if source is None or not source.is_file():
            raise Unavailable(f"the SQLite catalog {source or engine.url} is not a file")
        path = folder / "autorag.db"
        snapshot_sqlite(source, path)
        revision, counts = sqlite_facts(path)
        return CatalogDump("sqlite", path, SQLITE_ENTRY, revision, counts)
    path = folder / "catalog.sql"
    revision, counts = dump_postgres(engine, path, settings.pg_bin_dir)
    return CatalogDump("postgresql", path, POSTGRES_ENTRY, revision, counts)


# -- SQLite ------------------------------------------------------------------------------
def snapshot_sqlite(source: Path, dest: Path) -> None:
    """A consistent copy of the live database ``source`` as ``dest``: one self-contained
    file (no WAL beside it), 0600 from its creation."""
    touch_private(dest)
    with (
        closing(sqlite3.connect(source, timeout=30)) as src,
        closing(sqlite3.connect(dest)) as out,
    ):
        src.backup(out)  # every page at once: one read transaction, one moment
        # The copy keeps the source's WAL flag; a rollback journal makes it one file.
        out.execute("PRAGMA journal_mode=DELETE")


def sqlite_facts(path: Path) -> tuple[str | None, dict[str, int]]:
    """The Alembic revision and the rows per table of the SQLite file ``path``."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        counts = {
            name: int(conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0])
            for name in _counted(names)
        }
        revision = None
        if "alembic_version" in names:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = row[0] if row else None
    return revision, counts


def _counted(names: Iterable[str]) -> list[str]:
    """The tables worth counting: not SQLite's own, Alembic's or a full-text index's
    internal tables (``<fts table>_data`` and its siblings)."""
    present = set(names)
    return sorted(
        name
        for name in present
        if not name.startswith("sqlite_")
        and name != "alembic_version"
        and not any(name.endswith(s) and name.removesuffix(s) in present for s in _FTS_SHADOWS)
    )


# -- PostgreSQL --------------------------------------------------------------------------
def dump_postgres(
    engine: Engine, dest: Path, bin_dir: Path | None
) -> tuple[str | None, dict[str, int]]:
    """``pg_dump`` of the catalog into ``dest`` (0600), from a snapshot whose revision
    and table counts are returned."""
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            revision, counts = postgres_facts(conn)
            touch_private(dest)
            _run(
                bin_dir,
                "pg_dump",
                [
                    "--format=plain",
                    "--no-owner",
                    "--no-privileges",
                    "--clean",
                    "--if-exists",
                    f"--snapshot={snapshot}",
                    f"--file={dest}",
                ],
                engine.url,
            )
    return revision, counts


def postgres_facts(conn: Connection) -> tuple[str | None, dict[str, int]]:
    """The Alembic revision and the rows per table (``schema.table`` outside the
    connection's own schema) of the catalog ``conn`` reads."""
    own = conn.execute(text("SELECT current_schema()")).scalar_one()
    rows = conn.execute(
        text(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN :system"
        ).bindparams(bindparam("system", _SYSTEM_SCHEMAS, expanding=True)),
    ).all()
    tables = {
        name if schema == own else f"{schema}.{name}": (schema, name) for schema, name in rows
    }
    counts: dict[str, int] = {}
    for label in _counted(tables):
        schema, name = tables[label]
        query = f'SELECT count(*) FROM "{_ident(schema)}"."{_ident(name)}"'
        counts[label] = int(conn.execute(text(query)).scalar_one())
    revision = None
    if "alembic_version" in tables:
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    return revision, counts


def _ident(name: str) -> str:
    return name.replace('"', '""')


def restore_postgres(
    engine: Engine, dump: Path, bin_dir: Path | None, *, schemas: Iterable[str]
) -> None:
    """Replace the catalog of ``engine`` with ``dump``, in one transaction: every table
    of ``schemas`` dropped first (a table made after the backup would otherwise stay, and
    block the dump's own drops), then the dump. On any error nothing has changed."""
    prelude = dump.with_name(dump.name + ".prelude.sql")
    drops = "\n".join(_drop_tables(schema) for schema in schemas)
    touch_private(prelude)
    prelude.write_text(drops, encoding="utf-8")
    try:
        _run(
            bin_dir,
            "psql",
            [
                "--no-psqlrc",
                "--quiet",
                "--single-transaction",
                "--set",
                "ON_ERROR_STOP=on",
                "--file",
                str(prelude),
                "--file",
                str(dump),
            ],
            engine.url,
        )
    finally:
        prelude.unlink(missing_ok=True)


def _drop_tables(schema: str) -> str:
    literal = schema.replace("'", "''")
    return (
        "DO $$ DECLARE r record; BEGIN FOR r IN SELECT schemaname, tablename FROM pg_tables "
        f"WHERE schemaname = '{literal}' LOOP "
        "EXECUTE format('DROP TABLE IF EXISTS %I.%I CASCADE', r.schemaname, r.tablename); "
        "END LOOP; END $$;"
    )


def pg_tool(bin_dir: Path | None, tool: str) -> str:
    """The path of ``tool`` (``pg_dump``, ``psql``): in ``bin_dir`` when set, else on PATH."""
    if bin_dir is not None:
        candidate = Path(bin_dir).expanduser() / tool
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise Unavailable(f"{tool} not found in {bin_dir} ([backup] pg_bin_dir)")
    found = shutil.which(tool)
    if found is None:
        raise Unavailable(
            f"{tool} not found on PATH: install the PostgreSQL client tools "
            "(the server's version or newer) or set [backup] pg_bin_dir"
        )
    return found


def libpq_environment(url: URL, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without any PG* variable, plus
    the connection of ``url`` as libpq's variables."""
    inherited = os.environ if base is None else base
    env = {k: v for k, v in inherited.items() if not k.startswith("PG")}
    parts = {
        "PGHOST": url.host,
        "PGPORT": str(url.port) if url.port else None,
        "PGUSER": url.username,
        "PGPASSWORD": url.password if isinstance(url.password, str) else None,
        "PGDATABASE": url.database,
    }
    for key, value in url.query.items():
        variable = _LIBPQ_QUERY_ENV.get(key)
        if variable is not None:
            parts[variable] = value if isinstance(value, str) else value[-1]
    env.update({k: v for k, v in parts.items() if v})
    return env


def _run(bin_dir: Path | None, tool: str, arguments: list[str], url: URL) -> None:
    argv = [pg_tool(bin_dir, tool), *arguments]
    try:
        done = subprocess.run(  # an argument list: no shell ever parses it
            argv,
            env=libpq_environment(url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
    except OSError as exc:
        raise Unavailable(f"{tool} could not be started: {exc}") from exc
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()[-_STDERR_LINES:]
        detail = " ".join(line.strip() for line in said) or f"exit status {done.returncode}"
        raise Unavailable(f"{tool} failed: {detail}")
