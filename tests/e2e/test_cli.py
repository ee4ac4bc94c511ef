"""The ``autorag`` command as a user runs it: a subprocess on a temporary workspace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from autorag.workspace import Workspace
from tests.samples import write_corpus
from tests.workspaces import catalog_sql, new_workspace
from tests.workspaces import catalog_url as workspace_catalog

AUTORAG = [sys.executable, "-m", "autorag"]


def run(workspace: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [*AUTORAG, "-w", str(workspace), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"autorag {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout if check else result.stdout + result.stderr


def run_json(workspace: Path, *args: str) -> Any:
    return json.loads(run(workspace, *args, "--json"))


def test_index_search_ask_and_manage_documents(tmp_path: Path) -> None:
    docs = tmp_path / "policies"
    write_corpus(docs)
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    assert (kb / "autorag.toml").is_file() and (kb / ".autorag").is_dir()
    assert run_json(kb, "status")["state"] == "configured"

    run(kb, "add", str(docs))
    report = run_json(kb, "refresh")
    assert report["indexed"] == 8 and report["failed"] == 0
    status = run_json(kb, "status")
    assert status["state"] == "ready", status
    assert status["documents"] == {"ready": 8}

    hits = run_json(kb, "search", "refund window", "-k", "3")["hits"]
    assert hits[0]["source"] == str(docs / "refunds.pdf")
    assert hits[0]["source_id"] == "/policies/refunds.pdf"
    only_md = run_json(kb, "search", "warranty refund", "--type", "md")["hits"]
    assert {h["doc_type"] for h in only_md} == {"md"}

    answer = run(kb, "ask", "How long is the refund window?")
    assert "thirty days" in answer and "[1]" in answer
    assert "Sources" in answer and str(docs / "refunds.pdf") in answer
    answered = run_json(kb, "ask", "How long is the refund window?", "--plan")
    assert answered["abortReason"] == "done" and answered["plan"]
    assert answered["modelUsed"] == "extractive/extractive" and answered["citations"]
    models = run_json(kb, "models", "list")
    assert models[0]["id"] == "extractive/extractive" and models[0]["available"]
    conversation = subprocess.run(
        [*AUTORAG, "-w", str(kb), "chat"],
        input="How long is the refund window?\nWhich courier carries parcels?\n/quit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert conversation.returncode == 0, conversation.stderr
    assert "thirty days" in conversation.stdout and "Zephyr" in conversation.stdout

    listed = run_json(kb, "docs", "list")
    assert len(listed) == 8
    shown = run_json(kb, "docs", "show", "/policies/refunds.pdf", "--chunks")
    assert shown["pages"] == 2 and shown["chunk_list"][1]["page"] == 2
    run(kb, "docs", "rm", "/policies/notes.txt")
    assert all(
        h["source_id"] != "/policies/notes.txt"
        for h in run_json(kb, "search", "office cat")["hits"]
    )

    run(kb, "reindex")
    assert run_json(kb, "search", "office cat", "--mode", "vector", "-k", "1")["hits"]
    assert run_json(kb, "status")["state"] == "ready"


def test_bad_input_gets_one_clear_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    missing = run(kb, "add", str(tmp_path / "nope"), check=False)
    assert "is not a folder" in missing and "Traceback" not in missing
    bad_date = run(kb, "search", "x", "--from", "yesterday", check=False)
    assert "not an ISO date" in bad_date and "Traceback" not in bad_date
    nowhere = subprocess.run(
        [*AUTORAG, "-w", str(tmp_path / "none"), "status"], capture_output=True, text=True
    )
    assert nowhere.returncode == 3 and "no AutoRAG workspace" in nowhere.stderr


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
def mark_ready(self, document_ids, embedding_model):
    global marked
    if marked >= pause_after:
        os.write(ready_fd, b"paused\\n")
        while True:
            time.sleep(60)  # until the signal
    real_mark_ready(self, document_ids, embedding_model)
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
