"""Backups over HTTP on a real server (SQLite: the service's own tests cover both
catalogs): a backup made now runs in the background and is followed as a client polls
it, a second one while it runs is refused (409), the archive downloads as stored
(encrypted, also with an admin's API key) and verifies; jobs are added (a bad cron is
422 with the reason), changed, paused and removed, the next run said while enabled; a
restore needs ``confirm`` and a password login, then puts back what the backup held
while the server answers nothing else (only liveness, the web UI's files and the
restore's status); a damaged backup is refused and the server serves on; the
maintenance gate on its own.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp
from tests.integration.conftest import ApiServer
from tests.workspaces import catalog_url, new_workspace

from autorag.api.app import create_app
from autorag.api.maintenance import Maintenance, MaintenanceGate
from autorag.auth import service
from autorag.backup import store
from autorag.backup.models import Progress
from autorag.context import AppContext, open_context
from autorag.errors import Unavailable
from autorag.store.catalog.db import create_catalog_engine

PASSWORD = "a long enough password"
WAIT_S = 120.0  # a backup's bound (never reached: this workspace's takes a second)
URL = "/api/backups"


@dataclass
class Api:
    server: ApiServer
    token: str  # the admin's password login
    key: str  # the admin's API key (no workspace scope)
    engine: Engine

    def call(self, method: str, path: str, credential: str | None = None, **kw: Any) -> Any:
        return self.server.call(method, URL + path, credential or self.token, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.call(method, path, **kw)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def until_done(self, run_id: int) -> dict[str, Any]:
        """The run once it stopped running, polled as a client would."""
        deadline = time.monotonic() + WAIT_S
        while True:
            run: dict[str, Any] = self.ok("GET", f"/{run_id}")
            if run["status"] != "running" or time.monotonic() > deadline:
                return run
            time.sleep(0.05)

    def backup(self) -> dict[str, Any]:
        started = self.ok("POST", "/trigger", 202, json={})
        return self.until_done(started["id"])


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("backups")
    # No documents: what a backup holds, and search after a restore, are the round trip's
    # (test_backup_roundtrip.py); here users and workspaces show what was put back.
    workspace = new_workspace(root / "kb")
    context = open_context(workspace)
    try:
        key = _prepare(context)
    finally:
        context.close()
    app = create_app(workspace, server={"login_attempts_per_minute": 10_000})
    server = ApiServer(serve_asgi(app), app, workspace, None)
    login = server.call("POST", "/api/auth/login", json={"username": "root", "password": PASSWORD})
    engine = create_catalog_engine(catalog_url(workspace))
    try:
        yield Api(server, login.json()["access_token"], key, engine)
    finally:
        engine.dispose()


def _prepare(context: AppContext) -> str:
    service.create_user(context.catalog, "root", PASSWORD, "admin")
    return service.create_api_key(context.catalog, "root", "scripts", [])[1]


def test_back_up_now_follow_download_and_verify(api: Api) -> None:
    started = api.ok("POST", "/trigger", 202, json={"includeVectors": True})
    assert started["status"] in ("running", "succeeded")  # a small workspace is quick
    assert (started["trigger"], started["job"]) == ("manual", None)
    assert started["destination"].startswith("local:")
    run = api.until_done(started["id"])
    assert run["status"] == "succeeded", run
    assert run["archive"].endswith(".autorag-backup") and run["sizeBytes"] > 0
    assert len(run["sha256"]) == 64 and run["finishedAt"] is not None
    assert run["log"] and any("stored as" in line for line in run["log"])
    listed = api.ok("GET", "")["runs"]
    assert listed[0]["id"] == run["id"] and "log" not in listed[0]

    for credential in (api.token, api.key):  # encrypted: an admin's API key may fetch it
        download = api.call("GET", f"/{run['id']}/download", credential)
        assert download.status_code == 200, download.text
        assert download.content[:4] == b"ARBK" and len(download.content) == run["sizeBytes"]
        assert run["archive"] in download.headers["content-disposition"]
        assert download.headers["content-type"] == "application/octet-stream"

    report = api.ok("POST", f"/{run['id']}/verify")
    assert report["ok"] is True and report["problems"] == [], report
    assert report["checksumMatches"] is True and report["decrypted"] is True
    assert report["filesChecked"] == report["manifest"]["fileCount"] > 0
    assert report["manifest"]["vectorsIncluded"] is True

    assert api.call("GET", "/999999").status_code == 404
    assert api.call("GET", "/999999/download").status_code == 404


def test_a_second_backup_while_one_runs_is_refused(api: Api) -> None:
    """Another process (on another host) holds the mutex: 409 saying which run."""
    held = store.claim_run(
        api.engine, trigger="manual", destination="local:/elsewhere", job_id=None,
        host=f"not-{socket.gethostname()}", pid=1,
    )  # fmt: skip
    assert held is not None
    try:
        refused = api.call("POST", "/trigger", json={})
        assert refused.status_code == 409, refused.text
        assert refused.json()["code"] == "backup_running"
        assert f"run {held}" in refused.json()["detail"]
    finally:
        store.finish_run(api.engine, held, {"status": "failed", "error": "test"})


def test_a_backup_that_cannot_start_says_why(api: Api) -> None:
    """Refused before it holds the mutex: nothing recorded, the next one starts."""
    before = len(api.ok("GET", "")["runs"])
    missing = api.call("POST", "/trigger", json={"job": "missing"})
    assert missing.status_code == 404, missing.text
    password = api.call("POST", "/trigger", json={"destination": "ftp://u:secret@host/x"})
    assert password.status_code == 400 and "secret" not in password.text, password.text
    relative = api.call("POST", "/trigger", json={"destination": "backups"})
    assert relative.status_code == 400, relative.text
    assert len(api.ok("GET", "")["runs"]) == before


def test_jobs_added_changed_paused_and_removed(api: Api) -> None:
    bad = api.call(
        "POST", "/jobs", json={"name": "n", "cron": "0 25 * * *", "destination": "local:/x"}
    )
    assert bad.status_code == 422, bad.text
    assert "cron" in str(bad.json()["errors"]) and "25" in bad.text  # the reason, not a shrug
    assert (
        api.call(
            "POST", "/jobs", json={"name": "n", "cron": "0 3 * *", "destination": "/x"}
        ).status_code
        == 422
    )

    target = f"local:{api.server.workspace.root / 'nightly'}"
    body = {"name": "nightly", "cron": "0 3 * * *", "destination": target, "retentionDays": 7}
    job = api.ok("POST", "/jobs", 201, json=body)
    assert (job["name"], job["cron"], job["retentionDays"], job["enabled"]) == (
        "nightly",
        "0 3 * * *",
        7,
        True,
    )
    assert job["includeVectors"] is True and job["lastRun"] is None
    assert job["nextRunAt"] is not None  # the server's scheduler has it
    assert api.call("POST", "/jobs", json=body).status_code == 409

    paused = api.ok("PATCH", "/jobs/nightly", json={"enabled": False, "cron": "30 2 * * 1"})
    assert (paused["enabled"], paused["cron"], paused["nextRunAt"]) == (False, "30 2 * * 1", None)
    assert api.call("PATCH", "/jobs/nightly", json={"cron": "61 * * * *"}).status_code == 422
    assert api.call("PATCH", "/jobs/nightly", json={"enabled": None}).status_code == 400
    assert api.call("PATCH", "/jobs/missing", json={"enabled": True}).status_code == 404
    assert [j["name"] for j in api.ok("GET", "/jobs")["jobs"]] == ["nightly"]

    assert api.call("DELETE", "/jobs/nightly").status_code == 204
    assert api.call("DELETE", "/jobs/nightly").status_code == 404
    assert api.ok("GET", "/jobs")["jobs"] == []


def test_restore_needs_confirm_and_a_password_login(api: Api) -> None:
    run = api.ok("GET", "")["runs"][-1]
    refused = api.call("POST", f"/{run['id']}/restore", json={})
    assert refused.status_code == 400 and refused.json()["code"] == "confirm_required"
    assert api.call("POST", f"/{run['id']}/restore").status_code == 400
    by_key = api.call("POST", f"/{run['id']}/restore", api.key, json={"confirm": True})
    assert by_key.status_code == 403, by_key.text
    assert api.call("POST", "/rekey", api.key).status_code == 403


def test_rekey(api: Api) -> None:
    report = api.ok("POST", "/rekey")
    assert set(report) == {"resealed", "failed"}
    assert sum(report["failed"].values()) == 0


def test_restore_puts_back_what_the_backup_held(api: Api) -> None:
    """A user and a workspace added after the backup are gone after the restore, the
    settings file is the backup's (the answer says a restart takes it up); the backups'
    history (and the safety backup the restore made) stays; the server serves again,
    its maintenance over."""
    run = api.backup()
    assert run["status"] == "succeeded", run
    later = {"username": "later", "password": PASSWORD}
    assert api.server.call("POST", "/api/users", api.token, json=later).status_code == 201
    made = api.server.call("POST", "/api/workspaces", api.token, json={"name": "later-ws"})
    assert made.status_code == 201, made.text
    workspace = api.server.workspace
    backed_up_config = workspace.read_config()
    workspace.write_config({**backed_up_config, "search_paths": ["/later"]})

    restored = api.ok("POST", f"/{run['id']}/restore", json={"confirm": True})
    assert restored["archive"] == run["archive"]
    assert (restored["safetyRun"]["trigger"], restored["safetyRun"]["status"]) == (
        "safety",
        "succeeded",
    )
    assert restored["manifest"]["catalogKind"] == "sqlite"
    assert workspace.read_config() == backed_up_config  # the server still runs on its own
    assert any("restart the server" in w for w in restored["warnings"]), restored["warnings"]

    status = api.ok("GET", "/restore/status")
    assert (status["restoring"], status["error"]) == (False, None)
    assert status["finishedAt"] is not None
    users = api.server.call("GET", "/api/users", api.token)
    assert users.status_code == 200, users.text
    assert {u["username"] for u in users.json()} == {"root"}
    listed = api.server.call("GET", "/api/workspaces", api.token).json()["workspaces"]
    assert "later-ws" not in {w["name"] for w in listed}
    ids = {r["id"] for r in api.ok("GET", "")["runs"]}
    assert {run["id"], restored["safetyRun"]["id"]} <= ids  # the history carried over
    again = api.backup()  # the scheduler and the mutex work on the restored catalog
    assert again["status"] == "succeeded", again


def test_a_damaged_backup_is_refused_and_the_server_serves_on(api: Api) -> None:
    """A byte changed in the stored archive: the restore is refused (nothing touched),
    the status says why, and the server, reopened, serves as before."""
    run = api.backup()
    assert run["status"] == "succeeded", run
    stored = Path(run["destination"].removeprefix("local:")) / run["archive"]
    damaged = bytearray(stored.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    stored.write_bytes(bytes(damaged))

    checked = api.ok("POST", f"/{run['id']}/verify")
    assert checked["ok"] is False and checked["problems"], checked
    refused = api.call("POST", f"/{run['id']}/restore", json={"confirm": True})
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "backup_invalid"
    status = api.ok("GET", "/restore/status")
    assert status["restoring"] is False and status["error"], status
    assert api.server.call("GET", "/api/users", api.token).status_code == 200
    assert api.backup()["status"] == "succeeded"  # workers and scheduler back, mutex free


def test_while_restoring_only_liveness_the_ui_and_the_status_answer(api: Api) -> None:
    """The server in maintenance (as a restore puts it): the API answers 503 with
    Retry-After; the status answers a login token by its signature alone (the catalog is
    being replaced), not an API key (checked in the catalog)."""
    maintenance: Maintenance = api.server.app.state.server.maintenance
    with maintenance.restoring(own_requests=0):
        maintenance.progress(Progress("restore", 3, 10, "putting files back"))
        refused = api.server.call("GET", "/api/users", api.token)
        assert refused.status_code == 503 and refused.headers["retry-after"]
        assert refused.json()["code"] == "restoring"
        assert api.call("GET", "").status_code == 503
        for open_path in ("/healthz", "/", "/ui/main.js"):
            assert api.server.call("GET", open_path).status_code == 200, open_path
        status = api.ok("GET", "/restore/status")
        assert (status["restoring"], status["step"], status["done"], status["total"]) == (
            True,
            "restore",
            3,
            10,
        )
        assert api.call("GET", "/restore/status", api.key).status_code == 503
        anonymous = api.server.call("GET", URL + "/restore/status")
        assert anonymous.status_code == 401
    assert api.ok("GET", "/restore/status")["restoring"] is False
    assert api.server.call("GET", "/api/users", api.token).status_code == 200


# -- the maintenance gate, on its own ---------------------------------------------------------
@pytest.fixture
def gated() -> Iterator[tuple[TestClient, Maintenance, threading.Event]]:
    """A small app behind the gate: ``/slow`` waits for the event."""
    release = threading.Event()

    def slow(request: Request) -> PlainTextResponse:
        release.wait(WAIT_S)
        return PlainTextResponse("slow")

    def fast(request: Request) -> PlainTextResponse:
        return PlainTextResponse("fast")

    maintenance = Maintenance()
    routes = [Route("/slow", slow), Route("/fast", fast), Route("/healthz", fast)]
    app = MaintenanceGate(Starlette(routes=routes), maintenance)
    with TestClient(app) as client:
        yield client, maintenance, release
    release.set()


def test_the_gate_waits_for_running_requests_then_answers_503(
    gated: tuple[TestClient, Maintenance, threading.Event],
) -> None:
    client, maintenance, release = gated
    slow = threading.Thread(target=client.get, args=("/slow",))
    slow.start()
    deadline = time.monotonic() + WAIT_S
    while maintenance._running == 0 and time.monotonic() < deadline:  # the request is in
        time.sleep(0.01)
    entered = threading.Event()
    leave = threading.Event()

    def restore() -> None:
        with maintenance.restoring(own_requests=0):
            entered.set()
            maintenance.progress(Progress("restore", 1, 2, "putting files back"))
            leave.wait(WAIT_S)

    restoring = threading.Thread(target=restore)
    restoring.start()
    while not maintenance.active and time.monotonic() < deadline:
        time.sleep(0.01)
    refused = client.get("/fast")  # new requests are turned away at once…
    assert refused.status_code == 503
    assert refused.json()["code"] == "restoring" and refused.headers["retry-after"]
    assert client.get("/healthz").status_code == 200  # …but liveness
    assert not entered.is_set()  # the restore waits for the running request
    release.set()
    assert entered.wait(WAIT_S)
    assert (maintenance.status.step, maintenance.status.done) == ("restore", 1)
    leave.set()
    restoring.join(WAIT_S)
    slow.join(WAIT_S)
    assert client.get("/fast").status_code == 200
    assert maintenance.status.restoring is False and maintenance.status.finished_at


def test_the_gate_gives_up_when_requests_do_not_finish(
    gated: tuple[TestClient, Maintenance, threading.Event],
) -> None:
    client, maintenance, release = gated
    slow = threading.Thread(target=client.get, args=("/slow",))
    slow.start()
    deadline = time.monotonic() + WAIT_S
    while maintenance._running == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    with (
        pytest.raises(Unavailable, match="still running"),
        maintenance.restoring(own_requests=0, timeout=0.05),
    ):
        pytest.fail("entered with a request still running")
    assert client.get("/fast").status_code == 200  # back to serving, nothing touched
    release.set()
    slow.join(WAIT_S)
