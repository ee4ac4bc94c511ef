"""``autorag refresh`` interrupted halfway (kill -9, Ctrl+C; on SQLite and PostgreSQL),
then resumed: a subprocess on a temporary workspace, like the rest of the CLI tests (a
module of its own, so that it runs beside them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from autorag.workspace import Workspace
from tests.cli import AUTORAG, interruptible
from tests.e2e.test_cli import run, run_json
from tests.workspaces import catalog_sql, new_workspace
from tests.workspaces import catalog_url as workspace_catalog


def _db_counts(kb: Path) -> dict[str, int]:
    workspace = Workspace(kb.resolve())
    if not workspace.database_file.exists() and workspace_catalog(workspace).startswith("sqlite"):
        return {}
    try:
        with catalog_sql(workspace) as conn:
            rows = conn.execute(text("SELECT status, count(*) FROM documents GROUP BY status"))
            return {str(status): int(count) for status, count in rows}
    except OperationalError:  # the refresh is still creating the schema
        return {}


# The real `autorag refresh`, with one hook: once ``pause_after`` documents are ready, the
# next batch stops inside its write (chunks and vectors stored, not yet marked ready) and
# says so on a pipe; the test interrupts it there. No timing decides where the signal lands.
_PAUSING_REFRESH = """
import os, sys, time
from autorag.store.catalog.repository import Catalog
ready_fd, pause_after = int(sys.argv.pop(1)), int(sys.argv.pop(1))
real_mark_ready, marked = Catalog.mark_ready, 0
def mark_ready(self, document_ids, embedding_model, **options):
    global marked
    if marked >= pause_after:
        os.write(ready_fd, b"paused\\n")
        while True:
            time.sleep(60)  # until the signal
    real_mark_ready(self, document_ids, embedding_model, **options)
    marked += len(document_ids)
Catalog.mark_ready = mark_ready
from autorag.cli.main import run
run()
"""


# The crash on PostgreSQL too (its transactions, not SQLite's, must keep the index whole).
@pytest.mark.parametrize(
    ("backend", "sig"),
    [
        pytest.param("sqlite", signal.SIGKILL, id="kill-9"),
        pytest.param("sqlite", signal.SIGINT, id="ctrl-c"),
        pytest.param(
            "postgresql", signal.SIGKILL, id="postgresql-kill-9", marks=pytest.mark.postgres
        ),
    ],
)
def test_refresh_interrupted_midway_then_resumed(
    tmp_path: Path, backend: str, sig: signal.Signals, request: pytest.FixtureRequest
) -> None:
    catalog_url = None
    if backend == "postgresql":
        catalog_url = request.getfixturevalue("postgres_server").new_database()
    docs = tmp_path / "many"
    docs.mkdir()
    total, ready_before = 120, 20
    for i in range(total):
        (docs / f"note-{i:03}.md").write_text(f"# Note {i}\n\nLighthouse log entry {i}: calm seas.")
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    new_workspace(kb, catalog_url)
    run(kb, "add", str(docs))
    env = {**os.environ, "AUTORAG_INGEST__BATCH_CHUNKS": "4"}  # a note is one chunk
    paused_read, paused_write = os.pipe()
    hooked = [sys.executable, "-c", _PAUSING_REFRESH, str(paused_write), str(ready_before)]
    log = tmp_path / "refresh.err"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [*hooked, "-w", str(kb), "refresh"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            pass_fds=[paused_write],
            preexec_fn=interruptible,
        )
        os.close(paused_write)
        with os.fdopen(paused_read, "rb") as paused:
            stopped = paused.readline()  # b"" if the refresh ended without stopping
        try:
            assert stopped == b"paused\n", log.read_text()
            assert process.poll() is None
        finally:
            process.send_signal(sig)
            process.wait(timeout=60)
    # The batch stopped mid-write is not visible, the batches before it are whole.
    assert _db_counts(kb).get("ready", 0) == ready_before

    # Whatever search shows is complete: every hit belongs to a ready document.
    hits = run_json(kb, "search", "lighthouse calm seas", "-k", "1000", "--mode", "fts")["hits"]
    assert len(hits) == ready_before
    state = run_json(kb, "status")
    assert state["state"] == "degraded" and "refresh" in state["reason"]

    report = run_json(kb, "refresh")
    assert report["indexed"] + report["unchanged"] == total
    assert _db_counts(kb) == {"ready": total}
    status = run_json(kb, "status")
    assert status["state"] == "ready" and status["vectors"] == status["chunks"] == total
    hits = run_json(kb, "search", "lighthouse calm seas", "-k", "1000", "--per-document")["hits"]
    assert len({h["source_id"] for h in hits}) == total
