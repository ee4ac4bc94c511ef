"""Synthesis over HTTP on a real server, in extractive mode (SQLite: the service's own
tests cover both catalogs): a run started and followed to review as a client polls it
(the server's worker runs it), its preview, some items approved (the page's history
names the run), the rest rejected; another workspace's run is missing; a member is
refused; bad bodies are 422; the PHI gate refuses a hosted model before it is sent
anything.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from starlette.types import ASGIApp
from tests.doubles.openai_server import ScriptedOpenAI
from tests.integration.conftest import ApiServer
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import open_context
from autorag.ingest.minsync import refresh

if TYPE_CHECKING:
    from autorag.context import AppContext

PASSWORD = "a long enough password"
WAIT_S = 120.0  # a run's bound (never reached: an extractive run takes a second)
DOCS = {
    "apollo.md": "# Apollo\n\nApollo is the launch project of the team. Apollo launches in "
    "May from Kourou.\n\nJane Roe leads Apollo. Jane Roe signs the launch checklist.\n",
    "kiln.md": "# Kiln\n\nThe Kiln fires at dawn. The Kiln is serviced on Fridays.\n\n"
    "Jane Roe owns the Kiln and its logbook.\n",
}


def _url(workspace: str, archive: str, rest: str = "") -> str:
    return f"/api/workspaces/{workspace}/archives/{archive}/synthesis{rest}"


@dataclass
class Api:
    server: ApiServer
    keys: dict[str, str]  # user name -> API key
    model: ScriptedOpenAI  # a hosted model's double: the PHI gate keeps it unasked

    def call(self, who: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.server.call(method, path, self.keys[who], **kwargs)

    def ok(self, who: str, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.call(who, method, path, **kwargs)
        assert response.status_code == status, response.text
        return response.json()

    def until_stopped(self, who: str, workspace: str, archive: str, run: int) -> dict[str, Any]:
        """The run once its passes stopped (ready, paused, failed, cancelled), polled as a
        client would."""
        deadline = time.monotonic() + WAIT_S
        while True:
            found: dict[str, Any] = self.ok(who, "GET", _url(workspace, archive, f"/{run}"))
            if found["status"] not in ("queued", "running") or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as scripted:
        yield scripted


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    model: ScriptedOpenAI,
) -> Api:
    root = tmp_path_factory.mktemp("synthesis")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    # "hosted": a model server that is not local. The default stays the built-in
    # extractive provider: runs without a model named are extractive.
    hosted = {
        "name": "hosted",
        "kind": "openai",
        "base_url": model.base_url,
        "default_model": "gpt-test",
        "local": False,
        "timeout_s": 10,
    }
    workspace = new_workspace(root / "kb", search_paths=[str(docs)], llm={"providers": [hosted]})
    context = open_context(workspace)
    try:
        keys = _prepare(context)
    finally:
        context.close()
    app = create_app(workspace)
    api = Api(ApiServer(serve_asgi(app), app, workspace, keys), keys, model)
    for workspace_name in ("default", "other"):
        api.ok("root", "POST", f"/api/workspaces/{workspace_name}/archives", 201,
               json={"name": "handbook", "title": "Handbook"})  # fmt: skip
    return api


def _prepare(context: AppContext) -> dict[str, str]:
    """The documents indexed; a manager and a member of ``default``, an admin; the
    workspace ``other``."""
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
    catalog = context.catalog
    catalog.ensure_workspace("other")
    keys = {}
    for username, role in [("boss", "manager"), ("mem", "member"), ("root", "admin")]:
        service.create_user(catalog, username, PASSWORD, role)
        if role != "admin":
            service.add_membership(catalog, username, "default")
        keys[username] = service.create_api_key(catalog, username, "test", [])[1]
    return keys


def test_a_run_from_start_to_decision(api: Api) -> None:
    started = api.ok("boss", "POST", _url("default", "handbook"), 202, json={})
    assert (started["status"], started["mode"], started["createdBy"]) == (
        "queued",
        "extractive",
        "boss",
    )
    assert started["model"] == "extractive/extractive" and started["sources"] == 2
    run = api.until_stopped("boss", "default", "handbook", started["id"])
    assert run["status"] == "ready", run
    assert [p["state"] for p in run["passes"]] == ["done"] * 5
    assert run["modelCalls"] == 0 and run["pending"] == run["items"] > 0
    listed = api.ok("boss", "GET", _url("default", "handbook"))["runs"]
    assert run["id"] in [r["id"] for r in listed]

    preview = api.ok("boss", "GET", _url("default", "handbook", f"/{run['id']}/items"))
    assert preview["run"]["id"] == run["id"]
    items = preview["items"]
    actions = {item["action"] for item in items}
    assert "create" in actions and "overview" in actions and "contradiction" not in actions
    creates = [item for item in items if item["action"] == "create"]
    for item in creates:
        assert item["status"] == "pending" and not item["stale"]
        assert item["diff"].startswith("---") or "+" in item["diff"], item
        assert {p["sourceId"] for p in item["sources"]} <= {"/docs/apollo.md", "/docs/kiln.md"}
        assert item["sources"] and all(p["text"] for p in item["sources"])

    # Some items approved: saved as pages whose history names the run.
    chosen = creates[0]
    decision = api.ok(
        "boss",
        "POST",
        _url("default", "handbook", f"/{run['id']}/approve"),
        json={"items": [chosen["id"]]},
    )
    assert (decision["applied"], decision["pages"]) == ([chosen["id"]], [chosen["path"]])
    assert decision["run"]["status"] == "partially_applied"
    history = api.ok(
        "boss", "GET", f"/api/workspaces/default/archives/handbook/pages/{chosen['path']}/-/history"
    )["versions"]
    assert len(history) == 1 and f"synthesis run {run['id']}" in history[0]["note"]
    assert history[0]["savedBy"] == "boss"

    # The rest rejected: nothing more written, nothing left to decide.
    rest = sorted(item["id"] for item in items if item["id"] != chosen["id"])
    rejected = api.ok("boss", "POST", _url("default", "handbook", f"/{run['id']}/reject"))
    assert sorted(rejected["rejected"]) == rest
    assert rejected["run"]["pending"] == 0
    pages = api.ok("boss", "GET", "/api/workspaces/default/archives/handbook/pages")["pages"]
    assert [page["path"] for page in pages] == [chosen["path"]]
    after = api.ok("boss", "GET", _url("default", "handbook", f"/{run['id']}/items"))["items"]
    assert {i["id"]: i["status"] for i in after} == {
        i["id"]: "applied" if i["id"] == chosen["id"] else "rejected" for i in items
    }

    # The same documents, unchanged: nothing to read unless forced.
    nothing = api.call("boss", "POST", _url("default", "handbook"), json={})
    assert (nothing.status_code, nothing.json()["code"]) == (400, "nothing_to_synthesise")
    assert "unchanged since run" in nothing.json()["detail"]


def test_another_workspaces_run_is_missing(api: Api) -> None:
    upload = {"file": ("notes.md", b"# Granary\n\nThe Granary opens at noon. The Granary.\n")}
    document = api.ok("root", "POST", "/api/workspaces/other/documents", 202, files=upload)
    assert api.server.wait_processed(api.keys["root"], document["id"], "other")["status"] == (
        "ready"
    )
    theirs = api.ok("root", "POST", _url("other", "handbook"), 202, json={"force": True})
    mine = api.ok("boss", "POST", _url("default", "handbook"), 202, json={"force": True})
    routes = [("GET", ""), ("GET", "/items"), ("POST", "/approve"), ("POST", "/reject"),
              ("POST", "/cancel"), ("POST", "/resume")]  # fmt: skip
    for method, rest in routes:
        missing = api.call("boss", method, _url("default", "handbook", f"/{theirs['id']}{rest}"))
        assert (missing.status_code, missing.json()["code"]) == (404, "run_not_found"), rest
    # The admin sees both workspaces: a run is found only under its own.
    crossed = api.call("root", "GET", _url("other", "handbook", f"/{mine['id']}"))
    assert (crossed.status_code, crossed.json()["code"]) == (404, "run_not_found")
    ids = [r["id"] for r in api.ok("root", "GET", _url("other", "handbook"))["runs"]]
    assert ids == [theirs["id"]]
    for workspace, archive, run in [("other", "handbook", theirs), ("default", "handbook", mine)]:
        stopped = api.until_stopped("root", workspace, archive, run["id"])
        assert stopped["status"] == "ready", stopped
        assert (
            api.ok("root", "POST", _url(workspace, archive, f"/{run['id']}/reject"))["run"][
                "status"
            ]
            == "rejected"
        )
    # Decided: nothing more to approve.
    again = api.call("boss", "POST", _url("default", "handbook", f"/{mine['id']}/approve"))
    assert (again.status_code, again.json()["code"]) == (409, "run_not_ready")


def test_a_member_is_refused(api: Api) -> None:
    for method, rest in [("GET", ""), ("POST", ""), ("GET", "/1"), ("GET", "/1/items"),
                         ("POST", "/1/approve"), ("POST", "/1/reject")]:  # fmt: skip
        refused = api.call("mem", method, _url("default", "handbook", rest))
        assert (refused.status_code, refused.json()["code"]) == (403, "forbidden"), rest


@pytest.mark.parametrize(
    ("rest", "body"),
    [
        ("", {"documentIds": "4,9"}),
        ("", {"documentIds": []}),
        ("", {"documentIds": [0]}),
        ("", {"since": "last week"}),
        ("", {"docType": "p d f"}),
        ("", {"force": "maybe"}),
        ("", {"archive": "elsewhere"}),  # an unknown field is refused, not ignored
        ("/1/approve", {"items": ["twelve"]}),
        ("/1/approve", {"overwrite": "perhaps"}),
        ("/1/reject", {"items": []}),
    ],
)
def test_a_bad_body_is_422(api: Api, rest: str, body: dict[str, Any]) -> None:
    response = api.call("boss", "POST", _url("default", "handbook", rest), json=body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation_error"


def test_the_phi_gate_refuses_a_hosted_model_before_it_reads_anything(api: Api) -> None:
    config = {"localLlmOnly": True}
    api.ok("boss", "POST", "/api/workspaces/default/archives", 201,
           json={"name": "private", "config": config})  # fmt: skip
    api.model.reset([])
    refused = api.call(
        "boss", "POST", _url("default", "private"), json={"model": "hosted/gpt-test"}
    )
    assert refused.status_code == 403, refused.text
    problem = refused.json()
    assert problem["code"] == "local_llm_only"
    assert "private" in problem["detail"] and "hosted/gpt-test" in problem["detail"]
    assert api.model.requests == []  # no text left the machine
    assert api.ok("boss", "GET", _url("default", "private"))["runs"] == []  # nothing stored
