"""Test workspaces on either catalog backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from autorag.config import load_settings
from autorag.store.catalog.db import create_catalog_engine, sqlite_url
from autorag.workspace import Workspace, init_workspace

# Gives a fresh catalog's URL on each call; None means SQLite inside the workspace.
NewCatalog = Callable[[], str | None]


def new_workspace(root: Path, catalog_url: str | None = None, **config: Any) -> Workspace:
    """A fresh workspace at ``root`` with ``config`` merged into its settings, its catalog
    at ``catalog_url`` (``None``: the embedded SQLite inside it)."""
    workspace = init_workspace(root)
    merged = {**workspace.read_config(), **config}
    if catalog_url:
        merged["database_url"] = catalog_url
    workspace.write_config(merged)
    return workspace


def catalog_url(workspace: Workspace) -> str:
    """The URL of ``workspace``'s catalog, as the server opens it."""
    settings = load_settings(workspace.config_file)
    return settings.database_url or sqlite_url(workspace.database_file)


@contextmanager
def catalog_sql(workspace: Workspace) -> Iterator[Connection]:
    """A connection to ``workspace``'s catalog (SQLite or PostgreSQL), for checks that no
    route or command makes."""
    engine = create_catalog_engine(catalog_url(workspace))
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()
