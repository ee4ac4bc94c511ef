"""``autorag serve`` killed with jobs pending and running, then restarted: every upload
is processed, and processed once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import lancedb
import pytest
from sqlalchemy import text

from autorag.auth import service
from autorag.context import open_context
from autorag.workspace import Workspace
from tests.ports import free_port
from tests.workspaces import catalog_sql, new_workspace

AUTORAG = [sys.executable, "-m", "autorag"]
DOCUMENTS = 12
WAIT_S = 240.0


class ServerProcess:
    def __init__(self, workspace: Workspace, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self._log = log.open("ab")
        self.process = subprocess.Popen(
            [*AUTORAG, "-w", str(workspace.root), "serve", "--port", str(port)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start; see {log}")
            time.sleep(0.1)

    def kill(self, sig: signal.Signals = signal.SIGKILL, timeout: float = 60) -> int:
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            self._log.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    # One worker: while it is busy with the first document the others stay queued.
    # SQLite only for now: on PostgreSQL the kill can land between two jobs (flaky in CI).
    return new_workspace(tmp_path / "kb", server={"workers": 1})


@pytest.fixture
def api_key(workspace: Workspace) -> str:
    context = open_context(workspace)
    try:
        service.create_user(context.catalog, "ops", "restart drill password", "admin")
        return service.create_api_key(context.catalog, "ops", "restart-test", ["default"])[1]
    finally:
        context.close()


@pytest.fixture
def servers(workspace: Workspace, tmp_path: Path) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        if server.process.poll() is None:
            server.kill()


def _job_states(workspace: Workspace) -> dict[str, int]:
    with catalog_sql(workspace) as conn:
        counts = conn.execute(text("SELECT status, COUNT(*) FROM jobs GROUP BY status"))
        return {str(status): int(count) for status, count in counts}


def test_killed_server_resumes_every_job_exactly_once(
    workspace: Workspace, api_key: str, servers: list[ServerProcess], tmp_path: Path
) -> None:
    headers = {"Authorization": f"Bearer {api_key}"}
    port = free_port()
    first = ServerProcess(workspace, port, tmp_path / "server.log")
    servers.append(first)
    ids = []
    with httpx.Client(base_url=first.url, headers=headers, timeout=60) as client:
        for i in range(DOCUMENTS):
            report = (
                f"# Shift report {i}\n\nThe night watch logged beacon{i:02d}z at the harbour. "
                "Everything was calm, the lamps were trimmed and the tide charts updated.\n"
            ) * 3
            response = client.post(
                "/api/workspaces/default/documents",
                files={"file": (f"report-{i}.md", report.encode())},
            )
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])

    # Kill while a job runs (the first one also loads the model) and others wait.
    deadline = time.monotonic() + WAIT_S
    while _job_states(workspace).get("running", 0) == 0:
        assert time.monotonic() < deadline, _job_states(workspace)
        time.sleep(0.01)
    assert first.kill(signal.SIGKILL) == -signal.SIGKILL
    at_kill = _job_states(workspace)
    assert at_kill.get("running") == 1 and at_kill.get("queued", 0) >= 1, at_kill

    second = ServerProcess(workspace, port, tmp_path / "server.log")
    servers.append(second)
    with httpx.Client(base_url=second.url, headers=headers, timeout=60) as client:
        deadline = time.monotonic() + WAIT_S
        while True:
            listed = client.get("/api/workspaces/default/documents", params={"limit": 100}).json()
            states = {d["id"]: d["status"] for d in listed["items"]}
            if all(states.get(i) == "ready" for i in ids) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert listed["total"] == DOCUMENTS
        assert all(states[i] == "ready" for i in ids), states
        hits = client.post(
            "/api/workspaces/default/search", json={"query": "beacon07z", "mode": "fts"}
        ).json()["hits"]
        assert hits and hits[0]["documentId"] == ids[7]
    # A clean stop: the worker pool stops within the lifespan and the process exits
    # (uvicorn re-raises the signal once it has shut down).
    assert second.kill(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in (tmp_path / "server.log").read_text()

    with catalog_sql(workspace) as conn:
        jobs = conn.execute(text("SELECT document_id, status, attempts FROM jobs")).all()
        chunk_ids = conn.execute(text("SELECT id FROM chunks")).scalars().all()
        declared = conn.execute(text("SELECT SUM(chunk_count) FROM documents")).scalar()
        table = conn.execute(
            text("SELECT short_id FROM workspaces WHERE name = 'default'")
        ).scalar()
    # One job per document, each done; only the one running at the kill ran twice.
    assert sorted(j[0] for j in jobs) == sorted(ids)
    assert {j[1] for j in jobs} == {"done"}
    assert sorted(j[2] for j in jobs) == [1] * (DOCUMENTS - 1) + [2]
    # No duplicate chunks, and exactly one vector per chunk.
    assert len(chunk_ids) == declared == len(set(chunk_ids))
    vectors = lancedb.connect(str(workspace.vectors_dir)).open_table(f"ws_default_{table}")
    vector_ids = vectors.to_arrow().column("chunk_id").to_pylist()
    assert sorted(vector_ids) == sorted(chunk_ids)
