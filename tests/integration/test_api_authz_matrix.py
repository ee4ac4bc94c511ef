"""The authorization matrix: every route of the API × who calls × which workspace.

One server for the module, with workspace A (``default``, the one the configuration
names) and workspace B (``other``), a processed document in each, and six callers: an
admin's login token, a manager's and a member's (both members of A only), the member's
API key scoped to A, an admin's API key scoped to B, and nobody.

The answer each cell expects comes from the permission table below, written from the
issue, never from the production permission code:

* no credentials: 401, except on the public routes;
* a workspace the caller may not act in: 404 exactly as a missing one, never 403;
* in the caller's own workspace: the route's answer, or 403 without the permission;
* a document or job id of the other workspace, asked for under this one: 404;
* a chat is its user's own, in its workspace: another user's chat, or one of the
  caller's in the other workspace, is missing (404), and so is a memory key of the
  other workspace;
* acting on the set of workspaces itself (creating one, or setting the installation's
  default model) needs a caller confined to no workspaces: an admin's API key scoped
  to B administers B, it makes no workspaces;
* P2P (its status, the trusted peers, the peer queries waiting for approval, asking a
  peer) is the installation's, an admin's only, and needs a caller confined to no
  workspaces too. P2P is off in this server: asking a peer is unavailable (503).
* what weakens protection or destroys data (deleting a workspace, changing DLP
  patterns or source policy) needs a password login or an API key created with the
  ``admin:protection`` scope, which none of these keys has: 403 for them (each such
  route, with such a key, is in test_api_protection.py);
* logging out ends the caller's login tokens: a login token may (the cell logs in
  again afterwards), an API key is not a login (403).
* archives (the wiki): every member reads them; managers and admins create, change and
  write them; a member writes an archive's pages only when it names them among its
  writers (none of these archives does: 403, after a missing archive's 404); deleting
  one destroys data; templates are added and removed by admins.
* synthesis (runs proposing archive pages from the documents): managers and admins
  only (``archive:write``), reading runs included; a run of the other workspace, asked
  for under this workspace's archive, is missing (404).
* backups are the installation's: an admin's only (``backup:admin``: the runs, a
  backup made now, one downloaded or verified, the scheduled jobs), by a caller confined
  to no workspaces; restoring one and re-keying the stored secrets need a password
  login too (``backup:restore``). A restore is asked for without ``confirm`` here (400:
  it would replace the world the other cells run in; test_api_backups.py restores).
* web push: the VAPID public key and the service worker are public; every user
  subscribes their own browsers and chooses their topics (``push:use``, API keys too);
  a test notification is an unconfined admin's (``push:admin``), sent here to a user
  with no browser (nothing leaves the machine; test_api_push.py sends real ones).
* webhooks send the installation's events out: an unconfined admin's only
  (``webhooks:admin``), and protected (a password login or a protection-scoped key).
  The test event goes to a loopback URL made outside the server, which the server's
  guard refuses (``allow_private`` off): nothing is sent (test_webhooks.py sends real
  ones).
* MCP tool servers installed in a workspace (``mcp:admin``): its admins', protected (a
  password login or a protection-scoped key: installing one runs a command here). The
  cells install a command that does not exist (400: no process runs in the matrix;
  test_mcp_tools.py installs a real one) and test one that cannot start (200, not ok).
* the event log (``GET /api/events``) is the installation's: an unconfined admin's
  (``events:read``), API keys included; it never carries a document's text.
* MCP (``POST /mcp``, streamable HTTP): any valid credentials (no credentials: 401);
  each tool call is then scoped as the routes are (test_mcp_server.py calls them).
* a workspace's OCR settings (engine, languages, vision model) are read as its OCR
  instructions are (``documents:read``) and changed as they are (``workspaces:write``).
* re-indexing every workspace after an embedding model change
  (``/api/system/reindex-documents``) rebuilds the vectors of all of them: an admin
  confined to no workspace (``workspaces:admin`` everywhere, as the per-workspace
  re-embed needs it in one), and, as that re-embed, protected: heavy work over every
  workspace that a leaked key must not be able to start again and again (a password
  login or a protection-scoped key). Its progress is read by the same admins, keys too.
* chat widgets of a workspace (``widgets:admin``): its admins', protected (a password
  login or a protection-scoped key: a widget answers anonymous visitors of other sites
  from the workspace). A visitor's routes are public, by the widget's id: its
  configuration (200), and a question without the ``X-Widget-Id`` header (400: no
  model runs in the matrix; test_api_widgets.py asks real ones); ``/widget.js`` too.
* a YouTube video is added as a document is uploaded (``documents:write``). The cells
  send a URL of no video (400: nothing may reach the network here); test_youtube.py
  adds real ones, YouTube answered from recorded files.

Destructive cells act on fresh objects (a document, a user, a key made for the cell)
when they may succeed, and on the fixtures when they must be refused, which then must
still be there. Deleting B itself puts B back, with a new document, for later cells.

A route's cells run in one test (per backend), in the order above; a failing cell does
not stop the others, and the test names every failing cell (backend, route, caller,
workspace, target) with the answer it expected and the one it got.
"""

from __future__ import annotations

import io
import itertools
import json
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select, text, update
from tests.integration.conftest import API_TIMEOUT, PROCESSED, PROCESSED_WAIT_S, bearer
from tests.workspaces import catalog_url

from autorag.auth import service
from autorag.config import Settings, WebhookSettings
from autorag.context import AppContext
from autorag.mcp_tools import store as mcp_store
from autorag.mcp_tools.models import ToolInfo
from autorag.ocr import store as ocr_store
from autorag.p2p.approvals import Approvals, PendingSource
from autorag.p2p.registry import PeerRegistry
from autorag.store.catalog.db import bind_data_dir, create_catalog_engine
from autorag.store.catalog.models import JobRow, OcrJobRow
from autorag.store.catalog.repository import Catalog
from autorag.synth.store import SynthRunRow
from autorag.webhooks.service import WebhookService

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

A, B = "default", "other"
OTHER = {A: B, B: A}
PASSWORD = "a long enough password"
SHARED_WORD = "quetzal"  # in every document of both workspaces: a leak would show up
JOB_WAIT_S = 120.0
POLL_S = 0.02  # between two looks at a document, job or run still being worked on

# -- who may do what, from the issue ----------------------------------------------------
PUBLIC = "public"  # anyone, credentials or not
AUTHENTICATED = "authenticated"  # any valid credentials
ARCHIVE_READ, ARCHIVE_WRITE = "archive:read", "archive:write"

_MEMBER = {
    "documents:read",
    "documents:write",
    "search:read",
    "chat:use",
    "keys:write",
    "archive:read",
    "push:use",
}
_MANAGER = _MEMBER | {"workspaces:write", "policy:write", "archive:write"}
_ADMIN = _MANAGER | {
    "workspaces:admin",
    "users:admin",
    "keys:admin",
    "dlp:admin",
    "dlp:reveal",
    "p2p:admin",
    "backup:admin",
    "backup:restore",
    "push:admin",
    "webhooks:admin",
    "events:read",
    "mcp:admin",
    "widgets:admin",
}
ROLE_PERMISSIONS: Mapping[str, frozenset[str]] = {
    "member": frozenset(_MEMBER),
    "manager": frozenset(_MANAGER),
    "admin": frozenset(_ADMIN),
}
# Credentials are managed with a password login: an API key mints, lists and revokes
# no credentials, so a leaked key cannot outlive its own revocation.
LOGIN_ONLY = frozenset(
    {
        "users:admin",
        "keys:admin",
        "keys:write",
        "dlp:reveal",
        "policy:write",
        "p2p:admin",
        "backup:restore",
        "webhooks:admin",  # protected: no key here has the admin:protection scope
        "mcp:admin",  # protected too
        "widgets:admin",  # protected: a widget publishes a workspace to other sites
    }
)


@dataclass(frozen=True)
class Who:
    name: str
    role: str | None  # None: anonymous
    via: str | None  # "token" | "api_key"
    scope: frozenset[str] | None  # the workspaces it may act in; None: every one
    username: str | None = None

    def sees(self, workspace: str) -> bool:
        return self.scope is None or workspace in self.scope

    def holds(self, permission: str) -> bool:
        if self.role is None or permission not in ROLE_PERMISSIONS[self.role]:
            return False
        return not (self.via == "api_key" and permission in LOGIN_ONLY)


WHO = (
    Who("admin", "admin", "token", None, "root"),
    Who("manager", "manager", "token", frozenset({A}), "mgr"),
    Who("member", "member", "token", frozenset({A}), "mem"),
    Who("member_key_a", "member", "api_key", frozenset({A}), "mem"),
    Who("admin_key_b", "admin", "api_key", frozenset({B}), "root"),
    Who("anonymous", None, None, frozenset()),
)


@dataclass
class ChatState:
    """Chats and what hangs on them, made through the API as the cells need them."""

    mine: dict[tuple[str, str], int] = field(default_factory=dict)  # (who, workspace): chat
    owned: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # (user, ws): chats
    files: dict[int, set[int]] = field(default_factory=dict)  # chat: its attachments
    kept_file: dict[str, int] = field(default_factory=dict)  # the admin's chat's attachment

    def forget(self, workspace: str) -> None:
        """The workspace was deleted: its chats went with it."""
        gone = {c for (_, w), c in self.mine.items() if w == workspace}
        gone |= {c for (_, w), chats in self.owned.items() if w == workspace for c in chats}
        self.mine = {k: c for k, c in self.mine.items() if k[1] != workspace}
        self.owned = {k: c for k, c in self.owned.items() if k[1] != workspace}
        self.files = {c: f for c, f in self.files.items() if c not in gone}
        self.kept_file.pop(workspace, None)


# -- the world the matrix runs in ---------------------------------------------------------
@dataclass
class World:
    api: ApiServer
    # Every request of the module goes through one client, over a kept-alive connection
    # (a new connection per request was a fifth of the time of each).
    client: httpx.Client
    backend: str  # "sqlite" or "postgresql": the catalog the server runs on
    engine: Engine  # the server's catalog, for objects no route makes and checks
    credentials: dict[str, str | None]
    spare_key: str  # an admin's key that no cell may revoke
    spare_prefix: str
    docs: dict[str, int] = field(default_factory=dict)  # each workspace's fixture document
    jobs: dict[str, int] = field(default_factory=dict)  # the job that processed it
    ids: dict[str, set[int]] = field(default_factory=dict)  # every document it holds
    dlp: dict[str, Any] = field(default_factory=dict)  # DLP objects the cells act on
    requests: set[str] = field(default_factory=set)  # every P2P request filed here
    kept_request: str = ""  # the P2P request refused cells aim at
    chats: ChatState = field(default_factory=ChatState)  # chats the cells act on
    # Each workspace's OCR job waiting for review that refused cells aim at: the fixture
    # document it reads, and the job.
    kept_ocr: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Each workspace's fixture document when its kept archive was made (made again with
    # the workspace).
    kept_archive: dict[str, int] = field(default_factory=dict)
    # Each workspace's synthesis run waiting for review that refused cells aim at: the
    # fixture document it reads, and the run (made again with the workspace).
    kept_run: dict[str, tuple[int, int]] = field(default_factory=dict)
    kept_backup: int = 0  # a succeeded backup run the backup cells read
    kept_job: str = ""  # the backup job refused cells aim at
    _counter: Iterator[int] = field(default_factory=itertools.count)

    @property
    def admin(self) -> str:
        token = self.credentials["admin"]
        assert token is not None
        return token

    def call(
        self, method: str, path: str, credential: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One request, as ``ApiServer.call`` makes it, on the world's connection."""
        return self.client.request(
            method, self.api.url + path, headers=bearer(credential), **kwargs
        )

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter)}"

    def login(self, username: str) -> str:
        body = {"username": username, "password": PASSWORD}
        response = self.call("POST", "/api/auth/login", json=body)
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def upload(self, workspace: str) -> int:
        """A new processed document in the workspace, uploaded by the admin."""
        text = f"Field notes {self.fresh('n')}: the {SHARED_WORD} nests in {workspace}.\n"
        response = self.call(
            "POST",
            f"/api/workspaces/{workspace}/documents",
            self.admin,
            files={"file": ("notes.txt", text.encode())},
        )
        assert response.status_code == 202, response.text
        document_id: int = response.json()["id"]
        self.ids.setdefault(workspace, set()).add(document_id)
        self.wait_ready(workspace, document_id)
        return document_id

    def wait_ready(self, workspace: str, document_id: int) -> None:
        document = self.wait_processed(workspace, document_id)
        assert document["status"] == "ready", document

    def wait_processed(self, workspace: str, document_id: int) -> dict[str, Any]:
        """The document once processed, as ``ApiServer.wait_processed`` polls for it."""
        deadline = time.monotonic() + PROCESSED_WAIT_S
        path = f"/api/workspaces/{workspace}/documents/{document_id}"
        while True:
            response = self.call("GET", path, self.admin)
            assert response.status_code == 200, response.text
            document: dict[str, Any] = response.json()
            if document["status"] in PROCESSED or time.monotonic() > deadline:
                return document
            time.sleep(POLL_S)

    def seed(self, workspace: str) -> None:
        """Give the workspace its fixture document, and remember its processing job."""
        self.docs[workspace] = self.upload(workspace)
        with self.engine.connect() as conn:
            job_id = conn.execute(
                select(JobRow.id).where(JobRow.document_id == self.docs[workspace])
            ).scalar_one()
        self.jobs[workspace] = job_id

    def wait_job(self, workspace: str, job_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + JOB_WAIT_S
        while True:
            response = self.call("GET", f"/api/workspaces/{workspace}/jobs/{job_id}", self.admin)
            assert response.status_code == 200, response.text
            job: dict[str, Any] = response.json()
            if job["status"] in ("done", "failed") or time.monotonic() > deadline:
                return job
            time.sleep(POLL_S)

    def exists(self, path: str) -> bool:
        status = self.call("GET", path, self.admin).status_code
        assert status in (200, 404), status
        return status == 200

    def usernames(self) -> dict[str, dict[str, Any]]:
        users = self.call("GET", "/api/users", self.admin).json()
        return {u["username"]: u for u in users}

    @contextmanager
    def catalog(self) -> Iterator[Catalog]:
        """The server's workspace catalog, for objects no route makes."""
        yield Catalog(self.engine)


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi, request: pytest.FixtureRequest
) -> Iterator[World]:
    def prepare(context: AppContext) -> tuple[dict[str, str], service.ApiKeyInfo, str]:
        if context.settings.database_url:  # backups dump it with pg_dump of its version
            _pg_binaries(context, request.getfixturevalue("postgres_server"))
        catalog = context.catalog
        catalog.ensure_workspace(B)
        for username, role in [
            ("root", "admin"),
            ("mgr", "manager"),
            ("mem", "member"),
            ("victim", "member"),
        ]:
            service.create_user(catalog, username, PASSWORD, role)
        for username in ("mgr", "mem"):
            service.add_membership(catalog, username, A)
        keys = {
            "member_key_a": service.create_api_key(catalog, "mem", "scoped to A", [A])[1],
            "admin_key_b": service.create_api_key(catalog, "root", "scoped to B", [B])[1],
        }
        spare, spare_key = service.create_api_key(catalog, "root", "spare", [])
        return keys, spare, spare_key

    api = launch_api(
        tmp_path_factory.mktemp("authz") / "kb", prepare, login_attempts_per_minute=10_000
    )
    keys, spare, spare_key = api.prepared
    backend = catalog_url(api.workspace).split(":", 1)[0].split("+", 1)[0]
    client = httpx.Client(
        timeout=API_TIMEOUT,
        # Idle connections are dropped well before uvicorn's keep-alive (5 s) would close
        # them under a request; and no cookie is ever kept from one request to the next,
        # so each request carries exactly the credentials its cell gives it.
        limits=httpx.Limits(keepalive_expiry=1.0),
        cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
    )
    engine = create_catalog_engine(catalog_url(api.workspace))
    try:
        with client:
            world = World(api, client, backend, engine, {}, spare_key, spare.prefix)
            world.credentials = {
                "admin": world.login("root"),
                "manager": world.login("mgr"),
                "member": world.login("mem"),
                **keys,
                "anonymous": None,
            }
            for workspace in (A, B):
                world.seed(workspace)
            yield world
    finally:
        engine.dispose()


def _pg_binaries(context: AppContext, postgres: Any) -> None:
    """The workspace's backups use the test server's own pg_dump and psql (Debian's may
    be older than the server, which pg_dump refuses)."""
    config = context.workspace.read_config()
    # TODO(lead): a public PostgresTestServer.bin_dir in tests/postgres.py.
    config["backup"] = {"pg_bin_dir": str(postgres.bin_dir)}
    context.workspace.write_config(config)


# -- the routes -------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One request of the matrix."""

    world: World
    who: Who
    workspace: str | None
    target: str | None  # routes taking an id: "own" (this workspace's) or "guessed"
    allowed: bool  # the caller passes authentication and authorization

    @property
    def credential(self) -> str | None:
        return self.world.credentials[self.who.name]

    @property
    def target_workspace(self) -> str:
        assert self.workspace is not None
        return self.workspace if self.target == "own" else OTHER[self.workspace]

    @property
    def succeeds(self) -> bool:
        return self.allowed and self.target != "guessed"


Params = tuple[dict[str, Any], dict[str, Any]]  # path parameters, request arguments


def _nothing(cell: Cell) -> Params:
    return {}, {}


def _no_check(cell: Cell, response: httpx.Response) -> None:
    pass


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    access: str  # PUBLIC, AUTHENTICATED, or the permission the route needs
    ok: int  # the answer to a caller who may
    workspace: str | None = None  # where a workspace is named: "path" or "body"
    takes_id: bool = False  # a document or job id in the path: own and guessed ones
    # Acts on the set of workspaces itself, not inside one: a caller confined to some
    # workspaces (an API key with a scope) may not.
    unconfined: bool = False
    # Weakens protection or destroys data: an API key without the admin:protection
    # scope (every key here) may not.
    protected: bool = False
    ok_in: Mapping[str, int] = field(default_factory=dict)  # another answer there
    # Writing an archive's pages: a reader without the permission may be granted it by the
    # archive, so the archive is looked up first (a guessed one is missing, 404).
    grantable: bool = False
    send: Callable[[Cell], Params] = _nothing
    check: Callable[[Cell, httpx.Response], None] = _no_check  # after a success
    after: Callable[[Cell, httpx.Response], None] = _no_check  # after any answer

    def expected(self, who: Who, workspace: str | None, target: str | None) -> int:
        """The answer from the issue's rules (see the module docstring)."""
        if self.access == PUBLIC:
            return self.ok
        if who.role is None:
            return 401
        if self.access == AUTHENTICATED:
            return self.ok
        visible = workspace is None or who.sees(workspace)
        if self.workspace == "path" and not visible:
            return 404  # before anything else: a foreign workspace is a missing one
        held = who.holds(self.access) and not (self.unconfined and who.scope is not None)
        if not held and self.grantable and target == "guessed" and who.holds(ARCHIVE_READ):
            return 404
        if not held or (self.protected and who.via == "api_key"):
            return 403
        if not visible:
            return 404  # named in the body
        if target == "guessed":
            return 404
        return self.ok_in.get(workspace or "", self.ok)

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"


# Request builders and the checks of a successful (or refused) call, per route.
def _login(cell: Cell) -> Params:
    return {}, {"json": {"username": "mem", "password": PASSWORD}}


def _login_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["token_type"] == "bearer"


def _late_setup(cell: Cell) -> Params:
    body = {"token": "not-the-setup-token", "username": "late", "password": PASSWORD}
    return {}, {"json": body}


def _me_check(cell: Cell, response: httpx.Response) -> None:
    me = response.json()
    who = cell.who
    scope = None if who.scope is None else sorted(who.scope)
    assert (me["username"], me["role"], me["via"], me["workspaces"]) == (
        who.username,
        who.role,
        who.via,
        scope,
    )


def _users_check(cell: Cell, response: httpx.Response) -> None:
    assert {"root", "mgr", "mem"} <= {u["username"] for u in response.json()}


def _new_user(cell: Cell) -> Params:
    return {}, {"json": {"username": cell.world.fresh("fresh"), "password": PASSWORD}}


def _new_user_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["role"] == "member"


def _victim(cell: Cell) -> Params:
    return {"username": "victim"}, {}


def _patch_victim(cell: Cell) -> Params:
    return {"username": "victim"}, {"json": {"role": "member"}}


def _doomed_user(cell: Cell) -> Params:
    """A fresh user for the one who may delete it; the shared victim for the others."""
    if not cell.succeeds:
        return _victim(cell)
    username = cell.world.fresh("doomed")
    body = {"username": username, "password": PASSWORD}
    assert cell.world.call("POST", "/api/users", cell.world.admin, json=body).status_code == 201
    return {"username": username}, {}


def _doomed_user_check(cell: Cell, response: httpx.Response) -> None:
    users = cell.world.usernames()
    assert "victim" in users
    if cell.succeeds:
        assert response.request.url.path.rsplit("/", 1)[1] not in users


def _membership_check(granted: bool) -> Callable[[Cell, httpx.Response], None]:
    def check(cell: Cell, response: httpx.Response) -> None:
        workspaces = cell.world.usernames()["victim"]["workspaces"]
        assert (cell.workspace in workspaces) is granted

    return check


def _logged_out_check(cell: Cell, response: httpx.Response) -> None:
    """The caller's token ended with the logout: refused now, and a new login for the
    cells after this one."""
    credential = cell.credential
    if response.status_code != 204 or credential is None or cell.who.username is None:
        return
    assert cell.world.call("GET", "/api/auth/me", credential).status_code == 401
    cell.world.credentials[cell.who.name] = cell.world.login(cell.who.username)


def _keys_check(cell: Cell, response: httpx.Response) -> None:
    owners = {k["username"] for k in response.json()}
    if cell.who.role != "admin":
        assert owners <= {cell.who.username}
    else:
        assert {"root", "mem"} <= owners


def _new_key(cell: Cell) -> Params:
    return {}, {"json": {"name": "matrix", "workspaces": [cell.workspace]}}


def _new_key_check(cell: Cell, response: httpx.Response) -> None:
    key = response.json()
    assert (key["username"], key["workspaces"]) == (cell.who.username, [cell.workspace])


def _doomed_key(cell: Cell) -> Params:
    """The caller's own fresh key for one who may revoke it; the spare key otherwise."""
    if not cell.succeeds:
        return {"prefix": cell.world.spare_prefix}, {}
    response = cell.world.call("POST", "/api/keys", cell.credential, json={"name": "doomed"})
    assert response.status_code == 201, response.text
    return {"prefix": response.json()["prefix"]}, {}


def _doomed_key_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.world.call("GET", "/api/auth/me", cell.world.spare_key).status_code == 200
    if cell.succeeds:
        prefix = response.request.url.path.rsplit("/", 1)[1]
        mine = {k["prefix"]: k for k in cell.world.call("GET", "/api/keys", cell.credential).json()}
        assert mine[prefix]["revokedAt"] is not None


def _workspaces_check(cell: Cell, response: httpx.Response) -> None:
    names = {w["name"] for w in response.json()["workspaces"]}
    if cell.who.scope is None:
        assert {A, B} <= names
    else:
        assert names == cell.who.scope


def _new_workspace(cell: Cell) -> Params:
    return {}, {"json": {"name": cell.world.fresh("made-")}}


def _new_workspace_check(cell: Cell, response: httpx.Response) -> None:
    name = json.loads(response.request.content)["name"]
    assert cell.world.exists(f"/api/workspaces/{name}") is cell.succeeds


def _workspace_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["name"] == cell.workspace


def _same_name(cell: Cell) -> Params:
    """Renaming a workspace to its own name: every check runs, nothing changes."""
    return {}, {"json": {"name": cell.workspace}}


def _deleted_workspace_check(cell: Cell, response: httpx.Response) -> None:
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    gone = response.status_code == 204
    assert world.exists(f"/api/workspaces/{workspace}") is not gone
    assert world.exists(f"/api/workspaces/{workspace}/documents/{world.docs[workspace]}") is not (
        gone
    )
    if gone:  # put it back, with a new document, for the cells that follow
        response = world.call("POST", "/api/workspaces", world.admin, json={"name": workspace})
        assert response.status_code == 201, response.text
        world.ids[workspace] = set()
        world.chats.forget(workspace)
        world.seed(workspace)


def _default_k(cell: Cell) -> Params:
    return {}, {"json": {"defaultK": 10}}


def _settings_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["defaultK"] == 10


def _new_document(cell: Cell) -> Params:
    text = f"Matrix upload {cell.world.fresh('u')} about the {SHARED_WORD}.\n"
    return {}, {"files": {"file": ("upload.txt", text.encode())}}


def _new_document_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    document_id = response.json()["id"]
    cell.world.ids[cell.workspace].add(document_id)
    cell.world.wait_ready(cell.workspace, document_id)


def _listing_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    ids = {d["id"] for d in response.json()["items"]}
    assert cell.world.docs[cell.workspace] in ids
    assert ids <= cell.world.ids[cell.workspace]


def _document(cell: Cell) -> Params:
    return {"document_id": cell.world.docs[cell.target_workspace]}, {}


def _document_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["id"] == cell.world.docs[cell.target_workspace]


def _text_check(cell: Cell, response: httpx.Response) -> None:
    page = response.json()
    assert page["documentId"] == cell.world.docs[cell.target_workspace]
    assert page["pageCount"] == 1 and SHARED_WORD in page["text"]


def _file_check(cell: Cell, response: httpx.Response) -> None:
    assert response.headers["content-disposition"].startswith('attachment; filename="notes.txt"')
    assert SHARED_WORD.encode() in response.content


def _doomed_document(cell: Cell) -> Params:
    """A fresh document for one who may delete it; the fixture documents otherwise."""
    if not cell.succeeds:
        return _document(cell)
    assert cell.workspace is not None
    return {"document_id": cell.world.upload(cell.workspace)}, {}


def _doomed_document_check(cell: Cell, response: httpx.Response) -> None:
    world = cell.world
    for workspace, document_id in world.docs.items():  # the fixture documents stay
        assert world.exists(f"/api/workspaces/{workspace}/documents/{document_id}")
    if cell.succeeds:
        assert cell.workspace is not None
        document_id = int(response.request.url.path.rsplit("/", 1)[1])
        world.ids[cell.workspace].discard(document_id)
        assert not world.exists(f"/api/workspaces/{cell.workspace}/documents/{document_id}")


def _reembed_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    job = cell.world.wait_job(cell.workspace, response.json()["id"])
    assert job["status"] == "done", job


def _job(cell: Cell) -> Params:
    return {"job_id": cell.world.jobs[cell.target_workspace]}, {}


def _job_check(cell: Cell, response: httpx.Response) -> None:
    job = response.json()
    assert job["documentId"] == cell.world.docs[cell.target_workspace]


def _search(cell: Cell) -> Params:
    return {}, {"json": {"query": SHARED_WORD, "k": 50}}


def _search_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    ids = {h["documentId"] for h in response.json()["hits"]}
    assert cell.world.docs[cell.workspace] in ids
    assert ids <= cell.world.ids[cell.workspace]


# -- OCR: a workspace's OCR jobs, their review, and the vision prompt's instructions ----
def _review_job(world: World, workspace: str) -> int:
    """A new OCR job over page 1 of the workspace's fixture document, waiting for review.

    Made in one transaction with its queue job: the worker that claims that finds the
    OCR job already waiting for review and leaves it be, so no cell races the worker.
    """
    with world.catalog() as catalog:
        workspace_id = catalog.get_workspace(workspace).id
        with catalog.engine.begin() as conn:
            job_id = ocr_store.create_job(
                conn, workspace_id, world.docs[workspace], [1], mode="auto", max_pages=1
            )
            conn.execute(
                update(OcrJobRow)
                .where(OcrJobRow.id == job_id)
                .values(status="review", reason="held for review by the matrix")
            )
    return job_id


def _kept_review(world: World, workspace: str) -> int:
    """The workspace's review job refused cells aim at (made again with the workspace)."""
    document_id = world.docs[workspace]
    if world.kept_ocr.get(workspace, (None, 0))[0] != document_id:
        world.kept_ocr[workspace] = (document_id, _review_job(world, workspace))
    return world.kept_ocr[workspace][1]


def _ocr_status(world: World, workspace: str, job_id: int) -> str:
    response = world.call("GET", f"/api/workspaces/{workspace}/ocr/jobs/{job_id}", world.admin)
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


def _ocr_jobs(cell: Cell) -> Params:
    for workspace in (A, B):
        _kept_review(cell.world, workspace)
    return {}, {"params": {"limit": 500}}


def _ocr_jobs_check(cell: Cell, response: httpx.Response) -> None:
    """This workspace's OCR jobs, and none of the other's."""
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    listing = response.json()
    ids = {j["id"] for j in listing["items"]}
    assert listing["total"] == len(ids)
    assert _kept_review(world, workspace) in ids
    assert _kept_review(world, OTHER[workspace]) not in ids
    assert {j["documentId"] for j in listing["items"]} <= world.ids[workspace]


def _ocr_job(cell: Cell) -> Params:
    """``own``: this workspace's review job; ``guessed``: the other workspace's."""
    for workspace in (A, B):
        _kept_review(cell.world, workspace)
    return {"job_id": _kept_review(cell.world, cell.target_workspace)}, {}


def _ocr_job_check(cell: Cell, response: httpx.Response) -> None:
    job = response.json()
    assert job["id"] == _kept_review(cell.world, cell.target_workspace)
    assert (job["documentId"], job["status"]) == (cell.world.docs[cell.target_workspace], "review")
    assert [(p["page"], p["status"]) for p in job["pages"]] == [(1, "queued")]


def _review_target(cell: Cell) -> Params:
    """A fresh review job for one who may review it; the kept ones otherwise (``guessed``:
    the other workspace's)."""
    world = cell.world
    for workspace in (A, B):  # made before: the fresh job is never a kept one
        _kept_review(world, workspace)
    if not cell.succeeds:
        return _ocr_job(cell)
    assert cell.workspace is not None
    return {"job_id": _review_job(world, cell.workspace)}, {}


def _reviewed_check(status: str) -> Callable[[Cell, httpx.Response], None]:
    """The kept review jobs still wait; a review that may succeed left its job ``status``."""

    def check(cell: Cell, response: httpx.Response) -> None:
        world = cell.world
        for workspace in (A, B):
            assert _ocr_status(world, workspace, _kept_review(world, workspace)) == "review"
        if cell.succeeds:
            assert cell.workspace is not None
            job = response.json()
            assert (job["status"], job["reviewedBy"]) == (status, cell.who.username)
            assert _ocr_status(world, cell.workspace, job["id"]) == status
            document = world.wait_processed(cell.workspace, world.docs[cell.workspace])
            assert document["status"] == "ready", document  # re-indexed, or left as it was

    return check


def _ocr_instructions_check(cell: Cell, response: httpx.Response) -> None:
    assert isinstance(response.json()["instructions"], str)


def _new_ocr_instructions(cell: Cell) -> Params:
    text = f"Transcribe tables row by row ({cell.world.fresh('ocr-')})."
    return {}, {"json": {"instructions": text}}


def _new_ocr_instructions_check(cell: Cell, response: httpx.Response) -> None:
    """A refused change leaves the instructions; an allowed one sets them, here only."""
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    sent = json.loads(response.request.content)["instructions"]

    def current(name: str) -> str:
        got = world.call("GET", f"/api/workspaces/{name}/ocr/instructions", world.admin)
        assert got.status_code == 200, got.text
        text: str = got.json()["instructions"]
        return text

    assert (current(workspace) == sent) is cell.succeeds
    assert current(OTHER[workspace]) != sent
    if cell.succeeds:
        assert response.json() == {"instructions": sent}


# -- DLP: installation-wide, so managing it needs an unconfined admin ------------------
def _shared_pattern(world: World) -> int:
    """A custom pattern refused cells aim at, which must outlive them."""
    if "pattern" not in world.dlp:
        body = {"name": "matrix_shared", "regex": "MTX-[0-9]{4}"}
        response = world.call("POST", "/api/dlp/patterns", world.admin, json=body)
        assert response.status_code == 201, response.text
        world.dlp["pattern"] = response.json()["id"]
    return int(world.dlp["pattern"])


def _pattern_ids(world: World) -> set[int]:
    response = world.call("GET", "/api/dlp/patterns", world.admin)
    assert response.status_code == 200, response.text
    return {p["id"] for p in response.json()}


def _patterns_check(cell: Cell, response: httpx.Response) -> None:
    assert {"email", "iban", "eu_phone"} <= {p["name"] for p in response.json()}


def _new_pattern(cell: Cell) -> Params:
    return {}, {"json": {"name": cell.world.fresh("matrix_p"), "regex": "MTX-[0-9]{6}"}}


def _new_pattern_check(cell: Cell, response: httpx.Response) -> None:
    created = json.loads(response.request.content)["name"]
    response = cell.world.call("GET", "/api/dlp/patterns", cell.world.admin)
    assert (created in {p["name"] for p in response.json()}) is cell.succeeds


def _pattern_sample(cell: Cell) -> Params:
    return {}, {"json": {"text": "MTX-1234 by a.b@example.com", "regex": "MTX-[0-9]+"}}


def _pattern_sample_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["redactedText"] == "[REDACTED] by a.b@example.com"


def _patch_pattern(cell: Cell) -> Params:
    return {"pattern_id": _shared_pattern(cell.world)}, {"json": {"description": "patched"}}


def _doomed_pattern(cell: Cell) -> Params:
    """A fresh custom pattern for one who may delete it; the shared one otherwise."""
    if not cell.succeeds:
        return {"pattern_id": _shared_pattern(cell.world)}, {}
    body = {"name": cell.world.fresh("doomed_p"), "regex": "DMD-[0-9]+"}
    response = cell.world.call("POST", "/api/dlp/patterns", cell.world.admin, json=body)
    assert response.status_code == 201, response.text
    return {"pattern_id": response.json()["id"]}, {}


def _doomed_pattern_check(cell: Cell, response: httpx.Response) -> None:
    ids = _pattern_ids(cell.world)
    assert _shared_pattern(cell.world) in ids
    if cell.succeeds:
        assert int(response.request.url.path.rsplit("/", 1)[1]) not in ids


def _dlp_scan(cell: Cell) -> Params:
    return {}, {"json": {"text": "mail a.b@example.com"}}


def _dlp_scan_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["redactedText"] == "mail [REDACTED]"


def _revealable(cell: Cell) -> Params:
    """A redacted text recorded (once) straight in the catalog, as the chat would."""
    from autorag.dlp.service import DlpContext, DlpService

    world = cell.world
    if "original" not in world.dlp:
        with world.catalog() as catalog:
            world.dlp["original"] = DlpService(catalog).record_redaction(
                "mail a.b@example.com", "mail [REDACTED]", ["email"], DlpContext()
            )
    return {}, {"json": {"id": world.dlp["original"]}}


def _reveal_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["original"] == "mail a.b@example.com"


def _no_original(cell: Cell, response: httpx.Response) -> None:
    """A refused reveal shows nothing of the original."""
    assert "a.b@example.com" not in response.text or cell.succeeds


# -- source policy: rules per workspace --------------------------------------------------
def _policy_globs(world: World, workspace: str) -> set[str]:
    response = world.call("GET", f"/api/workspaces/{workspace}/policy", world.admin)
    assert response.status_code == 200, response.text
    return {r["glob"] for r in response.json()["rules"]}


def _policy_list_check(cell: Cell, response: httpx.Response) -> None:
    """Only this workspace's rules: every matrix glob names the workspace it was made in."""
    for rule in response.json()["rules"]:
        if rule["glob"].startswith("/matrix/"):
            assert rule["glob"].split("/")[2] == cell.workspace, rule


def _new_rule(cell: Cell) -> Params:
    glob = f"/matrix/{cell.workspace}/{cell.world.fresh('r')}/**"
    return {}, {"json": {"glob": glob, "level": "share"}}


def _new_rule_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    created = json.loads(response.request.content)["glob"]
    assert (created in _policy_globs(cell.world, cell.workspace)) is cell.succeeds


def _doomed_rule(cell: Cell) -> Params:
    """A fresh rule for one who may delete it; the workspace's shared rule otherwise."""
    world, workspace = cell.world, cell.workspace
    name = world.fresh("doomed") if cell.succeeds else "shared"
    glob = f"/matrix/{workspace}/{name}/**"
    body = {"glob": glob, "level": "private"}
    response = world.call("PUT", f"/api/workspaces/{workspace}/policy", world.admin, json=body)
    assert response.status_code == 200, response.text
    return {}, {"params": {"glob": glob}}


def _doomed_rule_check(cell: Cell, response: httpx.Response) -> None:
    """A refused delete leaves the shared rule; an allowed one removes the fresh rule."""
    assert cell.workspace is not None
    glob = response.request.url.params["glob"]
    assert (glob in _policy_globs(cell.world, cell.workspace)) is not cell.succeeds


def _explain(cell: Cell) -> Params:
    return {}, {"json": {"source": "/matrix//explained.md"}}


def _explain_check(cell: Cell, response: httpx.Response) -> None:
    explanation = response.json()
    assert explanation["canonical"] == "/matrix/explained.md"
    assert (explanation["level"], explanation["decidedBy"]) == ("private", "default")


# -- P2P: the installation's peers and approvals, for an unconfined admin -----------
PEER = "matrix-peer"


def _approvals(world: World) -> Approvals:
    return Approvals(world.api.workspace.p2p_dir)


def _file_request(world: World) -> str:
    """A peer query waiting for the owner's approval, filed as the peer node files one."""
    source = PendingSource("/matrix/asked.md", "asked", f"The {SHARED_WORD} nests.", 0.5)
    request = _approvals(world).create(
        peer=PEER,
        contact_id=7,
        query_id=world.fresh("q"),
        query=f"Where does the {SHARED_WORD} nest?",
        sources=[source],
    )
    world.requests.add(request.id)
    return request.id


def _kept_request(world: World) -> str:
    """The request refused cells aim at: it must stay pending."""
    if not world.kept_request:
        world.kept_request = _file_request(world)
    return world.kept_request


def _request_states(world: World) -> dict[str, str]:
    response = world.call("GET", "/api/p2p/requests", world.admin)
    assert response.status_code == 200, response.text
    return {r["id"]: r["status"] for r in response.json()}


def _status_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json() == {"running": False}


def _trusted_peer(cell: Cell) -> Params:
    """The registry trusts one peer (added once)."""
    registry = PeerRegistry(cell.world.api.workspace.simplex_peers_file)
    if registry.get(PEER) is None:
        registry.add(PEER, 7, "trusted by the matrix")
    return {}, {}


def _peers_check(cell: Cell, response: httpx.Response) -> None:
    (peer,) = response.json()
    assert (peer["name"], peer["contactId"], peer["note"]) == (PEER, 7, "trusted by the matrix")


def _pending_requests(cell: Cell) -> Params:
    _kept_request(cell.world)
    return {}, {}


def _requests_check(cell: Cell, response: httpx.Response) -> None:
    listed = {r["id"]: r for r in response.json()}
    assert listed.keys() <= cell.world.requests
    kept = listed[_kept_request(cell.world)]
    assert (kept["peer"], kept["status"]) == (PEER, "pending")
    assert [s["source"] for s in kept["sources"]] == ["/matrix/asked.md"]


def _decision(cell: Cell) -> Params:
    """``own``: a fresh pending request approved by one who may, the kept one otherwise;
    ``guessed``: the id of a request already answered and forgotten, denied."""
    world = cell.world
    kept = _kept_request(world)
    if cell.target == "guessed":
        request_id = _file_request(world)
        _approvals(world).close(request_id)
        return {"requestId": request_id, "decision": "deny"}, {}
    request_id = _file_request(world) if cell.succeeds else kept
    return {"requestId": request_id, "decision": "approve"}, {}


def _decision_check(cell: Cell, response: httpx.Response) -> None:
    states = _request_states(cell.world)
    assert states[_kept_request(cell.world)] == "pending"
    request_id = response.request.url.path.split("/")[-2]
    if cell.target == "guessed":
        assert request_id not in states
    elif cell.succeeds:
        assert (response.json()["id"], response.json()["status"]) == (request_id, "approved")
        assert states[request_id] == "approved"


def _ask(cell: Cell) -> Params:
    return {}, {"json": {"peer": PEER, "query": f"Where does the {SHARED_WORD} nest?"}}


def _ask_check(cell: Cell, response: httpx.Response) -> None:
    if cell.succeeds:  # one who may ask is told P2P is not running
        assert response.json()["code"] == "unavailable"


# -- chat: chats are private to their user, inside one workspace ----------------------
QUESTION = "What nests here?"


def _answer(world: World, who: Who, workspace: str) -> int:
    """A new chat of the caller in the workspace: one answer of the extractive model."""
    response = world.call(
        "POST",
        f"/api/workspaces/{workspace}/chat",
        world.credentials[who.name],
        json={"message": QUESTION},
    )
    assert response.status_code == 200, response.text
    chat_id: int = response.json()["chatId"]
    _owns(world, who, workspace, chat_id)
    return chat_id


def _owns(world: World, who: Who, workspace: str, chat_id: int) -> None:
    assert who.username is not None
    world.chats.owned.setdefault((who.username, workspace), set()).add(chat_id)


def _chat_of(world: World, who: Who, workspace: str) -> int:
    """The chat this caller made in the workspace (made once, on first need)."""
    key = (who.name, workspace)
    if key not in world.chats.mine:
        world.chats.mine[key] = _answer(world, who, workspace)
    return world.chats.mine[key]


def _kept_chat(world: World, workspace: str) -> int:
    """The admin's chat in the workspace: what refused cells aim at; it must stay."""
    return _chat_of(world, next(w for w in WHO if w.name == "admin"), workspace)


def _target_chat(cell: Cell) -> int:
    """``own``: the caller's chat here, or the admin's when the caller may not chat here;
    ``guessed``: another user's chat here, or, for the admin, its chat of the other one."""
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    if cell.succeeds:
        return _chat_of(world, cell.who, workspace)
    return _kept_chat(world, _kept_chat_workspace(cell))


def _kept_chat_workspace(cell: Cell) -> str:
    assert cell.workspace is not None
    if cell.target == "guessed" and cell.who.username == "root":
        return OTHER[cell.workspace]
    return cell.workspace


def _chat_path(cell: Cell) -> Params:
    return {"chatId": _target_chat(cell)}, {}


def _question(cell: Cell) -> Params:
    return {}, {"json": {"message": QUESTION}}


def _sources_check(cell: Cell, sources: list[dict[str, Any]]) -> None:
    """Cited from this workspace's documents, and nothing from the other's."""
    assert cell.workspace is not None
    assert sources
    assert {s["documentId"] for s in sources} <= cell.world.ids[cell.workspace]


def _answer_check(cell: Cell, response: httpx.Response) -> None:
    answer = response.json()
    assert answer["answer"].strip()
    assert answer["providerUsed"] == "extractive"
    _sources_check(cell, answer["sources"])
    assert cell.workspace is not None
    _owns(cell.world, cell.who, cell.workspace, answer["chatId"])


def _events(response: httpx.Response) -> list[tuple[str, Any]]:
    events = []
    for block in response.text.split("\n\n"):
        lines = dict(line.partition(": ")[::2] for line in block.splitlines())
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def _stream_check(cell: Cell, response: httpx.Response) -> None:
    assert response.headers["content-type"].startswith("text/event-stream")
    events = dict(_events(response))
    assert "error" not in events, events["error"]
    assert events["done"]["providerUsed"] == "extractive"
    _sources_check(cell, events["citations"]["sources"])
    assert cell.workspace is not None
    _owns(cell.world, cell.who, cell.workspace, events["done"]["chatId"])


def _my_chats(cell: Cell) -> Params:
    if cell.succeeds:  # the caller has a chat here
        assert cell.workspace is not None
        _chat_of(cell.world, cell.who, cell.workspace)
    return {}, {}


def _chats_check(cell: Cell, response: httpx.Response) -> None:
    """The caller's chats here, and no one else's."""
    assert cell.workspace is not None and cell.who.username is not None
    ids = {c["id"] for c in response.json()}
    assert _chat_of(cell.world, cell.who, cell.workspace) in ids
    assert ids <= cell.world.chats.owned[(cell.who.username, cell.workspace)]


def _chat_check(cell: Cell, response: httpx.Response) -> None:
    chat = response.json()
    assert chat["id"] == int(response.request.url.path.rsplit("/", 1)[1])
    roles = [m["role"] for m in chat["messageList"]]
    assert roles[:2] == ["user", "assistant"]


def _chat_model(cell: Cell) -> Params:
    return {"chatId": _target_chat(cell)}, {"json": {"model": "extractive"}}


def _chat_model_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["model"] == "extractive"


def _chat_title(cell: Cell) -> Params:
    return {"chatId": _target_chat(cell)}, {"json": {"title": "x"}}


def _chat_title_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["title"] == "x"


def _chat_exists(world: World, workspace: str, chat_id: int) -> bool:
    return world.exists(f"/api/workspaces/{workspace}/chats/{chat_id}")


def _doomed_chat(cell: Cell) -> Params:
    """A fresh chat of the caller for one who may delete it; the targets otherwise."""
    for workspace in (A, B):  # made before: a deleted chat's id may be given again
        _kept_chat(cell.world, workspace)
    if not cell.succeeds:
        return _chat_path(cell)
    assert cell.workspace is not None
    return {"chatId": _answer(cell.world, cell.who, cell.workspace)}, {}


def _doomed_chat_check(cell: Cell, response: httpx.Response) -> None:
    world = cell.world
    for workspace in (A, B):  # the admin's chats stay
        assert _chat_exists(world, workspace, _kept_chat(world, workspace))
    if cell.succeeds:
        assert cell.workspace is not None
        chat_id = int(response.request.url.path.rsplit("/", 1)[1])
        world.chats.files.pop(chat_id, None)
        owned = world.chats.owned[(cell.who.username or "", cell.workspace)]
        owned.discard(chat_id)
        chats = world.call("GET", f"/api/workspaces/{cell.workspace}/chats", cell.credential)
        assert chat_id not in {c["id"] for c in chats.json()}


def _attachment_file(world: World) -> dict[str, Any]:
    text = f"Attached notes {world.fresh('a')}: the {SHARED_WORD} sleeps in a cloud forest.\n"
    return {"file": ("attached.txt", text.encode())}


def _attach(world: World, credential: str | None, workspace: str, chat_id: int) -> int:
    path = f"/api/workspaces/{workspace}/chats/{chat_id}/attachments"
    response = world.call("POST", path, credential, files=_attachment_file(world))
    assert response.status_code == 202, response.text
    attachment_id: int = response.json()["id"]
    world.chats.files.setdefault(chat_id, set()).add(attachment_id)
    return attachment_id


def _kept_attachment(world: World, workspace: str) -> tuple[int, int]:
    """The admin's chat in the workspace and a file attached to it, which must stay."""
    chat_id = _kept_chat(world, workspace)
    if workspace not in world.chats.kept_file:
        world.chats.kept_file[workspace] = _attach(world, world.admin, workspace, chat_id)
    return chat_id, world.chats.kept_file[workspace]


def _new_attachment(cell: Cell) -> Params:
    return {"chatId": _target_chat(cell)}, {"files": _attachment_file(cell.world)}


def _new_attachment_check(cell: Cell, response: httpx.Response) -> None:
    attachment = response.json()
    assert (attachment["name"], attachment["type"]) == ("attached.txt", "txt")
    assert (attachment["status"], attachment["chunks"]) == ("processing", 0)  # a job reads it
    chat_id = int(response.request.url.path.split("/")[-2])
    cell.world.chats.files.setdefault(chat_id, set()).add(attachment["id"])


def _attachments_check(cell: Cell, response: httpx.Response) -> None:
    chat_id = int(response.request.url.path.split("/")[-2])
    assert {a["id"] for a in response.json()} == cell.world.chats.files.get(chat_id, set())


def _doomed_attachment(cell: Cell) -> Params:
    """A file the caller attaches to its own chat for one who may delete it; the admin's
    chat's file otherwise (the one of the chat the cell targets)."""
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    for kept in (A, B):  # made before: a deleted file's id may be given again
        _kept_attachment(world, kept)
    if cell.succeeds:
        chat_id = _target_chat(cell)
        attachment_id = _attach(world, cell.credential, workspace, chat_id)
    else:
        chat_id, attachment_id = _kept_attachment(world, _kept_chat_workspace(cell))
    return {"chatId": chat_id, "attachmentId": attachment_id}, {}


def _attachment_check(cell: Cell, response: httpx.Response) -> None:
    attachment = response.json()
    *_, chat, _, wanted = response.request.url.path.split("/")
    assert attachment["id"] == int(wanted) and attachment["name"] == "attached.txt"
    assert attachment["id"] in cell.world.chats.files[int(chat)]


def _doomed_attachment_check(cell: Cell, response: httpx.Response) -> None:
    world = cell.world
    for workspace in (A, B):  # the admin's chats' files stay
        chat_id, attachment_id = _kept_attachment(world, workspace)
        path = f"/api/workspaces/{workspace}/chats/{chat_id}/attachments"
        listed = world.call("GET", path, world.admin)
        assert attachment_id in {a["id"] for a in listed.json()}
    if cell.succeeds:
        *_, chat, _, attachment = response.request.url.path.split("/")
        world.chats.files[int(chat)].discard(int(attachment))
        path = response.request.url.path.rsplit("/", 1)[0]
        listed = world.call("GET", path, cell.credential)
        assert int(attachment) not in {a["id"] for a in listed.json()}


def _usage_check(cell: Cell, response: httpx.Response) -> None:
    assert isinstance(response.json(), list)


# -- the agent: its configuration, skills and memory, per workspace --------------------
def _agent_check(cell: Cell, response: httpx.Response) -> None:
    config = response.json()
    assert config["citationRequired"] is True
    assert "rag_search" in config["enabledSkills"]


def _agent_patch(cell: Cell) -> Params:
    return {}, {"json": {"citationRequired": True}}  # already so: nothing changes


def _skills_check(cell: Cell, response: httpx.Response) -> None:
    skills = {s["name"]: s["enabled"] for s in response.json()}
    assert {"rag_search", "workspace_memory", "document_temp_process"} <= skills.keys()
    assert skills["rag_search"]


def _memory_keys(world: World, workspace: str) -> set[str]:
    response = world.call("GET", f"/api/workspaces/{workspace}/memory", world.admin)
    assert response.status_code == 200, response.text
    return {m["key"] for m in response.json()}


def _remember(world: World, workspace: str, key: str) -> None:
    path = f"/api/workspaces/{workspace}/memory/{key}"
    response = world.call("PUT", path, world.admin, json={"value": f"set in {workspace}"})
    assert response.status_code == 200, response.text


def _kept_memory(cell: Cell) -> Params:
    """Each workspace remembers a key of its own, named after it."""
    for workspace in (A, B):
        _remember(cell.world, workspace, f"kept-{workspace}")
    return {}, {}


def _memory_check(cell: Cell, response: httpx.Response) -> None:
    """This workspace's memory, and nothing of the other's."""
    keys = {m["key"] for m in response.json()}
    assert f"kept-{cell.workspace}" in keys
    assert f"kept-{OTHER[cell.workspace or '']}" not in keys


def _new_memory(cell: Cell) -> Params:
    body = {"value": "the quetzal prefers avocados"}
    return {"key": cell.world.fresh("put-")}, {"json": body}


def _new_memory_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    key = response.request.url.path.rsplit("/", 1)[1]
    assert (key in _memory_keys(cell.world, cell.workspace)) is cell.succeeds


def _doomed_memory(cell: Cell) -> Params:
    """``own``: a fresh key for one who may delete it, this workspace's kept key
    otherwise; ``guessed``: the other workspace's kept key, which this one has not."""
    world, workspace = cell.world, cell.workspace
    assert workspace is not None
    _kept_memory(cell)
    if cell.target == "guessed":
        return {"key": f"kept-{OTHER[workspace]}"}, {}
    if not cell.succeeds:
        return {"key": f"kept-{workspace}"}, {}
    key = world.fresh("doomed-")
    _remember(world, workspace, key)
    return {"key": key}, {}


def _doomed_memory_check(cell: Cell, response: httpx.Response) -> None:
    for workspace in (A, B):  # the kept keys stay
        assert f"kept-{workspace}" in _memory_keys(cell.world, workspace)
    if cell.succeeds:
        assert cell.workspace is not None
        key = response.request.url.path.rsplit("/", 1)[1]
        assert key not in _memory_keys(cell.world, cell.workspace)


# -- the user's own instructions, and models ---------------------------------------------
def _instructions(cell: Cell) -> Params:
    return {}, {"json": {"instructions": "Answer plainly."}}


def _instructions_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["instructions"] == "Answer plainly."


def _instructions_read_check(cell: Cell, response: httpx.Response) -> None:
    assert isinstance(response.json()["instructions"], str)


def _global_default(world: World) -> str | None:
    response = world.call("GET", "/api/models", world.admin)
    assert response.status_code == 200, response.text
    default: str | None = response.json()["defaults"]["globalDefault"]
    return default


def _models_check(cell: Cell, response: httpx.Response) -> None:
    models = response.json()
    assert "extractive" in {p["name"] for p in models["providers"]}
    assert "extractive" in {m["provider"] for m in models["models"]}


def _flip_default(cell: Cell) -> Params:
    """A change every cell makes: the default set when unset, unset when set."""
    model = "extractive" if _global_default(cell.world) is None else None
    return {}, {"json": {"model": model}}


def _flip_default_check(cell: Cell, response: httpx.Response) -> None:
    sent = json.loads(response.request.content)["model"]
    assert (_global_default(cell.world) == sent) is cell.succeeds


# -- model connections: the installation's, an admin's ------------------------------------
CONNECTIONS = "/api/models/connections"
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens, refused at once


def _connection_names(world: World) -> set[str]:
    response = world.call("GET", CONNECTIONS, world.admin)
    assert response.status_code == 200, response.text
    return {c["name"] for c in response.json()}


def _made_connection(world: World, name: str) -> str:
    if name not in _connection_names(world):
        body = {"name": name, "kind": "ollama", "baseUrl": NOWHERE, "apiKey": "sk-matrix"}
        response = world.call("POST", CONNECTIONS, world.admin, json=body)
        assert response.status_code == 201, response.text
    return name


def _connections_check(cell: Cell, response: httpx.Response) -> None:
    assert isinstance(response.json(), list)
    assert "sk-matrix" not in response.text


def _new_connection(cell: Cell) -> Params:
    body = {"name": cell.world.fresh("conn-"), "kind": "ollama", "baseUrl": NOWHERE}
    return {}, {"json": body}


def _new_connection_check(cell: Cell, response: httpx.Response) -> None:
    sent = json.loads(response.request.content)["name"]
    assert (sent in _connection_names(cell.world)) is cell.succeeds


def _probe(cell: Cell) -> Params:
    return {}, {"json": {"kind": "ollama", "baseUrl": NOWHERE}}


def _probe_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["problem"] == "refused"


def _doomed_connection(cell: Cell) -> Params:
    """A fresh connection for one who may change or remove it, the kept one otherwise."""
    world = cell.world
    _made_connection(world, "kept")
    name = world.fresh("doomed-") if cell.succeeds else "kept"
    return {"name": _made_connection(world, name)}, {}


def _disabled_connection(cell: Cell) -> Params:
    params, _ = _doomed_connection(cell)
    return params, {"json": {"enabled": False}}


def _doomed_connection_check(cell: Cell, response: httpx.Response) -> None:
    names = _connection_names(cell.world)
    assert "kept" in names
    if cell.succeeds and response.request.method == "DELETE":
        assert response.request.url.path.rsplit("/", 1)[1] not in names


def _kept_connection(cell: Cell) -> Params:
    return {"name": _made_connection(cell.world, "kept")}, {}


# -- the OpenAI-compatible API: a workspace is a model --------------------------------
def _v1_models_check(cell: Cell, response: httpx.Response) -> None:
    """One model per workspace the caller may chat in."""
    ids = {m["id"] for m in response.json()["data"]}
    if cell.who.scope is None:
        listed = cell.world.call("GET", "/api/workspaces", cell.world.admin).json()
        assert ids == {w["name"] for w in listed["workspaces"]}
    else:
        assert ids == cell.who.scope


def _completion(cell: Cell) -> Params:
    body = {"model": cell.workspace, "messages": [{"role": "user", "content": QUESTION}]}
    return {}, {"json": body}


def _model_named(cell: Cell) -> Params:
    return {"model": cell.workspace}, {}


def _v1_model_check(cell: Cell, response: httpx.Response) -> None:
    assert (response.json()["id"], response.json()["object"]) == (cell.workspace, "model")


def _embedding(cell: Cell) -> Params:
    return {}, {"json": {"model": "all-MiniLM-L6-v2", "input": [QUESTION]}}


def _embedding_check(cell: Cell, response: httpx.Response) -> None:
    (item,) = response.json()["data"]
    assert len(item["embedding"]) == 384


def _completion_check(cell: Cell, response: httpx.Response) -> None:
    completion = response.json()
    assert (completion["object"], completion["model"]) == ("chat.completion", cell.workspace)
    (choice,) = completion["choices"]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"].strip()
    assert choice["finish_reason"] == "stop"
    assert completion["usage"]["total_tokens"] >= 0
    _sources_check(cell, completion["citations"])


# -- archives: the workspace's wiki ----------------------------------------------------
KEPT_PAGE = "kept/page"
KEPT_TEMPLATE = "kept"
_KEPT_PAGES = (
    (KEPT_PAGE, "Kept page", f"The {SHARED_WORD} page. See [[Kept other]] and [[Not yet]]."),
    ("kept/other", "Kept other", "Back to [[Kept page]]."),
)


def _archive_name(workspace: str) -> str:
    return f"wiki-{workspace}"


def _archives_url(workspace: str) -> str:
    return f"/api/workspaces/{workspace}/archives"


def _kept_archive(world: World, workspace: str) -> str:
    """The workspace's archive, its pages and template, which refused cells aim at (made
    again with the workspace)."""
    name = _archive_name(workspace)
    if world.kept_archive.get(workspace) == world.docs[workspace]:
        return name
    created = world.call(
        "POST", _archives_url(workspace), world.admin, json={"name": name, "title": "Kept"}
    )
    assert created.status_code in (201, 409), created.text
    for path, title, body in _KEPT_PAGES:
        page = {"title": title, "body": body, "baseVersion": None}
        saved = world.call(
            "PUT", f"{_archives_url(workspace)}/{name}/pages/{path}", world.admin, json=page
        )
        assert saved.status_code in (201, 409), saved.text
    template = {"name": KEPT_TEMPLATE, "title": "Kept", "body": "# {{title}}\n"}
    made = world.call(
        "POST", f"/api/workspaces/{workspace}/archive-templates", world.admin, json=template
    )
    assert made.status_code in (201, 409), made.text
    world.kept_archive[workspace] = world.docs[workspace]
    return name


def _archive(cell: Cell) -> Params:
    """``own``: this workspace's archive; ``guessed``: the other workspace's."""
    for workspace in (A, B):
        _kept_archive(cell.world, workspace)
    return {"name": _archive_name(cell.target_workspace)}, {}


def _kept_page(cell: Cell) -> Params:
    params, _ = _archive(cell)
    return {**params, "path": KEPT_PAGE}, {}


def _fresh_page(world: World, workspace: str) -> str:
    """A new page in the workspace's archive, saved by the admin."""
    path = f"made/{world.fresh('p')}"
    url = f"{_archives_url(workspace)}/{_archive_name(workspace)}/pages/{path}"
    body = {"title": path, "body": f"Made about the {SHARED_WORD}.", "baseVersion": None}
    response = world.call("PUT", url, world.admin, json=body)
    assert response.status_code == 201, response.text
    return path


def _doomed_or_kept_page(cell: Cell) -> Params:
    """A fresh page for one who may change it; the kept page otherwise."""
    params, _ = _kept_page(cell)
    if cell.succeeds:
        assert cell.workspace is not None
        params["path"] = _fresh_page(cell.world, cell.workspace)
    return params, {}


def _kept_still_there(cell: Cell, response: httpx.Response) -> None:
    for workspace in (A, B):
        name = _kept_archive(cell.world, workspace)
        url = f"{_archives_url(workspace)}/{name}/pages/{KEPT_PAGE}"
        assert cell.world.exists(url)


def _archives_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    names = {a["name"] for a in response.json()["archives"]}
    assert _archive_name(cell.workspace) in names
    assert _archive_name(OTHER[cell.workspace]) not in names


def _archive_check(cell: Cell, response: httpx.Response) -> None:
    archive = response.json()
    assert (archive["name"], archive["config"]["writers"]) == (
        _archive_name(cell.target_workspace),
        [],
    )


def _new_archive(cell: Cell) -> Params:
    return {}, {"json": {"name": cell.world.fresh("made-"), "title": "Made"}}


def _new_archive_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    name = json.loads(response.request.content)["name"]
    assert cell.world.exists(f"{_archives_url(cell.workspace)}/{name}") is cell.succeeds


def _same_title(cell: Cell) -> Params:
    params, _ = _archive(cell)
    return params, {"json": {"title": "Kept"}}


def _doomed_archive(cell: Cell) -> Params:
    """A fresh archive for one who may delete it; the kept ones otherwise."""
    if not cell.succeeds:
        return _archive(cell)
    assert cell.workspace is not None
    name = cell.world.fresh("doomed-")
    made = cell.world.call(
        "POST", _archives_url(cell.workspace), cell.world.admin, json={"name": name}
    )
    assert made.status_code == 201, made.text
    return {"name": name}, {}


def _doomed_archive_check(cell: Cell, response: httpx.Response) -> None:
    _kept_still_there(cell, response)
    if cell.succeeds:
        assert cell.workspace is not None
        name = response.request.url.path.rsplit("/", 1)[1]
        assert not cell.world.exists(f"{_archives_url(cell.workspace)}/{name}")


def _pages_check(cell: Cell, response: httpx.Response) -> None:
    paths = {p["path"] for p in response.json()["pages"]}
    assert {path for path, _, _ in _KEPT_PAGES} <= paths


def _page_check(cell: Cell, response: httpx.Response) -> None:
    page = response.json()
    assert (page["path"], page["title"]) == (KEPT_PAGE, "Kept page")
    assert SHARED_WORD in page["body"]


def _new_page(cell: Cell) -> Params:
    params, _ = _archive(cell)
    path = f"made/{cell.world.fresh('new')}"
    body = {"title": "New", "body": f"New about the {SHARED_WORD}.", "baseVersion": None}
    return {**params, "path": path}, {"json": body}


def _new_page_check(cell: Cell, response: httpx.Response) -> None:
    name, path = response.request.url.path.split("/archives/", 1)[1].split("/pages/", 1)
    url = f"{_archives_url(cell.target_workspace)}/{name}/pages/{path}"
    assert cell.world.exists(url) is cell.succeeds


def _doomed_page_check(cell: Cell, response: httpx.Response) -> None:
    _kept_still_there(cell, response)
    if cell.succeeds:
        assert not cell.world.exists(response.request.url.path)


def _history_check(cell: Cell, response: httpx.Response) -> None:
    versions = response.json()["versions"]
    assert versions and versions[-1]["version"] == 1


def _version_one(cell: Cell) -> Params:
    params, _ = _kept_page(cell)
    return {**params, "version": 1}, {}


def _version_check(cell: Cell, response: httpx.Response) -> None:
    assert (response.json()["version"], response.json()["path"]) == (1, KEPT_PAGE)


def _diff(cell: Cell) -> Params:
    params, _ = _kept_page(cell)
    return params, {"params": {"from": 1}}


def _restore(cell: Cell) -> Params:
    params, _ = _doomed_or_kept_page(cell)
    return params, {"json": {"version": 1, "baseVersion": 1}}


def _rename(cell: Cell) -> Params:
    params, _ = _doomed_or_kept_page(cell)
    return params, {"json": {"newPath": f"moved/{cell.world.fresh('m')}", "baseVersion": 1}}


def _renamed_check(cell: Cell, response: httpx.Response) -> None:
    _kept_still_there(cell, response)
    if cell.succeeds:
        assert response.json()["path"] == json.loads(response.request.content)["newPath"]


def _preview(cell: Cell) -> Params:
    params, _ = _kept_page(cell)
    return params, {"json": {"body": "Rewritten."}}


def _preview_check(cell: Cell, response: httpx.Response) -> None:
    edit = response.json()
    assert (edit["action"], edit["baseVersion"]) == ("update", 1)
    assert "+Rewritten." in edit["diff"]


def _links_check(cell: Cell, response: httpx.Response) -> None:
    links = response.json()
    assert [link["sourcePath"] for link in links["backlinks"]] == ["kept/other"]
    assert [link["target"] for link in links["dangling"]] == ["Not yet"]


def _depth_two(cell: Cell) -> Params:
    params, _ = _kept_page(cell)
    return params, {"params": {"depth": 2}}


def _graph_check(cell: Cell, response: httpx.Response) -> None:
    paths = {node["path"] for node in response.json()["nodes"]}
    assert {path for path, _, _ in _KEPT_PAGES} <= paths


def _index_check(cell: Cell, response: httpx.Response) -> None:
    assert "Kept page" in response.json()["markdown"]


def _archive_search(cell: Cell) -> Params:
    params, _ = _archive(cell)
    return params, {"params": {"q": SHARED_WORD}}


def _archive_search_check(cell: Cell, response: httpx.Response) -> None:
    paths = {hit["path"] for hit in response.json()["hits"]}
    assert KEPT_PAGE in paths
    assert all(path.startswith(("kept/", "made/", "moved/", "imported/")) for path in paths)


def _export_check(cell: Cell, response: httpx.Response) -> None:
    assert response.headers["content-type"] == "application/zip"
    assert response.headers["content-disposition"].startswith("attachment")
    with zipfile.ZipFile(io.BytesIO(response.content)) as exported:
        assert f"{KEPT_PAGE}.md" in exported.namelist()


def _import(cell: Cell) -> Params:
    params, _ = _archive(cell)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as vault:
        vault.writestr(f"imported/{cell.world.fresh('i')}.md", f"About the {SHARED_WORD}.\n")
    return params, {"files": {"file": ("vault.zip", buffer.getvalue(), "application/zip")}}


def _import_check(cell: Cell, response: httpx.Response) -> None:
    report = response.json()
    assert len(report["created"]) == 1 and not report["skipped"], report


def _from_document(cell: Cell) -> Params:
    params, _ = _archive(cell)
    assert cell.workspace is not None
    body = {"document": str(cell.world.docs[cell.workspace]), "path": cell.world.fresh("doc-")}
    return params, {"json": body}


def _from_document_check(cell: Cell, response: httpx.Response) -> None:
    assert SHARED_WORD in response.json()["body"]


def _templates_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    _kept_archive(cell.world, cell.workspace)
    names = {t["name"] for t in response.json()["templates"]}
    assert {"person", "project", "meeting", "decision", KEPT_TEMPLATE} <= names


def _new_template(cell: Cell) -> Params:
    body = {"name": cell.world.fresh("tpl-"), "title": "Made", "body": "# {{title}}\n"}
    return {}, {"json": body}


def _doomed_template(cell: Cell) -> Params:
    """A fresh template for one who may remove it; the kept one otherwise."""
    assert cell.workspace is not None
    _kept_archive(cell.world, cell.workspace)
    if not cell.succeeds:
        return {"name": KEPT_TEMPLATE}, {}
    _, body = _new_template(cell)
    url = f"/api/workspaces/{cell.workspace}/archive-templates"
    assert cell.world.call("POST", url, cell.world.admin, **body).status_code == 201
    return {"name": body["json"]["name"]}, {}


def _doomed_template_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    url = f"/api/workspaces/{cell.workspace}/archive-templates"
    names = {t["name"] for t in cell.world.call("GET", url, cell.world.admin).json()["templates"]}
    assert KEPT_TEMPLATE in names
    if cell.succeeds:
        assert response.request.url.path.rsplit("/", 1)[1] not in names


# -- synthesis: runs proposing archive pages from the documents --------------------------
def _synth_archive(workspace: str) -> str:
    """The archive runs write into: not the kept one, whose pages and links cells check."""
    return f"synth-{workspace}"


def _runs_url(workspace: str, rest: str = "") -> str:
    return f"{_archives_url(workspace)}/{_synth_archive(workspace)}/synthesis{rest}"


def _run_now(world: World, workspace: str, run_id: int) -> dict[str, Any]:
    response = world.call("GET", _runs_url(workspace, f"/{run_id}"), world.admin)
    assert response.status_code == 200, response.text
    run: dict[str, Any] = response.json()
    return run


def _stopped_run(world: World, workspace: str, run_id: int) -> dict[str, Any]:
    """The run once its passes stopped (the server's worker runs them), polled."""
    deadline = time.monotonic() + JOB_WAIT_S
    while True:
        run = _run_now(world, workspace, run_id)
        if run["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return run
        time.sleep(POLL_S)


def _ready_run(world: World, workspace: str) -> int:
    """A new run over the workspace's fixture document, waiting for review."""
    made = world.call(
        "POST", _archives_url(workspace), world.admin, json={"name": _synth_archive(workspace)}
    )
    assert made.status_code in (201, 409), made.text
    body = {"documentIds": [world.docs[workspace]], "force": True}
    started = world.call("POST", _runs_url(workspace), world.admin, json=body)
    assert started.status_code == 202, started.text
    run = _stopped_run(world, workspace, started.json()["id"])
    assert run["status"] == "ready", run
    run_id: int = run["id"]
    return run_id


def _kept_run(world: World, workspace: str) -> int:
    """The workspace's run refused cells aim at (made again with the workspace)."""
    document_id = world.docs[workspace]
    if world.kept_run.get(workspace, (None, 0))[0] != document_id:
        world.kept_run[workspace] = (document_id, _ready_run(world, workspace))
    return world.kept_run[workspace][1]


def _synth(cell: Cell) -> Params:
    """``own``: this workspace's synthesis archive; ``guessed``: the other workspace's."""
    for workspace in (A, B):
        _kept_run(cell.world, workspace)
    return {"name": _synth_archive(cell.target_workspace)}, {}


def _new_run(cell: Cell) -> Params:
    params, _ = _synth(cell)
    assert cell.workspace is not None
    body = {"documentIds": [cell.world.docs[cell.workspace]], "force": True}
    return params, {"json": body}


def _new_run_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    run = response.json()
    assert (run["status"], run["archive"], run["sources"]) == (
        "queued",
        _synth_archive(cell.workspace),
        1,
    )
    assert _stopped_run(cell.world, cell.workspace, run["id"])["status"] == "ready"


def _runs_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    ids = {run["id"] for run in response.json()["runs"]}
    assert _kept_run(cell.world, cell.workspace) in ids
    assert _kept_run(cell.world, OTHER[cell.workspace]) not in ids


def _kept_synth_run(cell: Cell) -> Params:
    """``own``: this workspace's kept run; ``guessed``: the other workspace's, asked for
    under this workspace's archive."""
    for workspace in (A, B):
        _kept_run(cell.world, workspace)
    assert cell.workspace is not None
    run_id = _kept_run(cell.world, cell.target_workspace)
    return {"name": _synth_archive(cell.workspace), "run": run_id}, {}


def _run_check(cell: Cell, response: httpx.Response) -> None:
    run = response.json()
    assert (run["id"], run["status"]) == (_kept_run(cell.world, cell.target_workspace), "ready")
    assert [p["state"] for p in run["passes"]] == ["done"] * 5


def _run_items_check(cell: Cell, response: httpx.Response) -> None:
    preview = response.json()
    assert preview["run"]["id"] == _kept_run(cell.world, cell.target_workspace)
    assert preview["items"] and {item["status"] for item in preview["items"]} == {"pending"}


def _doomed_run(cell: Cell) -> Params:
    """A fresh run waiting for review for one who may decide it; the kept ones otherwise."""
    if not cell.succeeds:
        return _kept_synth_run(cell)
    assert cell.workspace is not None
    run_id = _ready_run(cell.world, cell.workspace)
    return {"name": _synth_archive(cell.workspace), "run": run_id}, {}


def _paused_run(cell: Cell) -> Params:
    """A fresh run paused, as when its model stops answering, for one who may cancel or
    resume it; the kept ones otherwise."""
    params, kwargs = _doomed_run(cell)
    if cell.succeeds:
        paused = {
            "status": "paused",
            "error": "held by the matrix",
            "error_code": "model_unavailable",
        }
        with cell.world.catalog() as catalog, catalog.engine.begin() as conn:
            conn.execute(update(SynthRunRow).where(SynthRunRow.id == params["run"]).values(paused))
    return params, kwargs


def _kept_runs_wait(cell: Cell, response: httpx.Response) -> None:
    """The kept run a refused cell aimed at still waits for review, undecided."""
    if cell.succeeds or cell.workspace is None:
        return  # it aimed at a fresh run
    workspace = cell.target_workspace
    run = _run_now(cell.world, workspace, _kept_run(cell.world, workspace))
    assert (run["status"], run["pending"]) == ("ready", run["items"]), run


def _decided(status: str) -> Callable[[Cell, httpx.Response], None]:
    def check(cell: Cell, response: httpx.Response) -> None:
        assert response.json()["run"]["status"] == status

    return check


def _cancelled_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["status"] == "cancelled"


def _resumed_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.workspace is not None
    run = response.json()
    assert run["status"] in ("queued", "running", "ready") and run["error"] is None, run
    assert _stopped_run(cell.world, cell.workspace, run["id"])["status"] == "ready"


# -- backups: the installation's, an unconfined admin's ----------------------------------
BACKUP_WAIT_S = 120.0


def _backup_done(world: World, run_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + BACKUP_WAIT_S
    while True:
        response = world.call("GET", f"/api/backups/{run_id}", world.admin)
        assert response.status_code == 200, response.text
        run: dict[str, Any] = response.json()
        if run["status"] != "running" or time.monotonic() > deadline:
            return run
        time.sleep(POLL_S)


def _kept_backup(world: World) -> int:
    """A succeeded backup (made once, by the admin)."""
    if not world.kept_backup:
        response = world.call("POST", "/api/backups/trigger", world.admin, json={})
        assert response.status_code == 202, response.text
        _backed_up(world, response.json()["id"])
    return world.kept_backup


def _backed_up(world: World, run_id: int) -> None:
    run = _backup_done(world, run_id)
    assert run["status"] == "succeeded", run
    world.kept_backup = run_id


def _trigger_check(cell: Cell, response: httpx.Response) -> None:
    started = response.json()
    assert (started["trigger"], started["status"] in ("running", "succeeded")) == ("manual", True)
    _backed_up(cell.world, started["id"])


def _backups_check(cell: Cell, response: httpx.Response) -> None:
    assert isinstance(response.json()["runs"], list)


def _a_backup(cell: Cell) -> Params:
    return {"run": _kept_backup(cell.world)}, {}


def _unconfirmed(cell: Cell) -> Params:
    return {"run": _kept_backup(cell.world)}, {"json": {"confirm": False}}


def _backup_check(cell: Cell, response: httpx.Response) -> None:
    run = response.json()
    assert (run["id"], run["status"]) == (cell.world.kept_backup, "succeeded") and run["log"]


def _download_check(cell: Cell, response: httpx.Response) -> None:
    assert response.content[:4] == b"ARBK"  # encrypted, as stored


def _verified_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["ok"] is True, response.json()


def _backup_job(world: World, name: str) -> dict[str, Any]:
    where = f"local:{world.api.workspace.root / 'matrix-backups'}"
    return {"name": name, "cron": "0 3 * * *", "destination": where, "enabled": False}


def _kept_job(world: World) -> str:
    if not world.kept_job:
        body = _backup_job(world, "matrix-kept")
        response = world.call("POST", "/api/backups/jobs", world.admin, json=body)
        assert response.status_code == 201, response.text
        world.kept_job = "matrix-kept"
    return world.kept_job


def _backup_job_names(world: World) -> set[str]:
    response = world.call("GET", "/api/backups/jobs", world.admin)
    assert response.status_code == 200, response.text
    return {j["name"] for j in response.json()["jobs"]}


def _new_backup_job(cell: Cell) -> Params:
    return {}, {"json": _backup_job(cell.world, cell.world.fresh("job-"))}


def _new_backup_job_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["name"] in _backup_job_names(cell.world)


def _kept_job_patch(cell: Cell) -> Params:
    return {"name": _kept_job(cell.world)}, {"json": {"retentionDays": 30}}


def _doomed_backup_job(cell: Cell) -> Params:
    """A fresh job for the one who may remove it; the kept one otherwise."""
    world = cell.world
    if not cell.succeeds:
        return {"name": _kept_job(world)}, {}
    name = world.fresh("doomed-job-")
    response = world.call("POST", "/api/backups/jobs", world.admin, json=_backup_job(world, name))
    assert response.status_code == 201, response.text
    return {"name": name}, {}


def _doomed_backup_job_check(cell: Cell, response: httpx.Response) -> None:
    names = _backup_job_names(cell.world)
    assert _kept_job(cell.world) in names
    if cell.succeeds:
        assert response.request.url.path.rsplit("/", 1)[1] not in names


def _restore_status_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["restoring"] is False


def _rekey_check(cell: Cell, response: httpx.Response) -> None:
    assert sum(response.json()["failed"].values()) == 0


WS = "/api/workspaces/{workspace}"
OCR = WS + "/ocr"
ARC = WS + "/archives"
PAGE = ARC + "/{name}/pages/{path:path}"
SYNTH = ARC + "/{name}/synthesis"
BACKUPS = "/api/backups"


# -- web push: each user's own browsers ---------------------------------------------------
PUSH = "/api/push"
# A public address that is never contacted: subscribing stores it, and each cell that
# made one removes it again, so no event of the matrix's world is pushed anywhere.
PUSH_ENDPOINT = "https://93.184.216.34/push/matrix-"
PUSH_KEYS = {
    "p256dh": "BBoGq2hXK87n5g9jQ7mUO_uXuYreuA5_VhayZOUwspi4da"
    "ULSbNb-t9iNKklXjsFVeIYKsfdL0gO6Gd8VjK9OW0",  # a browser's P-256 public key
    "auth": "yqHLbrjI7hN7g9dUZXmbTg",
}


def _subscription(cell: Cell) -> Params:
    endpoint = PUSH_ENDPOINT + cell.world.fresh(cell.who.name)
    return {}, {"json": {"endpoint": endpoint, "keys": PUSH_KEYS}}


def _subscription_removed(cell: Cell, response: httpx.Response) -> None:
    if response.status_code == 201:
        body = {"endpoint": json.loads(response.request.content)["endpoint"]}
        gone = cell.world.call("DELETE", PUSH + "/subscribe", cell.credential, json=body)
        assert gone.status_code == 204, gone.text


def _own_subscription(cell: Cell) -> Params:
    """The caller's own fresh subscription for one who may remove it."""
    endpoint = PUSH_ENDPOINT + cell.world.fresh(cell.who.name)
    if cell.succeeds:
        body = {"endpoint": endpoint, "keys": PUSH_KEYS}
        made = cell.world.call("POST", PUSH + "/subscribe", cell.credential, json=body)
        assert made.status_code == 201, made.text
    return {}, {"json": {"endpoint": endpoint}}


def _push_preferences_check(cell: Cell, response: httpx.Response) -> None:
    topics = [t["topic"] for t in response.json()["topics"]]
    assert topics == ["approvals", "upload_failed", "backup_failed", "synthesis_ready"]


def _push_test_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json() == {"sent": 0, "removed": 0, "failed": 0, "refused": 0}


# -- webhooks: the installation's, an unconfined admin's, protected ---------------------
HOOKS = "/api/webhooks"
KEPT_HOOK = "matrix-kept"
# Public, never contacted: no event of the matrix's world is one these webhooks want.
HOOK_URL = "https://93.184.216.34/hooks/matrix"
HOOK_EVENTS = ["webhook.test"]


def _kept_hook(world: World) -> str:
    """A webhook to a loopback URL, made with private targets allowed (the server
    refuses to send to it: its test event is refused before anything leaves)."""
    if world.exists(f"{HOOKS}/{KEPT_HOOK}"):
        return KEPT_HOOK
    bind_data_dir(world.engine, world.api.workspace.data_dir)  # the server's key seals it
    allowing = Settings(webhooks=WebhookSettings(allow_private=True))
    WebhookService(world.engine, allowing).create(KEPT_HOOK, "http://127.0.0.1:9/", HOOK_EVENTS)
    return KEPT_HOOK


def _new_hook(cell: Cell) -> Params:
    body = {"name": cell.world.fresh("hook-"), "url": HOOK_URL, "events": HOOK_EVENTS}
    return {}, {"json": body}


def _new_hook_check(cell: Cell, response: httpx.Response) -> None:
    made = response.json()
    assert made["secret"].startswith("whsec_") and made["enabled"] is True
    listed = cell.world.call("GET", HOOKS, cell.world.admin).json()["webhooks"]
    assert all("secret" not in hook for hook in listed)


def _a_hook(cell: Cell) -> Params:
    return {"name": _kept_hook(cell.world)}, {}


def _hook_patch(cell: Cell) -> Params:
    return {"name": _kept_hook(cell.world)}, {"json": {"events": HOOK_EVENTS}}


def _rotated_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["secret"].startswith("whsec_")


def _doomed_hook(cell: Cell) -> Params:
    """A fresh webhook for the one who may remove it; the kept one otherwise."""
    world = cell.world
    if not cell.succeeds:
        return {"name": _kept_hook(world)}, {}
    name = world.fresh("doomed-hook-")
    body = {"name": name, "url": HOOK_URL, "events": HOOK_EVENTS}
    made = world.call("POST", HOOKS, world.admin, json=body)
    assert made.status_code == 201, made.text
    return {"name": name}, {}


def _doomed_hook_check(cell: Cell, response: httpx.Response) -> None:
    assert cell.world.exists(f"{HOOKS}/{KEPT_HOOK}")
    if cell.succeeds:
        assert not cell.world.exists(response.request.url.path)


def _hook_test_check(cell: Cell, response: httpx.Response) -> None:
    sent = response.json()
    assert (sent["status"], sent["event"]) == ("refused", "webhook.test"), sent
    assert sent["responseCode"] is None


def _events_check(cell: Cell, response: httpx.Response) -> None:
    events = response.json()["events"]
    assert events and all(SHARED_WORD not in json.dumps(e["data"]) for e in events)


# -- MCP over streamable HTTP (issue 22): any valid credentials; each tool then checks the
# caller's permissions and workspaces as the routes do (test_mcp_server.py calls them).
MCP_TOOLS = {"search", "ask", "list_documents", "get_document", "wiki_query"}


def _mcp_tools_list(cell: Cell) -> Params:
    return {}, {"json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}


def _mcp_tools_check(cell: Cell, response: httpx.Response) -> None:
    tools = response.json()["result"]["tools"]
    assert {tool["name"] for tool in tools} == MCP_TOOLS


ENDPOINTS = [
    # Public: documentation, probes, first-run setup and login.
    Endpoint("GET", "/openapi.json", PUBLIC, 200),
    Endpoint("GET", "/docs", PUBLIC, 200),
    Endpoint("GET", "/docs/oauth2-redirect", PUBLIC, 200),
    Endpoint("GET", "/redoc", PUBLIC, 200),
    Endpoint(
        "GET",
        "/docs/assets/{asset}",
        PUBLIC,
        200,
        send=lambda cell: ({"asset": "swagger-ui.css"}, {}),
    ),
    Endpoint("GET", "/healthz", PUBLIC, 200),
    Endpoint("GET", "/readyz", PUBLIC, 200),
    Endpoint("GET", "/setup", PUBLIC, 200),
    # The web UI: its page and static files are public; what it shows comes from the API.
    Endpoint("GET", "/", PUBLIC, 200),
    Endpoint("GET", "/ui/{asset}", PUBLIC, 200, send=lambda cell: ({"asset": "main.js"}, {})),
    Endpoint("POST", "/api/setup", PUBLIC, 409, send=_late_setup),  # already set up
    Endpoint("POST", "/api/auth/login", PUBLIC, 200, send=_login, check=_login_check),
    # Logging out: a login token's, never an API key's (as keys:write, a login's only).
    Endpoint("POST", "/api/auth/logout", "keys:write", 204, after=_logged_out_check),
    # Who am I.
    Endpoint("GET", "/api/auth/me", AUTHENTICATED, 200, check=_me_check),
    # Users and memberships.
    Endpoint("GET", "/api/users", "users:admin", 200, check=_users_check),
    Endpoint("POST", "/api/users", "users:admin", 201, send=_new_user, check=_new_user_check),
    Endpoint("PATCH", "/api/users/{username}", "users:admin", 200, send=_patch_victim),
    Endpoint(
        "DELETE",
        "/api/users/{username}",
        "users:admin",
        204,
        send=_doomed_user,
        after=_doomed_user_check,
    ),
    Endpoint(
        "PUT",
        "/api/users/{username}/workspaces/{workspace}",
        "users:admin",
        204,
        workspace="path",
        send=_victim,
        check=_membership_check(granted=True),
    ),
    Endpoint(
        "DELETE",
        "/api/users/{username}/workspaces/{workspace}",
        "users:admin",
        204,
        workspace="path",
        send=_victim,
        check=_membership_check(granted=False),
    ),
    # API keys.
    Endpoint("GET", "/api/keys", "keys:write", 200, check=_keys_check),
    Endpoint(
        "POST",
        "/api/keys",
        "keys:write",
        201,
        workspace="body",
        send=_new_key,
        check=_new_key_check,
    ),
    Endpoint(
        "DELETE",
        "/api/keys/{prefix}",
        "keys:write",
        204,
        send=_doomed_key,
        after=_doomed_key_check,
    ),
    # Workspaces.
    Endpoint("GET", "/api/workspaces", "documents:read", 200, check=_workspaces_check),
    Endpoint(
        "POST",
        "/api/workspaces",
        "workspaces:admin",
        201,
        unconfined=True,
        send=_new_workspace,
        after=_new_workspace_check,
    ),
    Endpoint("GET", WS, "documents:read", 200, workspace="path", check=_workspace_check),
    Endpoint(
        "PATCH",
        WS,
        "workspaces:admin",
        200,
        workspace="path",
        send=_same_name,
        check=_workspace_check,
    ),
    Endpoint(
        "DELETE",
        WS,
        "workspaces:admin",
        204,
        workspace="path",
        protected=True,
        ok_in={A: 409},  # the configuration's workspace cannot be deleted
        after=_deleted_workspace_check,
    ),
    Endpoint("GET", WS + "/settings", "documents:read", 200, workspace="path"),
    Endpoint(
        "PATCH",
        WS + "/settings",
        "workspaces:write",
        200,
        workspace="path",
        send=_default_k,
        check=_settings_check,
    ),
    # Documents, jobs and search.
    Endpoint(
        "POST",
        WS + "/documents",
        "documents:write",
        202,
        workspace="path",
        send=_new_document,
        check=_new_document_check,
    ),
    Endpoint(
        "POST",
        WS + "/documents/youtube",
        "documents:write",
        400,  # a URL of no video, refused after the permission (see the docstring)
        workspace="path",
        send=lambda cell: ({}, {"json": {"url": "https://example.com/watch?v=kT3aHx9_wQo"}}),
    ),
    Endpoint(
        "GET",
        WS + "/documents",
        "documents:read",
        200,
        workspace="path",
        send=lambda cell: ({}, {"params": {"limit": 500}}),
        check=_listing_check,
    ),
    Endpoint(
        "GET",
        WS + "/documents/{document_id}",
        "documents:read",
        200,
        workspace="path",
        takes_id=True,
        send=_document,
        check=_document_check,
    ),
    Endpoint(
        "GET",
        WS + "/documents/{document_id}/text",
        "documents:read",
        200,
        workspace="path",
        takes_id=True,
        send=_document,
        check=_text_check,
    ),
    Endpoint(
        "GET",
        WS + "/documents/{document_id}/file",
        "documents:read",
        200,
        workspace="path",
        takes_id=True,
        send=_document,
        check=_file_check,
    ),
    Endpoint(
        "DELETE",
        WS + "/documents/{document_id}",
        "documents:write",
        204,
        workspace="path",
        takes_id=True,
        send=_doomed_document,
        after=_doomed_document_check,
    ),
    Endpoint(
        "POST",
        WS + "/reembed",
        "workspaces:admin",
        202,
        workspace="path",
        protected=True,
        check=_reembed_check,
    ),
    Endpoint(
        "GET",
        WS + "/jobs/{job_id}",
        "documents:read",
        200,
        workspace="path",
        takes_id=True,
        send=_job,
        check=_job_check,
    ),
    Endpoint(
        "POST",
        WS + "/search",
        "search:read",
        200,
        workspace="path",
        send=_search,
        check=_search_check,
    ),
    # OCR: the jobs and their review, and the vision prompt's instructions.
    Endpoint(
        "GET",
        OCR + "/jobs",
        "documents:read",
        200,
        workspace="path",
        send=_ocr_jobs,
        check=_ocr_jobs_check,
    ),
    Endpoint(
        "GET",
        OCR + "/jobs/{job_id}",
        "documents:read",
        200,
        workspace="path",
        takes_id=True,
        send=_ocr_job,
        check=_ocr_job_check,
    ),
    Endpoint(
        "POST",
        OCR + "/jobs/{job_id}/approve",
        "workspaces:write",
        200,
        workspace="path",
        takes_id=True,
        send=_review_target,
        after=_reviewed_check("indexed"),
    ),
    Endpoint(
        "POST",
        OCR + "/jobs/{job_id}/reject",
        "workspaces:write",
        200,
        workspace="path",
        takes_id=True,
        send=_review_target,
        after=_reviewed_check("rejected"),
    ),
    Endpoint(
        "GET",
        OCR + "/instructions",
        "documents:read",
        200,
        workspace="path",
        check=_ocr_instructions_check,
    ),
    Endpoint(
        "PUT",
        OCR + "/instructions",
        "workspaces:write",
        200,
        workspace="path",
        send=_new_ocr_instructions,
        after=_new_ocr_instructions_check,
    ),
    # DLP.
    Endpoint("GET", "/api/dlp/patterns", "dlp:admin", 200, unconfined=True, check=_patterns_check),
    Endpoint(
        "POST",
        "/api/dlp/patterns",
        "dlp:admin",
        201,
        unconfined=True,
        send=_new_pattern,
        after=_new_pattern_check,
    ),
    Endpoint(
        "POST",
        "/api/dlp/patterns/test",
        "dlp:admin",
        200,
        unconfined=True,
        send=_pattern_sample,
        check=_pattern_sample_check,
    ),
    Endpoint(
        "PATCH",
        "/api/dlp/patterns/{pattern_id}",
        "dlp:admin",
        200,
        unconfined=True,
        send=_patch_pattern,
    ),
    Endpoint(
        "DELETE",
        "/api/dlp/patterns/{pattern_id}",
        "dlp:admin",
        204,
        unconfined=True,
        send=_doomed_pattern,
        after=_doomed_pattern_check,
    ),
    Endpoint("POST", "/api/dlp/scan", "search:read", 200, send=_dlp_scan, check=_dlp_scan_check),
    Endpoint("GET", "/api/dlp/matches", "dlp:admin", 200, unconfined=True),
    Endpoint(
        "POST",
        "/api/dlp/reveal",
        "dlp:reveal",
        200,
        unconfined=True,
        send=_revealable,
        check=_reveal_check,
        after=_no_original,
    ),
    # Source policy.
    Endpoint(
        "GET", WS + "/policy", "documents:read", 200, workspace="path", check=_policy_list_check
    ),
    Endpoint(
        "PUT",
        WS + "/policy",
        "policy:write",
        200,
        workspace="path",
        send=_new_rule,
        after=_new_rule_check,
    ),
    Endpoint(
        "DELETE",
        WS + "/policy",
        "policy:write",
        204,
        workspace="path",
        send=_doomed_rule,
        after=_doomed_rule_check,
    ),
    Endpoint(
        "POST",
        WS + "/policy/explain",
        "documents:read",
        200,
        workspace="path",
        send=_explain,
        check=_explain_check,
    ),
    # P2P: the installation's, not one workspace's; off in this server.
    Endpoint("GET", "/api/p2p/status", "p2p:admin", 200, unconfined=True, check=_status_check),
    Endpoint(
        "GET",
        "/api/p2p/peers",
        "p2p:admin",
        200,
        unconfined=True,
        send=_trusted_peer,
        check=_peers_check,
    ),
    Endpoint(
        "GET",
        "/api/p2p/requests",
        "p2p:admin",
        200,
        unconfined=True,
        send=_pending_requests,
        check=_requests_check,
    ),
    Endpoint(
        "POST",
        "/api/p2p/requests/{requestId}/{decision}",
        "p2p:admin",
        200,
        unconfined=True,
        takes_id=True,
        send=_decision,
        after=_decision_check,
    ),
    Endpoint(
        "POST",
        "/api/p2p/ask",
        "p2p:admin",
        503,  # P2P is not running
        unconfined=True,
        send=_ask,
        after=_ask_check,
    ),
    # Chat: answers, and each user's own chats.
    Endpoint(
        "POST",
        WS + "/chat/stream",
        "chat:use",
        200,
        workspace="path",
        send=_question,
        check=_stream_check,
    ),
    Endpoint(
        "POST", WS + "/chat", "chat:use", 200, workspace="path", send=_question, check=_answer_check
    ),
    Endpoint(
        "GET", WS + "/chats", "chat:use", 200, workspace="path", send=_my_chats, check=_chats_check
    ),
    Endpoint(
        "GET",
        WS + "/chats/{chatId}",
        "chat:use",
        200,
        workspace="path",
        takes_id=True,
        send=_chat_path,
        check=_chat_check,
    ),
    Endpoint(
        "PATCH",
        WS + "/chats/{chatId}/model",
        "chat:use",
        200,
        workspace="path",
        takes_id=True,
        send=_chat_model,
        check=_chat_model_check,
    ),
    Endpoint(
        "PATCH",
        WS + "/chats/{chatId}",
        "chat:use",
        200,
        workspace="path",
        takes_id=True,
        send=_chat_title,
        check=_chat_title_check,
    ),
    Endpoint(
        "DELETE",
        WS + "/chats/{chatId}",
        "chat:use",
        204,
        workspace="path",
        takes_id=True,
        send=_doomed_chat,
        after=_doomed_chat_check,
    ),
    Endpoint(
        "POST",
        WS + "/chats/{chatId}/attachments",
        "chat:use",
        202,
        workspace="path",
        takes_id=True,
        send=_new_attachment,
        check=_new_attachment_check,
    ),
    Endpoint(
        "GET",
        WS + "/chats/{chatId}/attachments",
        "chat:use",
        200,
        workspace="path",
        takes_id=True,
        send=_chat_path,
        check=_attachments_check,
    ),
    Endpoint(
        "GET",
        WS + "/chats/{chatId}/attachments/{attachmentId}",
        "chat:use",
        200,
        workspace="path",
        takes_id=True,
        send=_doomed_attachment,  # the caller's own new file, or the admin's kept one
        check=_attachment_check,
    ),
    Endpoint(
        "DELETE",
        WS + "/chats/{chatId}/attachments/{attachmentId}",
        "chat:use",
        204,
        workspace="path",
        takes_id=True,
        send=_doomed_attachment,
        after=_doomed_attachment_check,
    ),
    Endpoint("GET", WS + "/usage", "documents:read", 200, workspace="path", check=_usage_check),
    # The agent.
    Endpoint("GET", WS + "/agent", "documents:read", 200, workspace="path", check=_agent_check),
    Endpoint(
        "PATCH",
        WS + "/agent",
        "workspaces:write",
        200,
        workspace="path",
        send=_agent_patch,
        check=_agent_check,
    ),
    Endpoint("GET", WS + "/skills", "chat:use", 200, workspace="path", check=_skills_check),
    Endpoint(
        "GET",
        WS + "/memory",
        "chat:use",
        200,
        workspace="path",
        send=_kept_memory,
        check=_memory_check,
    ),
    Endpoint(
        "PUT",
        WS + "/memory/{key}",
        "workspaces:write",
        200,
        workspace="path",
        send=_new_memory,
        after=_new_memory_check,
    ),
    Endpoint(
        "DELETE",
        WS + "/memory/{key}",
        "workspaces:write",
        204,
        workspace="path",
        takes_id=True,
        send=_doomed_memory,
        after=_doomed_memory_check,
    ),
    # The user's own instructions, and models.
    Endpoint(
        "GET", "/api/auth/me/instructions", AUTHENTICATED, 200, check=_instructions_read_check
    ),
    Endpoint(
        "PUT",
        "/api/auth/me/instructions",
        AUTHENTICATED,
        200,
        send=_instructions,
        check=_instructions_check,
    ),
    Endpoint("GET", "/api/models", "chat:use", 200, check=_models_check),
    Endpoint(
        "PUT",
        "/api/models/default",
        "workspaces:admin",
        200,
        unconfined=True,  # the installation's default, not one workspace's
        send=_flip_default,
        after=_flip_default_check,
    ),
    # Model connections.
    Endpoint(
        "GET", CONNECTIONS, "workspaces:admin", 200, unconfined=True, check=_connections_check
    ),
    Endpoint(
        "POST",
        CONNECTIONS,
        "workspaces:admin",
        201,
        unconfined=True,
        send=_new_connection,
        after=_new_connection_check,
    ),
    Endpoint(
        "POST",
        CONNECTIONS + "/test",
        "workspaces:admin",
        200,
        unconfined=True,
        send=_probe,
        check=_probe_check,
    ),
    Endpoint("GET", CONNECTIONS + "/detect", "workspaces:admin", 200, unconfined=True),
    Endpoint(
        "PATCH",
        CONNECTIONS + "/{name}",
        "workspaces:admin",
        200,
        unconfined=True,
        send=_disabled_connection,
        after=_doomed_connection_check,
    ),
    Endpoint(
        "DELETE",
        CONNECTIONS + "/{name}",
        "workspaces:admin",
        204,
        unconfined=True,
        send=_doomed_connection,
        after=_doomed_connection_check,
    ),
    Endpoint(
        "POST",
        CONNECTIONS + "/{name}/test",
        "workspaces:admin",
        200,
        unconfined=True,
        send=_kept_connection,
        check=_probe_check,
    ),
    # Nothing listens where the kept connection points: its models are unavailable.
    Endpoint(
        "GET",
        CONNECTIONS + "/{name}/models",
        "workspaces:admin",
        503,
        unconfined=True,
        send=_kept_connection,
    ),
    # The OpenAI-compatible API: the workspace is the model named in the body.
    Endpoint("GET", "/v1/models", AUTHENTICATED, 200, check=_v1_models_check),
    Endpoint(
        "GET",
        "/v1/models/{model:path}",
        "chat:use",
        200,
        workspace="path",
        send=_model_named,
        check=_v1_model_check,
    ),
    Endpoint("POST", "/v1/embeddings", AUTHENTICATED, 200, send=_embedding, check=_embedding_check),
    Endpoint(
        "POST",
        "/v1/chat/completions",
        "chat:use",
        200,
        workspace="body",
        send=_completion,
        check=_completion_check,
    ),
    # Archives: the workspace's wiki.
    Endpoint("GET", ARC, ARCHIVE_READ, 200, workspace="path", send=_archive, check=_archives_check),
    Endpoint(
        "POST",
        ARC,
        ARCHIVE_WRITE,
        201,
        workspace="path",
        send=_new_archive,
        after=_new_archive_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive,
        check=_archive_check,
    ),
    Endpoint(
        "PATCH",
        ARC + "/{name}",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_same_title,
        check=_archive_check,
    ),
    Endpoint(
        "DELETE",
        ARC + "/{name}",
        ARCHIVE_WRITE,
        204,
        workspace="path",
        takes_id=True,
        protected=True,
        send=_doomed_archive,
        after=_doomed_archive_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}/pages",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive,
        check=_pages_check,
    ),
    Endpoint(
        "GET",
        PAGE,
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_kept_page,
        check=_page_check,
    ),
    Endpoint(
        "PUT",
        PAGE,
        ARCHIVE_WRITE,
        201,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_new_page,
        after=_new_page_check,
    ),
    Endpoint(
        "DELETE",
        PAGE,
        ARCHIVE_WRITE,
        204,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_doomed_or_kept_page,
        after=_doomed_page_check,
    ),
    Endpoint(
        "GET",
        PAGE + "/-/history",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_kept_page,
        check=_history_check,
    ),
    Endpoint(
        "GET",
        PAGE + "/-/versions/{version}",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_version_one,
        check=_version_check,
    ),
    Endpoint(
        "GET", PAGE + "/-/diff", ARCHIVE_READ, 200, workspace="path", takes_id=True, send=_diff
    ),
    Endpoint(
        "POST",
        PAGE + "/-/restore",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_restore,
        after=_kept_still_there,
    ),
    Endpoint(
        "POST",
        PAGE + "/-/rename",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_rename,
        after=_renamed_check,
    ),
    Endpoint(
        "POST",
        PAGE + "/-/preview",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_preview,
        check=_preview_check,
    ),
    Endpoint(
        "GET",
        PAGE + "/-/links",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_kept_page,
        check=_links_check,
    ),
    Endpoint(
        "GET",
        PAGE + "/-/graph",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_depth_two,
        check=_graph_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}/graph",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive,
        check=_graph_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}/index",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive,
        check=_index_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}/search",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive_search,
        check=_archive_search_check,
    ),
    Endpoint(
        "GET",
        ARC + "/{name}/export",
        ARCHIVE_READ,
        200,
        workspace="path",
        takes_id=True,
        send=_archive,
        check=_export_check,
    ),
    Endpoint(
        "POST",
        ARC + "/{name}/import",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_import,
        check=_import_check,
    ),
    Endpoint(
        "POST",
        ARC + "/{name}/from-document",
        ARCHIVE_WRITE,
        201,
        workspace="path",
        takes_id=True,
        grantable=True,
        send=_from_document,
        check=_from_document_check,
    ),
    Endpoint(
        "GET",
        WS + "/archive-templates",
        ARCHIVE_READ,
        200,
        workspace="path",
        check=_templates_check,
    ),
    Endpoint(
        "POST",
        WS + "/archive-templates",
        "workspaces:admin",
        201,
        workspace="path",
        send=_new_template,
    ),
    Endpoint(
        "DELETE",
        WS + "/archive-templates/{name}",
        "workspaces:admin",
        204,
        workspace="path",
        send=_doomed_template,
        after=_doomed_template_check,
    ),
    # Synthesis: runs proposing archive pages, managers' and admins'.
    Endpoint(
        "GET",
        SYNTH,
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_synth,
        check=_runs_check,
    ),
    Endpoint(
        "POST",
        SYNTH,
        ARCHIVE_WRITE,
        202,
        workspace="path",
        takes_id=True,
        send=_new_run,
        check=_new_run_check,
    ),
    Endpoint(
        "GET",
        SYNTH + "/{run}",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_kept_synth_run,
        check=_run_check,
    ),
    Endpoint(
        "GET",
        SYNTH + "/{run}/items",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_kept_synth_run,
        check=_run_items_check,
    ),
    Endpoint(
        "POST",
        SYNTH + "/{run}/approve",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_doomed_run,
        check=_decided("applied"),
        after=_kept_runs_wait,
    ),
    Endpoint(
        "POST",
        SYNTH + "/{run}/reject",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_doomed_run,
        check=_decided("rejected"),
        after=_kept_runs_wait,
    ),
    Endpoint(
        "POST",
        SYNTH + "/{run}/cancel",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_paused_run,
        check=_cancelled_check,
        after=_kept_runs_wait,
    ),
    Endpoint(
        "POST",
        SYNTH + "/{run}/resume",
        ARCHIVE_WRITE,
        200,
        workspace="path",
        takes_id=True,
        send=_paused_run,
        check=_resumed_check,
        after=_kept_runs_wait,
    ),
    # Backups: the installation's, an unconfined admin's; restore and rekey by login.
    Endpoint("GET", BACKUPS, "backup:admin", 200, unconfined=True, check=_backups_check),
    Endpoint(
        "POST",
        BACKUPS + "/trigger",
        "backup:admin",
        202,
        unconfined=True,
        send=lambda cell: ({}, {"json": {}}),
        check=_trigger_check,
    ),
    Endpoint(
        "GET",
        BACKUPS + "/{run}",
        "backup:admin",
        200,
        unconfined=True,
        send=_a_backup,
        check=_backup_check,
    ),
    Endpoint(
        "GET",
        BACKUPS + "/{run}/download",
        "backup:admin",
        200,
        unconfined=True,
        send=_a_backup,
        check=_download_check,
    ),
    Endpoint(
        "POST",
        BACKUPS + "/{run}/verify",
        "backup:admin",
        200,
        unconfined=True,
        send=_a_backup,
        check=_verified_check,
    ),
    # Refused without confirm (400) by one who may; see the module docstring.
    Endpoint(
        "POST",
        BACKUPS + "/{run}/restore",
        "backup:restore",
        400,
        unconfined=True,
        send=_unconfirmed,
    ),
    Endpoint(
        "GET",
        BACKUPS + "/restore/status",
        "backup:admin",
        200,
        unconfined=True,
        check=_restore_status_check,
    ),
    Endpoint(
        "POST", BACKUPS + "/rekey", "backup:restore", 200, unconfined=True, check=_rekey_check
    ),
    Endpoint("GET", BACKUPS + "/jobs", "backup:admin", 200, unconfined=True),
    Endpoint(
        "POST",
        BACKUPS + "/jobs",
        "backup:admin",
        201,
        unconfined=True,
        send=_new_backup_job,
        check=_new_backup_job_check,
    ),
    Endpoint(
        "PATCH",
        BACKUPS + "/jobs/{name}",
        "backup:admin",
        200,
        unconfined=True,
        send=_kept_job_patch,
    ),
    Endpoint(
        "DELETE",
        BACKUPS + "/jobs/{name}",
        "backup:admin",
        204,
        unconfined=True,
        send=_doomed_backup_job,
        after=_doomed_backup_job_check,
    ),
    # Web push: public key and service worker; each user's own browsers and topics.
    Endpoint("GET", "/sw.js", PUBLIC, 200),
    Endpoint("GET", PUSH + "/vapid-key", PUBLIC, 200),
    Endpoint(
        "POST",
        PUSH + "/subscribe",
        "push:use",
        201,
        send=_subscription,
        after=_subscription_removed,
    ),
    Endpoint("DELETE", PUSH + "/subscribe", "push:use", 204, send=_own_subscription),
    Endpoint("GET", PUSH + "/preferences", "push:use", 200, check=_push_preferences_check),
    Endpoint(
        "PUT",
        PUSH + "/preferences",
        "push:use",
        200,
        send=lambda cell: ({}, {"json": {"topics": {"upload_failed": True}}}),
        check=_push_preferences_check,
    ),
    Endpoint(
        "POST",
        PUSH + "/test",
        "push:admin",
        200,
        unconfined=True,
        send=lambda cell: ({}, {"json": {"usernames": ["victim"]}}),
        check=_push_test_check,
    ),
    # Webhooks: an unconfined admin's, protected (a password login here).
    Endpoint("GET", HOOKS, "webhooks:admin", 200, unconfined=True),
    Endpoint(
        "POST",
        HOOKS,
        "webhooks:admin",
        201,
        unconfined=True,
        send=_new_hook,
        check=_new_hook_check,
    ),
    Endpoint("GET", HOOKS + "/{name}", "webhooks:admin", 200, unconfined=True, send=_a_hook),
    Endpoint("PATCH", HOOKS + "/{name}", "webhooks:admin", 200, unconfined=True, send=_hook_patch),
    Endpoint(
        "DELETE",
        HOOKS + "/{name}",
        "webhooks:admin",
        204,
        unconfined=True,
        send=_doomed_hook,
        after=_doomed_hook_check,
    ),
    Endpoint(
        "POST",
        HOOKS + "/{name}/test",
        "webhooks:admin",
        200,
        unconfined=True,
        send=_a_hook,
        check=_hook_test_check,
    ),
    Endpoint(
        "GET", HOOKS + "/{name}/deliveries", "webhooks:admin", 200, unconfined=True, send=_a_hook
    ),
    Endpoint(
        "POST",
        HOOKS + "/{name}/rotate-secret",
        "webhooks:admin",
        200,
        unconfined=True,
        send=_a_hook,
        check=_rotated_check,
    ),
    # The event log: the installation's, an unconfined admin's (API keys too).
    Endpoint("GET", "/api/events", "events:read", 200, unconfined=True, check=_events_check),
    Endpoint("GET", "/api/events/names", "events:read", 200, unconfined=True),
    # MCP (streamable HTTP): any valid credentials; the tools scope each call.
    Endpoint("POST", "/mcp", AUTHENTICATED, 200, send=_mcp_tools_list, check=_mcp_tools_check),
]


# -- MCP tool servers: a workspace's admins', protected ----------------------------------
MCP_SERVERS = WS + "/mcp-servers"
KEPT_MCP = "matrix-kept"
NO_COMMAND = ["/nonexistent/matrix-mcp-server"]  # never starts: nothing runs here


def _kept_mcp(world: World, workspace: str) -> str:
    """A server installed straight into the catalog (no process started to list its
    tools): its command does not exist, so a test of it is answered, not ok."""
    if world.exists(f"/api/workspaces/{workspace}/mcp-servers/{KEPT_MCP}"):
        return KEPT_MCP
    with world.engine.connect() as conn:
        ws_id = conn.execute(
            text("SELECT id FROM workspaces WHERE name = :n"), {"n": workspace}
        ).scalar_one()
    tool = ToolInfo("echo", "Echo.", {"type": "object", "properties": {}})
    new = mcp_store.NewServer(KEPT_MCP, "stdio", NO_COMMAND, None, {}, [tool], ["echo"])
    mcp_store.insert_server(world.engine, ws_id, workspace, new, seal=_no_seal, actor="matrix")
    return KEPT_MCP


def _no_seal(plaintext: str, bound_to: str) -> str:
    raise AssertionError("a stdio server has no headers to seal")


def _new_mcp(cell: Cell) -> Params:
    return {}, {"json": {"name": cell.world.fresh("mcp-"), "command": NO_COMMAND}}


def _a_kept_mcp(cell: Cell) -> Params:
    return {"name": _kept_mcp(cell.world, cell.workspace or A)}, {}


def _mcp_patch(cell: Cell) -> Params:
    return {"name": _kept_mcp(cell.world, cell.workspace or A)}, {"json": {"tools": ["echo"]}}


def _doomed_mcp(cell: Cell) -> Params:
    """A fresh server for the one who may remove it; the kept one otherwise."""
    world, workspace = cell.world, cell.workspace or A
    if not cell.allowed:
        return {"name": _kept_mcp(world, workspace)}, {}
    name = world.fresh("doomed-mcp-")
    with world.engine.connect() as conn:
        ws_id = conn.execute(
            text("SELECT id FROM workspaces WHERE name = :n"), {"n": workspace}
        ).scalar_one()
    new = mcp_store.NewServer(name, "stdio", NO_COMMAND, None, {}, [], [])
    mcp_store.insert_server(world.engine, ws_id, workspace, new, seal=_no_seal, actor="matrix")
    return {"name": name}, {}


def _mcp_test_check(cell: Cell, response: httpx.Response) -> None:
    tested = response.json()
    assert tested["ok"] is False and tested["error"], tested


MCP_ENDPOINTS = [
    Endpoint("GET", MCP_SERVERS, "mcp:admin", 200, workspace="path"),
    # Refused after the permission check: the command cannot start (nothing runs).
    Endpoint("POST", MCP_SERVERS, "mcp:admin", 400, workspace="path", send=_new_mcp),
    Endpoint("GET", MCP_SERVERS + "/{name}", "mcp:admin", 200, workspace="path", send=_a_kept_mcp),
    Endpoint("PATCH", MCP_SERVERS + "/{name}", "mcp:admin", 200, workspace="path", send=_mcp_patch),
    Endpoint(
        "DELETE", MCP_SERVERS + "/{name}", "mcp:admin", 204, workspace="path", send=_doomed_mcp
    ),
    Endpoint(
        "POST",
        MCP_SERVERS + "/{name}/test",
        "mcp:admin",
        200,
        workspace="path",
        send=_a_kept_mcp,
        check=_mcp_test_check,
    ),
]
ENDPOINTS += MCP_ENDPOINTS


# -- settings pages (issue 22): a workspace's OCR settings; re-indexing every workspace ----
REINDEX = "/api/system/reindex-documents"


def _ocr_settings_check(cell: Cell, response: httpx.Response) -> None:
    assert "off" in response.json()["engines"]


def _new_ocr_settings(cell: Cell) -> Params:
    return {}, {"json": {"languages": ["eng"]}}


def _new_ocr_settings_check(cell: Cell, response: httpx.Response) -> None:
    assert response.json()["languages"] == ["eng"]


def _reindex_check(cell: Cell, response: httpx.Response) -> None:
    """The run finishes before the next cell: a run under way would refuse the next
    allowed start (409) and hold every workspace's re-embed."""
    world, run_id = cell.world, response.json()["id"]
    deadline = time.monotonic() + JOB_WAIT_S
    while True:
        run = world.call("GET", REINDEX, world.admin).json()["run"]
        if run["status"] != "running" or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    assert (run["id"], run["status"]) == (run_id, "done"), run


def _reindex_state_check(cell: Cell, response: httpx.Response) -> None:
    assert "run" in response.json()


SETTINGS_ENDPOINTS = [
    Endpoint(
        "GET", OCR + "/settings", "documents:read", 200, workspace="path", check=_ocr_settings_check
    ),
    Endpoint(
        "PATCH",
        OCR + "/settings",
        "workspaces:write",
        200,
        workspace="path",
        send=_new_ocr_settings,
        check=_new_ocr_settings_check,
    ),
    Endpoint(
        "POST",
        REINDEX,
        "workspaces:admin",
        202,
        unconfined=True,
        protected=True,
        check=_reindex_check,
    ),
    Endpoint("GET", REINDEX, "workspaces:admin", 200, unconfined=True, check=_reindex_state_check),
]
ENDPOINTS += SETTINGS_ENDPOINTS


# -- chat widgets: a workspace's admins', protected; a visitor's routes public ------------
WIDGETS = WS + "/widgets"
KEPT_WIDGET = "matrix-kept"


def _kept_widget(world: World, workspace: str) -> str:
    """The public id of the workspace's kept widget, made by its admin when missing."""
    path = f"/api/workspaces/{workspace}/widgets"
    listed = world.call("GET", path, world.admin).json()["widgets"]
    found = [w["publicId"] for w in listed if w["name"] == KEPT_WIDGET]
    if found:
        return str(found[0])
    body = {"name": KEPT_WIDGET, "allowedOrigins": ["https://shop.example.test"]}
    made = world.call("POST", path, world.admin, json=body)
    assert made.status_code == 201, made.text
    return str(made.json()["publicId"])


def _new_widget(cell: Cell) -> Params:
    return {}, {"json": {"name": cell.world.fresh("widget-"), "greeting": "Hello"}}


def _a_kept_widget(cell: Cell) -> Params:
    return {"widgetId": _kept_widget(cell.world, cell.workspace or A)}, {}


def _widget_patch(cell: Cell) -> Params:
    return _a_kept_widget(cell)[0], {"json": {"greeting": "Hello again"}}


def _doomed_widget(cell: Cell) -> Params:
    """A fresh widget for the one who may remove it; the kept one otherwise."""
    world, workspace = cell.world, cell.workspace or A
    if not cell.allowed:
        return {"widgetId": _kept_widget(world, workspace)}, {}
    path = f"/api/workspaces/{workspace}/widgets"
    made = world.call("POST", path, world.admin, json={"name": world.fresh("doomed-widget-")})
    assert made.status_code == 201, made.text
    return {"widgetId": made.json()["publicId"]}, {}


def _visitor_widget(cell: Cell) -> Params:
    return {"widgetId": _kept_widget(cell.world, A)}, {}


def _visitor_question(cell: Cell) -> Params:
    """No X-Widget-Id: refused before any model runs (400)."""
    return _visitor_widget(cell)[0], {"json": {"message": "hello"}}


WIDGET_ENDPOINTS = [
    Endpoint("GET", WIDGETS, "widgets:admin", 200, workspace="path"),
    Endpoint("POST", WIDGETS, "widgets:admin", 201, workspace="path", send=_new_widget),
    Endpoint(
        "GET", WIDGETS + "/{widgetId}", "widgets:admin", 200, workspace="path", send=_a_kept_widget
    ),
    Endpoint(
        "PATCH", WIDGETS + "/{widgetId}", "widgets:admin", 200, workspace="path", send=_widget_patch
    ),
    Endpoint(
        "DELETE",
        WIDGETS + "/{widgetId}",
        "widgets:admin",
        204,
        workspace="path",
        send=_doomed_widget,
    ),
    Endpoint("GET", "/api/widget/{widgetId}/config", PUBLIC, 200, send=_visitor_widget),
    Endpoint("POST", "/api/widget/{widgetId}/chat/stream", PUBLIC, 400, send=_visitor_question),
    Endpoint("GET", "/widget.js", PUBLIC, 200),
]
ENDPOINTS += WIDGET_ENDPOINTS


CellKey = tuple[Who, str | None, str | None]  # who calls, in which workspace, which target


def _cells(endpoint: Endpoint) -> list[CellKey]:
    """The route's cells, in the order they run: every caller × workspace × target."""
    workspaces: tuple[str | None, ...] = (A, B) if endpoint.workspace else (None,)
    targets: tuple[str | None, ...] = ("own", "guessed") if endpoint.takes_id else (None,)
    return list(itertools.product(WHO, workspaces, targets))


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.label for e in ENDPOINTS])
def test_authorization_matrix(world: World, endpoint: Endpoint) -> None:
    """Every cell of the route, one after the other in the matrix's order (the order the
    destructive cells were written for); a failing cell does not stop the ones after it,
    and the test reports each failing cell by name with what it expected and got."""
    failures = []
    for who, workspace, target in _cells(endpoint):
        try:
            _run_cell(world, endpoint, who, workspace, target)
        except Exception as error:
            name = " ".join(
                p for p in (world.backend, endpoint.label, who.name, workspace, target) if p
            )
            failures.append(f"[{name}] {_explained(error)}")
    if failures:
        pytest.fail(f"{len(failures)} failing cells:\n" + "\n".join(failures))


def _explained(error: Exception) -> str:
    """The error, and the line of this module that raised it."""
    where = ""
    for frame, line in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == __file__:
            where = f" (at line {line}, in {frame.f_code.co_name})"
    text = str(error) if isinstance(error, AssertionError) else repr(error)
    return f"{text}{where}".replace("\n", "\n    ")


def _run_cell(
    world: World, endpoint: Endpoint, who: Who, workspace: str | None, target: str | None
) -> None:
    """One cell: its request, the answer the permission table expects, and its checks."""
    expected = endpoint.expected(who, workspace, target)
    allowed = endpoint.expected(who, workspace, "own") not in (401, 403, 404)
    cell = Cell(world, who, workspace, target, allowed)
    params, kwargs = endpoint.send(cell)
    if workspace is not None and endpoint.workspace == "path":
        params["workspace"] = workspace
    path = endpoint.path.replace(":path}", "}").format(**params)

    response = world.call(endpoint.method, path, cell.credential, **kwargs)

    got = response.status_code
    assert got == expected, f"expected {expected}, got {got}: {response.text}"
    if expected >= 400 and path.startswith("/v1/"):  # OpenAI's error body, for its SDK
        error = response.json()["error"]
        assert error["message"] and error["code"] and error["type"]
        if expected == 404:
            assert error["code"] == "model_not_found"
        if expected == 401:
            assert response.headers["www-authenticate"] == "Bearer"
    elif expected >= 400:
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["status"] == expected
        if expected == 404 and endpoint.workspace == "path" and not who.sees(workspace or ""):
            # Word for word what a workspace that does not exist answers.
            assert problem["code"] == "not_found"
            assert problem["detail"] == f"no workspace {workspace!r}"
        if expected == 401:
            assert response.headers["www-authenticate"] == "Bearer"
    if cell.succeeds and expected < 400:
        endpoint.check(cell, response)
    endpoint.after(cell, response)


def _route_keys(app: FastAPI) -> set[str]:
    """``METHOD /path`` of every route the app answers (HEAD comes with GET)."""
    try:  # newer FastAPI keeps included routers as lazy entries of app.routes
        from fastapi.routing import iter_route_contexts

        routes: Any = list(iter_route_contexts(app.routes))
    except ImportError:  # pragma: no cover - older FastAPI lists the routes themselves
        routes = app.routes
    keys = set()
    for route in routes:
        methods = getattr(route, "methods", None) or {"*"}  # a mount or a websocket
        keys |= {f"{method} {route.path}" for method in methods if method != "HEAD"}
    return keys


def test_every_route_is_in_the_matrix(world: World) -> None:
    """A route added without a matrix entry fails here (and one removed, too)."""
    assert _route_keys(world.api.app) == {e.label for e in ENDPOINTS}
    assert len({e.label for e in ENDPOINTS}) == len(ENDPOINTS)
