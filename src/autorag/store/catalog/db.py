"""Engine creation and schema migration for the catalog database."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import DataError, DBAPIError

from autorag.errors import InvalidInput, Unavailable
from autorag.private_files import tighten_all, touch_private, warn_repaired
from autorag.store.catalog.revision import SCHEMA_HEAD

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# The folder whose secret key seals what this catalog keeps encrypted (a workspace's
# ``.autorag/``), for catalogs that are not a SQLite file inside it.
_DATA_DIRS: weakref.WeakKeyDictionary[Engine, Path] = weakref.WeakKeyDictionary()


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


# Bare PostgreSQL URLs mean psycopg 3: SQLAlchemy would otherwise pick psycopg2.
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# Seconds before an unreachable server is reported, instead of the OS's minutes-long wait.
_CONNECT_TIMEOUT_S = 10


def normalize_database_url(url: str) -> str:
    """``postgresql://…`` (or ``postgres://…``) as ``postgresql+psycopg://…``."""
    for scheme in _POSTGRES_SCHEMES:
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url.removeprefix(scheme)
    return url


def create_catalog_engine(url: str) -> Engine:
    url = normalize_database_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        database = sqlite_file(engine)
        if database is not None and database.parent.is_dir():
            # 0600 before SQLite creates it 0644; a loosened one is repaired.
            warn_repaired([m for m in (touch_private(database),) if m], "the catalog")
        event.listen(engine, "connect", _configure_sqlite)
        return engine
    try:
        parsed = make_url(url)
        connect_args = {} if "connect_timeout" in parsed.query else _server_connect_args(parsed)
        engine = create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    except Exception as exc:  # unparsable URL, unknown dialect, driver not installed
        raise Unavailable(f"catalog database URL not usable: {_reason(exc)}") from exc
    event.listen(engine, "handle_error", _refused_value)
    return engine


def _server_connect_args(url: Any) -> dict[str, Any]:
    return {"connect_timeout": _CONNECT_TIMEOUT_S} if url.get_backend_name() == "postgresql" else {}


def _refused_value(context: ExceptionContext) -> None:
    """A server refuses values SQLite stores: an id past 32 bits (from a URL), a NUL
    character in text, a string longer than its column. Bad input, not a server fault."""
    if isinstance(context.sqlalchemy_exception, DataError):
        reason = _reason(context.original_exception)
        raise InvalidInput(f"the catalog database refused a value: {reason}") from (
            context.sqlalchemy_exception
        )


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets searches read while a refresh writes; foreign keys make deletes cascade.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    name = next((row[2] for row in cursor.execute("PRAGMA database_list") if row[1] == "main"), "")
    cursor.close()
    if name:
        secure_sqlite_files(Path(name))


def secure_sqlite_files(database: Path) -> list[str]:
    """The database file and its WAL and shared-memory files at 0600 (SQLite makes the
    latter two with the database file's mode, so that one set right keeps them so)."""
    paths = [database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))]
    return warn_repaired(tighten_all(paths), "the catalog")


def sqlite_file(engine: Engine) -> Path | None:
    """The file of a SQLite catalog; None for other databases and in-memory SQLite."""
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute()


def bind_data_dir(engine: Engine, data_dir: Path) -> None:
    """Name the workspace data folder (``.autorag/``) whose key seals this catalog's
    secrets; a SQLite catalog file is taken to live in it unless told otherwise."""
    _DATA_DIRS[engine] = data_dir


def data_dir_of(engine: Engine) -> Path | None:
    """The folder bound with ``bind_data_dir``, else a SQLite catalog file's folder."""
    bound = _DATA_DIRS.get(engine)
    if bound is not None:
        return bound
    database = sqlite_file(engine)
    return database.parent if database is not None else None


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (no-op when it already is)."""
    try:
        with engine.begin() as connection:
            if _current_revision(connection) == SCHEMA_HEAD:
                return
            # Alembic only when there is work: importing it costs a CLI call a few tenths
            # of a second, and a catalog is nearly always at the head already.
            from alembic import command
            from alembic.config import Config

            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except Exception as exc:  # any driver error means the catalog cannot be used
        raise Unavailable(f"catalog database unavailable: {_reason(exc)}") from exc


def _current_revision(connection: Connection) -> str | None:
    """The catalog's schema revision, read as Alembic records it; None when unversioned."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _reason(exc: BaseException) -> str:
    """The driver's own message: SQLAlchemy's wrapper adds the SQL and a help link."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    return " ".join(str(cause).split()) or type(cause).__name__


def ping(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def dialect_insert(engine: Engine | Connection, table: Any) -> Any:
    """An INSERT with the dialect's ``on_conflict_do_update`` (SQLite and PostgreSQL
    spell upserts alike)."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)
