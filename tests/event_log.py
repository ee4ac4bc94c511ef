"""The event log's test helpers, shared by the outbox and dispatcher tests:
``event_log_fixtures()`` makes a module's ``event_catalog`` (one migrated catalog per
module and backend) and ``engine`` (that catalog emptied of events for each test);
``emit_events`` commits events as a change would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, delete

from autorag.store.catalog import outbox
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url


def event_log_fixtures() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """A module's two fixtures: ``event_catalog, engine = event_log_fixtures()``."""

    @pytest.fixture(scope="module")
    def event_catalog(
        tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None
    ) -> Iterator[Engine]:
        folder = tmp_path_factory.mktemp("events")
        engine = create_catalog_engine(module_catalog_url or sqlite_url(folder / "catalog.db"))
        migrate(engine)
        yield engine
        engine.dispose()

    @pytest.fixture
    def engine(event_catalog: Engine) -> Engine:
        """The module's catalog with an empty event log."""
        with event_catalog.begin() as conn:
            conn.execute(delete(outbox.events_table))
        return event_catalog

    return event_catalog, engine


def emit_events(engine: Engine, n: int = 1, name: str = "document.processed") -> list[int]:
    """``n`` events committed in one transaction (workspace "w", actor "alice"); their ids."""
    with engine.begin() as conn:
        return [outbox.emit(conn, name, {"n": i}, workspace="w", actor="alice") for i in range(n)]
