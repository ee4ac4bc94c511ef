"""``autorag worker``: background jobs done by a separate process, the API serving only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from autorag.auth.service import create_api_key, create_user
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import LaunchApi

pytest_plugins = ["tests.integration.conftest"]


def _key(context: AppContext) -> str:
    create_user(context.catalog, "boss", "a long enough password", "admin")
    return create_api_key(context.catalog, "boss", "worker test", [])[1]


def test_a_separate_worker_processes_what_the_server_queued(
    tmp_path: Path, launch_api: LaunchApi
) -> None:
    api = launch_api(tmp_path / "kb", _key, workers=0)  # the server queues, never processes
    note = b"The lighthouse keeper logs the tide at dawn.\n"
    upload = api.call(
        "POST", "/api/workspaces/default/documents", api.prepared,
        files={"file": ("tides.txt", note, "text/plain")},
    )  # fmt: skip
    assert upload.status_code == 202, upload.text
    document_id = upload.json()["id"]
    time.sleep(1.0)
    waiting = api.call("GET", f"/api/workspaces/default/documents/{document_id}", api.prepared)
    assert waiting.json()["status"] == "pending"

    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autorag",
            "-w",
            str(api.workspace.root),
            "worker",
            "--workers",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        document = api.wait_processed(api.prepared, document_id)
        assert document["status"] == "ready", document
    finally:
        worker.send_signal(signal.SIGTERM)
        _out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    hits = api.call(
        "POST", "/api/workspaces/default/search", api.prepared, json={"query": "lighthouse tide"}
    ).json()["hits"]
    assert hits and hits[0]["documentId"] == document_id
