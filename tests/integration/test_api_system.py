"""Settings → Maintenance and the OCR settings over HTTP, on a real server (SQLite; the
authorization matrix runs these routes on PostgreSQL too).

Re-index: ``POST /api/system/reindex-documents`` queues a re-embed of every workspace
(202 with the run's id); a second one while it runs is refused (409); the progress
reaches done for each workspace, every live vector table was rewritten, search still
answers. To hold the run mid-way without a sleep, the test takes the pool's exclusive
lock of one workspace (the one a re-embed needs for its final swap) and lets it go
after the 409. OCR settings: a workspace's engine, languages and vision model, checked
against the server's configuration.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import lancedb
import pytest
from starlette.types import ASGIApp
from tests.integration.conftest import ApiServer
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import open_context

PASSWORD = "a long enough password"
REINDEX = "/api/system/reindex-documents"
WAIT_S = 120.0
# A model server on a closed loopback port: configured (and local), never contacted.
VISION = {"name": "vis", "kind": "openai", "base_url": "http://127.0.0.1:9/v1"}
HOSTED = {"name": "cloud", "kind": "openai", "base_url": "https://api.example.com/v1"}


@dataclass
class Api:
    server: ApiServer
    tokens: dict[str, str]  # admin, manager: password logins
    admin_key: str  # an admin's API key without the admin:protection scope

    def call(self, who: str, method: str, path: str, **kw: Any) -> httpx.Response:
        credential = self.admin_key if who == "admin_key" else self.tokens.get(who)
        return self.server.call(method, path, credential, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.call("admin", method, path, **kw)
        assert response.status_code == status, response.text
        return response.json()

    def upload(self, workspace: str, name: str, text: str) -> int:
        files = {"file": (name, text.encode())}
        made = self.ok("POST", f"/api/workspaces/{workspace}/documents", 202, files=files)
        return int(made["id"])

    def wait_ready(self, workspace: str, document_id: int) -> None:
        done = self.server.wait_processed(self.tokens["admin"], document_id, workspace)
        assert done["status"] == "ready", done


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("system-api")
    workspace = new_workspace(root / "kb", llm={"providers": [VISION, HOSTED]})
    context = open_context(workspace)
    try:
        context.catalog.ensure_workspace("other")
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "mgr", PASSWORD, "manager")
        service.add_membership(context.catalog, "mgr", "default")
        admin_key = service.create_api_key(context.catalog, "root", "tests", [])[1]
    finally:
        context.close()
    app = create_app(workspace, server={"login_attempts_per_minute": 10_000, "workers": 2})
    server = ApiServer(serve_asgi(app), app, workspace, None)
    tokens = {}
    for user in ("root", "mgr"):
        login = server.call(
            "POST", "/api/auth/login", json={"username": user, "password": PASSWORD}
        )
        tokens["admin" if user == "root" else "manager"] = login.json()["access_token"]
    yield Api(server, tokens, admin_key)


def _tables(api: Api) -> dict[str, int]:
    """Each workspace's live vector table and its version."""
    db = lancedb.connect(str(api.server.workspace.vectors_dir))
    context = open_context(api.server.workspace)
    try:
        infos = [context.catalog.get_workspace(name) for name in ("default", "other")]
    finally:
        context.close()
    return {i.name: db.open_table(i.vector_table).version for i in infos}


def _wait_done(api: Api) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while True:
        run: dict[str, Any] = api.ok("GET", REINDEX)["run"]
        if run["status"] != "running" or time.monotonic() > deadline:
            return run
        time.sleep(0.1)


def test_reindex_rebuilds_every_workspace(api: Api) -> None:
    ids = {
        "default": api.upload("default", "tapir.txt", "The mountain tapir browses in forests."),
        "other": api.upload("other", "okapi.txt", "The okapi is a forest giraffe of the Congo."),
    }
    # An archive's page: its hidden index is re-embedded with the workspaces.
    api.ok("POST", "/api/workspaces/default/archives", 201, json={"name": "notes"})
    page = {"body": "# Tapirs\n\nTapirs sleep by day.", "baseVersion": None}
    api.ok("PUT", "/api/workspaces/default/archives/notes/pages/tapirs.md", 201, json=page)
    for workspace, document_id in ids.items():
        api.wait_ready(workspace, document_id)
    assert api.ok("GET", REINDEX) == {"run": None}
    before = _tables(api)
    pool = api.server.app.state.server.workers
    default_id = api.server.app.state.server.context.info.id
    # The re-embed of `default` waits for this lock to swap its table in: it stays
    # running, so the run is under way while the second POST is sent.
    with pool.locks(default_id).exclusive():
        started = api.ok("POST", REINDEX, 202)
        assert started["total"] == 3 and started["id"]
        again = api.call("admin", "POST", REINDEX)
        assert again.status_code == 409, again.text
        assert again.json()["code"] == "reindex_running"
        during = api.ok("GET", REINDEX)["run"]
        assert during["id"] == started["id"] and during["status"] == "running"
        assert during["total"] == 3 and during["startedBy"] == "root"
    run = _wait_done(api)
    assert (run["status"], run["done"], run["failed"], run["total"]) == ("done", 3, 0, 3), run
    assert [(w["workspace"], w["hidden"]) for w in run["workspaces"]][:2] == [
        ("default", False), ("other", False)
    ]  # fmt: skip
    assert run["workspaces"][2]["hidden"] is True
    assert all(w["status"] == "done" and w["chunks"] >= 1 for w in run["workspaces"]), run
    after = _tables(api)
    assert all(after[name] > before[name] for name in before), (before, after)
    for workspace, word in (("default", "tapir"), ("other", "okapi")):
        found = api.ok("POST", f"/api/workspaces/{workspace}/search", json={"query": word})
        assert ids[workspace] in [hit["documentId"] for hit in found["hits"]], found


def test_reindex_refusals(api: Api) -> None:
    assert api.call("manager", "POST", REINDEX).status_code == 403
    assert api.call("manager", "GET", REINDEX).status_code == 403
    assert api.call("nobody", "POST", REINDEX).status_code == 401
    # A key without the admin:protection scope reads the progress, starts nothing.
    refused = api.call("admin_key", "POST", REINDEX)
    assert refused.status_code == 403 and "admin:protection" in refused.json()["detail"]
    assert api.call("admin_key", "GET", REINDEX).status_code == 200


def test_ocr_settings(api: Api) -> None:
    url = "/api/workspaces/default/ocr/settings"
    start = api.ok("GET", url)
    assert (start["engine"], start["languages"], start["visionModel"]) == (None, None, None)
    assert start["effective"] == start["server"] and "off" in start["engines"]
    chosen = api.ok(
        "PATCH",
        url,
        json={"engine": "vision", "languages": ["ENG", "deu"], "visionModel": "vis/llava"},
    )
    assert (chosen["engine"], chosen["languages"], chosen["visionModel"]) == (
        "vision", ["eng", "deu"], "vis/llava"
    )  # fmt: skip
    assert chosen["effective"]["engine"] == "vision"
    assert chosen["effective"]["visionModel"] == "vis/llava"
    assert api.ok("GET", "/api/workspaces/other/ocr/settings")["engine"] is None
    off = api.ok("PATCH", url, json={"engine": "off"})
    assert off["effective"]["enabled"] is False and off["languages"] == ["eng", "deu"]
    for body, words in (
        ({"engine": "paper"}, "unknown OCR engine"),
        ({"languages": ["eng", "xx1"]}, "unknown OCR language"),
        ({"languages": ["klingon"]}, "unknown OCR language"),
        ({"visionModel": "nope/llava"}, "not served by a configured model provider"),
        ({"visionModel": "vis"}, "not served by a configured model provider"),
        ({"visionModel": "cloud/gpt-4o"}, "hosted"),
    ):
        refused = api.call("admin", "PATCH", url, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert words in refused.json()["detail"], refused.text
    assert api.call("admin", "PATCH", url, json={"nope": 1}).status_code == 422
    # Back to the server's settings.
    back = api.ok("PATCH", url, json={"engine": None, "languages": None, "visionModel": None})
    assert back["effective"] == back["server"]
    assert api.call("manager", "PATCH", url, json={"engine": "auto"}).status_code == 200
    assert api.call("manager", "GET", "/api/workspaces/other/ocr/settings").status_code == 404
