"""Engine creation and schema migration for the catalog database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, event, text

from autorag.errors import Unavailable

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Bump with every new migration: lets start-up skip Alembic when the schema is current.
SCHEMA_HEAD = "0007"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def create_catalog_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _configure_sqlite)
        return engine
    return create_engine(url, pool_pre_ping=True)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets searches read while a refresh writes; foreign keys make deletes cascade.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (no-op when it already is)."""
    try:
        with engine.begin() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
            if current == SCHEMA_HEAD:
                return
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except Exception as exc:  # any driver error means the catalog cannot be used
        raise Unavailable(f"catalog database unavailable: {exc}") from exc


def ping(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def dialect_insert(engine: Engine, table: Any) -> Any:
    """An INSERT with the dialect's ``on_conflict_do_update`` (SQLite and PostgreSQL
    spell upserts alike)."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)
