"""Archives over HTTP on a real server (each catalog backend): a page's life through the
API (create, a stale save refused with the version to build on, history, diff, restore,
rename with the old path still resolving, links and backlinks, search, export and
import, a page from a document), the grant that lets a member write, and bad input.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from autorag.auth import service
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

WIKI = "/api/workspaces/default/archives"
PASSWORD = "a long enough password"


@dataclass
class Api:
    server: ApiServer
    keys: dict[str, str]  # user name -> API key

    def call(self, who: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.server.call(method, WIKI + path, self.keys[who], **kwargs)

    def ok(self, who: str, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        response = self.call(who, method, path, **kwargs)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def save(
        self, who: str, path: str, body: str, base: int | None, title: str | None = None
    ) -> httpx.Response:
        page = {"title": title, "body": body, "baseVersion": base}
        return self.call(who, "PUT", f"/handbook/pages/{path}", json=page)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Api:
    def prepare(context: AppContext) -> dict[str, str]:
        catalog = context.catalog
        keys = {}
        for username, role in [("boss", "manager"), ("mem", "member"), ("pal", "member")]:
            service.create_user(catalog, username, PASSWORD, role)
            service.add_membership(catalog, username, "default")
            keys[username] = service.create_api_key(catalog, username, "test", [])[1]
        return keys

    server = launch_api(tmp_path_factory.mktemp("archives") / "kb", prepare)
    api = Api(server, server.prepared)
    made = api.ok("boss", "POST", "", 201, json={"name": "handbook", "title": "Team handbook"})
    assert (made["name"], made["createdBy"], made["config"]["writers"]) == ("handbook", "boss", [])
    return api


def test_a_page_through_its_life(api: Api) -> None:
    created = api.save("boss", "projects/apollo", "Apollo launches in May.", None, "Apollo")
    assert created.status_code == 201, created.text
    assert (created.json()["version"], created.json()["createdBy"]) == (1, "boss")
    again = api.save("boss", "projects/apollo", "A second Apollo.", None)
    assert (again.status_code, again.json()["code"]) == (409, "page_exists")

    # Two editors start from version 1; the second save is stale and told what is current.
    first = api.save("boss", "projects/apollo", "Apollo launches in June. See [[Checklist]].", 1)
    assert (first.status_code, first.json()["version"]) == (200, 2)
    stale = api.save("boss", "projects/apollo", "Apollo launches in July.", 1)
    assert stale.status_code == 409
    problem = stale.json()
    assert (problem["code"], problem["currentVersion"]) == ("stale_version", 2)
    assert stale.headers["content-type"] == "application/problem+json"
    assert "June" in api.ok("mem", "GET", "/handbook/pages/projects/apollo")["body"]

    # The page by its title, as links name it; the listing, flat and as a tree.
    assert api.ok("mem", "GET", "/handbook/pages/Apollo")["path"] == "projects/apollo"
    listing = api.ok("mem", "GET", "/handbook/pages", params={"tree": "true"})
    assert [p["path"] for p in listing["pages"]] == ["projects/apollo"]
    (projects,) = listing["tree"]
    assert (projects["name"], projects["page"]) == ("projects", None)
    assert projects["children"][0]["page"]["title"] == "Apollo"

    # The link to a page not written yet dangles until the page exists.
    links = api.ok("mem", "GET", "/handbook/pages/projects/apollo/-/links")
    assert [link["target"] for link in links["dangling"]] == ["Checklist"]
    checklist = api.save(
        "boss", "checklist", "Before [[Apollo]] launches: test.", None, "Checklist"
    )
    assert checklist.status_code == 201
    links = api.ok("mem", "GET", "/handbook/pages/projects/apollo/-/links")
    assert links["dangling"] == []
    assert [link["sourcePath"] for link in links["backlinks"]] == ["checklist"]
    assert "launches" in links["backlinks"][0]["context"]
    graph = api.ok("mem", "GET", "/handbook/pages/checklist/-/graph", params={"depth": 2})
    assert {node["path"] for node in graph["nodes"]} == {"checklist", "projects/apollo"}

    # History, a diff between versions, and a restore that is a new version.
    history = api.ok("mem", "GET", "/handbook/pages/projects/apollo/-/history")["versions"]
    assert [v["version"] for v in history] == [2, 1]
    diff = api.ok("mem", "GET", "/handbook/pages/projects/apollo/-/diff", params={"from": 1})
    assert (diff["fromVersion"], diff["toVersion"]) == (1, 2)
    assert "-Apollo launches in May." in diff["diff"] and "+Apollo launches in June" in diff["diff"]
    old = api.ok("mem", "GET", "/handbook/pages/projects/apollo/-/versions/1")
    assert old["body"] == "Apollo launches in May."
    restore = {"version": 1, "baseVersion": 2}
    restored = api.ok("boss", "POST", "/handbook/pages/projects/apollo/-/restore", json=restore)
    assert (restored["version"], restored["body"]) == (3, "Apollo launches in May.")

    # A rename keeps the page; its old path still finds it.
    moved = api.ok(
        "boss",
        "POST",
        "/handbook/pages/projects/apollo/-/rename",
        json={"newPath": "programs/apollo", "baseVersion": 3},
    )
    assert (moved["id"], moved["path"]) == (created.json()["id"], "programs/apollo")
    assert api.ok("mem", "GET", "/handbook/pages/projects/apollo")["path"] == "programs/apollo"

    # Search finds the page by its words.
    hits = api.ok("mem", "GET", "/handbook/search", params={"q": "launches in May"})["hits"]
    found = {hit["path"]: hit["text"] for hit in hits}
    assert found["programs/apollo"] == "Apollo launches in May."  # the restored text only


def test_preview_export_import_and_a_page_from_a_document(api: Api) -> None:
    assert (
        api.save("boss", "notes/kiln", "The kiln fires at dawn.", None, "Kiln").status_code == 201
    )
    preview = api.ok(
        "mem", "POST", "/handbook/pages/notes/kiln/-/preview", json={"body": "The kiln is cold."}
    )
    assert (preview["action"], preview["baseVersion"]) == ("update", 1)
    assert "+The kiln is cold." in preview["diff"]
    assert api.ok("mem", "GET", "/handbook/pages/notes/kiln")["version"] == 1  # nothing saved
    # A page may be larger than the API's usual JSON body cap (1 MB), up to its own 2 MB.
    large = "A line of a long page.\n" * 65_000
    big = api.ok("mem", "POST", "/handbook/pages/notes/large/-/preview", json={"body": large})
    assert (big["action"], big["baseVersion"]) == ("create", None)

    exported = api.call("mem", "GET", "/handbook/export")
    assert exported.status_code == 200
    assert exported.headers["content-disposition"] == 'attachment; filename="handbook.zip"'
    with zipfile.ZipFile(io.BytesIO(exported.content)) as zipped:
        assert "notes/kiln.md" in zipped.namelist()
    api.ok("boss", "POST", "", 201, json={"name": "copy"})
    files = {"file": ("handbook.zip", exported.content, "application/zip")}
    report = api.ok("boss", "POST", "/copy/import", files=files)
    assert "notes/kiln" in report["created"]
    assert [name for name, _ in report["skipped"]] == ["index.md"]  # made again from the pages
    copied = api.ok("mem", "GET", "/copy/pages/notes/kiln")
    assert (copied["title"], copied["body"]) == ("Kiln", "The kiln fires at dawn.")
    not_zip = api.call("boss", "POST", "/copy/import", files={"file": ("a.md", b"# A\n")})
    assert (not_zip.status_code, not_zip.json()["code"]) == (415, "unsupported_media_type")

    uploaded = api.server.call(
        "POST",
        "/api/workspaces/default/documents",
        api.keys["boss"],
        files={"file": ("minutes.txt", b"The board approved the granary budget.\n")},
    )
    assert uploaded.status_code == 202, uploaded.text
    document = api.server.wait_processed(api.keys["boss"], uploaded.json()["id"])
    assert document["status"] == "ready", document
    page = api.ok(
        "boss",
        "POST",
        "/handbook/from-document",
        201,
        json={"document": str(document["id"]), "path": "minutes/board", "title": "Board"},
    )
    assert (page["path"], page["title"]) == ("minutes/board", "Board")
    assert "granary budget" in page["body"]


def test_a_member_writes_the_pages_of_an_archive_that_names_them(api: Api) -> None:
    refused = api.save("mem", "mem/notes", "Mine.", None)
    assert refused.status_code == 403
    assert "writers" in refused.json()["detail"]
    assert api.call("mem", "PATCH", "/handbook", json={"title": "Mine"}).status_code == 403

    unknown = api.call("boss", "PATCH", "/handbook", json={"config": {"writers": ["nobody"]}})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "unknown_user")
    granted = api.ok("boss", "PATCH", "/handbook", json={"config": {"writers": ["mem"]}})
    assert granted["config"]["writers"] == ["mem"]
    assert granted["title"] == "Team handbook"  # what was not given did not change

    assert api.save("mem", "mem/notes", "Mine.", None).status_code == 201
    # The snake_case name earlier clients sent is accepted too.
    page = {"body": "Mine, again.", "base_version": 1}
    assert api.call("mem", "PUT", "/handbook/pages/mem/notes", json=page).status_code == 200
    assert api.call("mem", "DELETE", "/handbook/pages/mem/notes").status_code == 204
    assert api.save("pal", "pal/notes", "Not mine.", None).status_code == 403  # not named
    assert api.call("mem", "PATCH", "/handbook", json={"config": {"writers": []}}).status_code == (
        403  # the grant is a manager's to give
    )
    api.ok("boss", "PATCH", "/handbook", json={"config": {"writers": []}})
    assert api.save("mem", "mem/again", "Mine.", None).status_code == 403


def _snake_keys(value: Any) -> list[str]:
    """The field names with an underscore anywhere in an answer (a page's front matter is
    its author's: not looked into)."""
    if isinstance(value, list):
        return [key for item in value for key in _snake_keys(item)]
    if not isinstance(value, dict):
        return []
    found = [key for key in value if "_" in key]
    return found + [k for key, v in value.items() if key != "frontMatter" for k in _snake_keys(v)]


def test_the_archives_api_speaks_camel_case(api: Api) -> None:
    options = {"allowAgentWrites": True, "localLlmOnly": True}
    made = api.ok("boss", "POST", "", 201, json={"name": "keys", "config": options})
    assert made["config"] == {**options, "writers": []}
    body = "---\ndue_date: 2026-05-01\nowner_name: Ada\n---\nThe plan. See [[Elsewhere]]."
    page = {"title": "Plan", "body": body, "baseVersion": None}
    saved = api.ok("boss", "PUT", "/keys/pages/plan", 201, json=page)
    # The front matter's keys are the author's: they stay as written.
    assert saved["frontMatter"] == {"due_date": "2026-05-01", "owner_name": "Ada"}
    preview = {"body": "The plan, changed."}
    answers = [
        made,
        saved,
        api.ok("mem", "GET", ""),
        api.ok("mem", "GET", "/keys/pages", params={"tree": "true"}),
        api.ok("mem", "GET", "/keys/pages/plan/-/history"),
        api.ok("mem", "GET", "/keys/pages/plan/-/versions/1"),
        api.ok("mem", "GET", "/keys/pages/plan/-/links"),
        api.ok("mem", "GET", "/keys/pages/plan/-/graph"),
        api.ok("mem", "GET", "/keys/graph"),
        api.ok("mem", "GET", "/keys/search", params={"q": "plan", "mode": "fts"}),
        api.ok("mem", "POST", "/keys/pages/plan/-/preview", json=preview),
    ]
    assert [answer for answer in answers if _snake_keys(answer)] == []
    assert answers[9]["hits"] and answers[9]["hits"][0]["pageId"] == saved["id"]

    patched = api.ok("boss", "PATCH", "/keys", json={"config": {"allowAgentWrites": False}})
    assert patched["config"] == {"allowAgentWrites": False, "localLlmOnly": True, "writers": []}
    unknown = api.call("boss", "PATCH", "/keys", json={"config": {"allowAgentEdits": True}})
    assert (unknown.status_code, unknown.json()["code"]) == (422, "validation_error")


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("Bad Name!", "x", 400, "invalid_page_path"),
        ("a/.hidden", "x", 400, "invalid_page_path"),
        ("ok", "---\n: [unclosed\n---\ntext", 400, "invalid_front_matter"),
        ("big", "x" * (2 * 1024**2 + 1), 413, "page_too_large"),  # the 2 MB cap of a page
    ],
    ids=["odd characters", "hidden segment", "front matter not YAML", "over 2 MB"],
)
def test_bad_pages_are_refused_with_a_clear_code(
    api: Api, path: str, body: str, status: int, code: str
) -> None:
    response = api.save("boss", path, body, None)
    assert response.status_code == status, response.text
    assert response.json()["code"] == code
    assert api.call("mem", "GET", f"/handbook/pages/{path.lower()}").status_code in (400, 404)


def test_missing_archives_and_pages_say_which(api: Api) -> None:
    assert api.call("mem", "GET", "/nowhere/pages").json()["code"] == "archive_not_found"
    assert api.call("mem", "GET", "/handbook/pages/no/such").json()["code"] == "page_not_found"
    taken = api.call("boss", "POST", "", json={"name": "handbook"})
    assert (taken.status_code, taken.json()["code"]) == (409, "archive_exists")
    bad = api.call("boss", "POST", "", json={"name": "Bad name"})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_archive_name")
