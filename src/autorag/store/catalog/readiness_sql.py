"""The catalog facts a workspace's readiness is judged from, in plain SQL that SQLite
and PostgreSQL both run.

One set of queries, two ways in: the catalog's SQLAlchemy engine (the server, the
commands that open the whole context, PostgreSQL catalogs), and Python's own sqlite3
opened read-only, which is how ``autorag status`` reads a SQLite catalog without
importing SQLAlchemy (a quarter of a second of a half-second goal). Parameters are
``:named``, the style both drivers take.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

# Runs one query and answers its rows as tuples.
Rows = Callable[[str, Mapping[str, Any]], list[tuple[Any, ...]]]

# The status of the documents search sees (the repository's too).
VISIBLE_STATUS = "ready"


@dataclass(frozen=True)
class ListedFile:
    """A document that failed or was skipped, as ``autorag status`` lists it."""

    source_id: str
    origin: str | None
    error_code: str | None
    error: str | None


@dataclass(frozen=True)
class RunFacts:
    """The latest refresh run."""

    status: str
    started_at: str
    finished_at: str | None
    indexed: int
    unchanged: int
    failed: int
    needs_ocr: int
    deleted: int


class ReadinessFacts:
    """What readiness needs to know of one workspace, read through ``rows``."""

    def __init__(self, rows: Rows, workspace_id: int) -> None:
        self._rows = rows
        self._ws = {"ws": workspace_id}

    def status_counts(self) -> dict[str, int]:
        """Documents per status."""
        found = self._rows(
            "SELECT status, COUNT(*) FROM documents WHERE workspace_id = :ws GROUP BY status",
            self._ws,
        )
        return {str(status): int(n) for status, n in found}

    def failed_codes(self) -> dict[str | None, int]:
        """Failed documents per error code."""
        found = self._rows(
            "SELECT error_code, COUNT(*) FROM documents"
            " WHERE workspace_id = :ws AND status = 'failed' GROUP BY error_code",
            self._ws,
        )
        return {code: int(n) for code, n in found}

    def chunk_count(self) -> int:
        """Chunks of the documents search sees."""
        found = self._rows(
            "SELECT COUNT(chunks.id) FROM chunks JOIN documents"
            " ON documents.id = chunks.document_id"
            " WHERE documents.workspace_id = :ws AND documents.status = :visible",
            {**self._ws, "visible": VISIBLE_STATUS},
        )
        return int(found[0][0])

    def listed(self, status: str, *, limit: int) -> list[ListedFile]:
        """The documents in ``status``, by source id."""
        found = self._rows(
            "SELECT source_id, origin, error_code, error FROM documents"
            " WHERE workspace_id = :ws AND status = :status ORDER BY source_id LIMIT :limit",
            {**self._ws, "status": status, "limit": limit},
        )
        return [ListedFile(*row) for row in found]

    def latest_run(self) -> RunFacts | None:
        found = self._rows(
            "SELECT status, started_at, finished_at, indexed, unchanged, failed, needs_ocr,"
            " deleted FROM refresh_runs WHERE workspace_id = :ws ORDER BY id DESC LIMIT 1",
            self._ws,
        )
        if not found:
            return None
        status, started, finished, *counts = found[0]
        return RunFacts(
            str(status),
            _iso(started),
            None if finished is None else _iso(finished),
            *(int(n or 0) for n in counts),
        )

    def embedding_models(self) -> set[str]:
        """The models the visible documents with chunks were embedded with."""
        found = self._rows(
            "SELECT DISTINCT embedding_model FROM documents WHERE workspace_id = :ws"
            " AND status = :visible AND chunk_count > 0",
            {**self._ws, "visible": VISIBLE_STATUS},
        )
        return {str(model) for (model,) in found if model}


def _iso(value: datetime | str) -> str:
    """A timestamp as ISO 8601: PostgreSQL answers a datetime, SQLite the text
    SQLAlchemy stored (``2026-12-07 06:27:23.987132``)."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return when.isoformat()


def engine_rows(engine: Engine) -> Rows:
    """``Rows`` through the catalog's engine, a connection per query."""
    from sqlalchemy import text

    def run(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql), dict(params))]

    return run


@dataclass(frozen=True)
class SqliteCatalog:
    """A SQLite catalog file opened read-only with Python's sqlite3."""

    rows: Rows

    def schema_revision(self) -> str | None:
        """The revision Alembic recorded; None when the catalog is unversioned."""
        if not self.rows(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'", {}
        ):
            return None
        found = self.rows("SELECT version_num FROM alembic_version", {})
        return str(found[0][0]) if found else None

    def workspace(self, name: str) -> tuple[int, str] | None:
        """A workspace's id and short id by name; None when there is none of that name."""
        found = self.rows(
            "SELECT id, short_id FROM workspaces WHERE name = :name AND kind = 'workspace'",
            {"name": name},
        )
        return (int(found[0][0]), str(found[0][1])) if found else None


@contextmanager
def open_sqlite_readonly(path: Path) -> Iterator[SqliteCatalog]:
    """The catalog at ``path``, read-only (a missing file is an error, never created).
    Raises ``sqlite3.Error`` when it cannot be read."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=5, isolation_level=None)) as conn:
        conn.execute("BEGIN")  # one snapshot for all the queries, while a refresh writes

        def run(sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
            return [tuple(row) for row in conn.execute(sql, dict(params))]

        yield SqliteCatalog(run)
