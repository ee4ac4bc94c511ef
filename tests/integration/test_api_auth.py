"""Users and access on a real uvicorn server on loopback: setup, login, API keys, the
authorization matrix, rate limiting, and secrets kept out of the logs."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from autorag.auth.service import ensure_setup_token
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

PASSWORD = "a long enough password"
SEARCH = {"query": "refund window", "mode": "fts"}


@dataclass
class Server:
    api: ApiServer
    setup_token: str

    @property
    def base_url(self) -> str:
        return self.api.url

    def call(
        self, method: str, path: str, credential: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        return self.api.call(method, path, credential, **kwargs)

    def setup(self, username: str = "root") -> str:
        """Create the first admin; returns a login token for it."""
        body = {"token": self.setup_token, "username": username, "password": PASSWORD}
        assert self.call("POST", "/api/setup", json=body).status_code == 201
        return self.login(username)

    def login(self, username: str, password: str = PASSWORD) -> str:
        response = self.call(
            "POST", "/api/auth/login", json={"username": username, "password": password}
        )
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token

    def add_user(self, admin: str, username: str, role: str, *workspaces: str) -> str:
        """Create a user with memberships; returns a login token for it."""
        body = {"username": username, "password": PASSWORD, "role": role}
        assert self.call("POST", "/api/users", admin, json=body).status_code == 201
        for workspace in workspaces:
            path = f"/api/users/{username}/workspaces/{workspace}"
            assert self.call("PUT", path, admin).status_code == 204
        return self.login(username)

    def new_key(self, credential: str, *workspaces: str) -> dict[str, Any]:
        body = {"name": "script", "workspaces": list(workspaces)}
        response = self.call("POST", "/api/keys", credential, json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created


def start(launch_api: LaunchApi, root: Path, **server: Any) -> Server:
    """A server on a fresh workspace with workspaces ``default`` and ``b``."""

    def prepare(context: AppContext) -> str | None:
        context.catalog.ensure_workspace("b")
        # As `autorag serve` does.
        return ensure_setup_token(context.catalog, context.workspace.data_dir)

    server.setdefault("login_attempts_per_minute", 1000)
    api = launch_api(root, prepare, **server)
    assert api.prepared is not None
    return Server(api, api.prepared)


@pytest.fixture
def server(tmp_path: Path, launch_api: LaunchApi) -> Server:
    return start(launch_api, tmp_path / "kb")


# -- setup, login, tokens -------------------------------------------------------------
def test_setup_creates_the_first_admin_once(server: Server) -> None:
    page = server.call("GET", "/setup")
    assert page.status_code == 200 and "Create the first admin" in page.text
    assert "script-src 'sha256-" in page.headers["content-security-policy"]

    body = {"token": "wrong", "username": "root", "password": PASSWORD}
    wrong = server.call("POST", "/api/setup", json=body)
    assert wrong.status_code == 403 and wrong.json()["code"] == "forbidden"
    short = server.call(
        "POST", "/api/setup", json={**body, "token": server.setup_token, "password": "x"}
    )
    assert short.status_code == 400 and "at least 10" in short.json()["detail"]

    admin = server.setup()
    me = server.call("GET", "/api/auth/me", admin).json()
    assert (me["username"], me["role"], me["via"], me["workspaces"]) == (
        "root",
        "admin",
        "token",
        None,
    )
    assert "users:admin" in me["permissions"]

    again = server.call("POST", "/api/setup", json={**body, "token": server.setup_token})
    assert again.status_code == 409 and again.json()["code"] == "conflict"


def test_login_issues_a_bearer_token(server: Server) -> None:
    server.setup()
    response = server.call(
        "POST", "/api/auth/login", json={"username": "root", "password": PASSWORD}
    )
    body = response.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 3600
    assert server.call("GET", "/api/auth/me", body["access_token"]).status_code == 200
    for username, password in (("root", "wrong password"), ("nobody", PASSWORD)):
        refused = server.call(
            "POST", "/api/auth/login", json={"username": username, "password": password}
        )
        assert refused.status_code == 401
        assert refused.json()["detail"] == "invalid username or password"
        assert refused.headers["www-authenticate"] == "Bearer"


def test_bad_tokens_answer_401_problem_json(server: Server) -> None:
    admin = server.setup()
    payload, signature = admin.split(".")
    for credential in (None, "garbage", f"{payload}.{signature[::-1]}", "ark_" + "a" * 41):
        response = server.call("GET", "/api/auth/me", credential)
        assert response.status_code == 401, credential
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["code"] == "unauthorized"
    basic = httpx.get(f"{server.base_url}/api/auth/me", auth=("root", PASSWORD))
    assert basic.status_code == 401


def test_disabling_or_deleting_a_user_ends_their_tokens_and_keys(server: Server) -> None:
    admin = server.setup()
    token = server.add_user(admin, "ann", "member", "default")
    key = server.new_key(token)["key"]
    patch = server.call("PATCH", "/api/users/ann", admin, json={"disabled": True})
    assert patch.status_code == 200 and patch.json()["disabled"] is True
    assert server.call("GET", "/api/auth/me", token).status_code == 401
    assert server.call("GET", "/api/auth/me", key).status_code == 401
    server.call("PATCH", "/api/users/ann", admin, json={"disabled": False})
    assert server.call("GET", "/api/auth/me", key).status_code == 200
    assert server.call("DELETE", "/api/users/ann", admin).status_code == 204
    assert server.call("GET", "/api/auth/me", token).status_code == 401
    assert server.call("GET", "/api/auth/me", key).status_code == 401


def test_the_last_admin_cannot_be_removed(server: Server) -> None:
    admin = server.setup()
    response = server.call("DELETE", "/api/users/root", admin)
    assert response.status_code == 409 and "last enabled admin" in response.json()["detail"]


def test_login_is_rate_limited(tmp_path: Path, launch_api: LaunchApi) -> None:
    server = start(launch_api, tmp_path / "kb", login_attempts_per_minute=3)
    server.setup()  # one attempt from this address
    wrong = {"username": "root", "password": "wrong password"}
    assert [server.call("POST", "/api/auth/login", json=wrong).status_code for _ in range(2)] == [
        401,
        401,
    ]
    right = {"username": "root", "password": PASSWORD}
    limited = server.call("POST", "/api/auth/login", json=right)
    assert limited.status_code == 429
    assert limited.headers["content-type"] == "application/problem+json"
    assert limited.json()["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60


# -- API keys -------------------------------------------------------------------------
def test_api_key_create_use_list_and_revoke(server: Server) -> None:
    admin = server.setup()
    token = server.add_user(admin, "ann", "member", "default")
    created = server.new_key(token, "default")
    key, prefix = created["key"], created["prefix"]
    assert re.fullmatch(rf"ark_{prefix}_[a-z0-9]{{32}}", key)
    assert created["workspaces"] == ["default"] and created["username"] == "ann"

    assert (
        server.call("POST", "/api/workspaces/default/search", key, json=SEARCH).status_code == 200
    )
    me = server.call("GET", "/api/auth/me", key).json()
    assert (me["via"], me["workspaces"]) == ("api_key", ["default"])
    assert "keys:write" not in me["permissions"]  # a key cannot mint keys

    listed = server.call("GET", "/api/keys", token).json()
    assert [k["prefix"] for k in listed] == [prefix] and listed[0]["lastUsedAt"] is not None
    assert "key" not in listed[0] and key not in str(listed)
    assert server.call("GET", "/api/keys", admin).json()[0]["prefix"] == prefix  # admin sees all
    assert server.call("GET", "/api/keys", key).status_code == 403

    assert server.call("DELETE", f"/api/keys/{prefix}", token).status_code == 204
    revoked = server.call("GET", "/api/auth/me", key)
    assert revoked.status_code == 401 and revoked.json()["detail"] == "API key revoked"
    assert server.call("GET", "/api/keys", token).json()[0]["revokedAt"] is not None


def test_a_key_cannot_reach_beyond_its_owner(server: Server) -> None:
    admin = server.setup()
    token = server.add_user(admin, "ann", "member", "default")
    hidden = server.call("POST", "/api/keys", token, json={"name": "x", "workspaces": ["b"]})
    assert hidden.status_code == 404 and hidden.json()["detail"] == "no workspace 'b'"
    key = server.new_key(token)["key"]  # unscoped: every workspace *ann* may use
    assert server.call("POST", "/api/workspaces/b/search", key, json=SEARCH).status_code == 404


# -- the authorization matrix ---------------------------------------------------------
PRINCIPALS = ("anonymous", "admin", "manager", "member", "admin_key_b")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    body: dict[str, Any] | None
    expect: tuple[int, int, int, int, int]  # in PRINCIPALS order


ROUTES = [
    Route("GET", "/api/auth/me", None, (401, 200, 200, 200, 200)),
    Route("GET", "/api/users", None, (401, 200, 403, 403, 403)),
    Route(
        "POST",
        "/api/users",
        {"username": "{fresh}", "password": PASSWORD},
        (401, 201, 403, 403, 403),
    ),
    Route("PATCH", "/api/users/{victim}", {"role": "manager"}, (401, 200, 403, 403, 403)),
    Route("DELETE", "/api/users/{victim}", None, (401, 204, 403, 403, 403)),
    Route("PUT", "/api/users/{victim}/workspaces/default", None, (401, 204, 403, 403, 404)),
    Route("PUT", "/api/users/{victim}/workspaces/b", None, (401, 204, 404, 404, 403)),
    Route("DELETE", "/api/users/{victim}/workspaces/b", None, (401, 204, 404, 404, 403)),
    Route("GET", "/api/keys", None, (401, 200, 200, 200, 403)),
    Route("POST", "/api/keys", {"name": "mine"}, (401, 201, 201, 201, 403)),
    Route("POST", "/api/keys", {"name": "b", "workspaces": ["b"]}, (401, 201, 404, 404, 403)),
    Route("DELETE", "/api/keys/{victim_key}", None, (401, 204, 404, 404, 403)),
    Route("POST", "/api/workspaces/default/search", SEARCH, (401, 200, 200, 200, 404)),
    Route("POST", "/api/workspaces/b/search", SEARCH, (401, 200, 404, 404, 200)),
    Route("POST", "/api/workspaces/nope/search", SEARCH, (401, 404, 404, 404, 404)),
]


@dataclass
class World:
    server: Server
    credentials: dict[str, str | None]
    _names: Iterator[int] = field(default_factory=itertools.count)

    def fill(self, text: str) -> str:
        """Make the objects a placeholder names, fresh for every cell."""
        admin = self.credentials["admin"]
        assert admin is not None
        if "{victim}" in text:
            victim = f"victim{next(self._names)}"
            self.server.add_user(admin, victim, "member", "b")
            text = text.replace("{victim}", victim)
        if "{victim_key}" in text:
            text = text.replace("{victim_key}", self.server.new_key(admin)["prefix"])
        return text.replace("{fresh}", f"fresh{next(self._names)}")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> World:
    server = start(launch_api, tmp_path_factory.mktemp("matrix") / "kb")
    admin = server.setup()
    return World(
        server,
        {
            "anonymous": None,
            "admin": admin,
            "manager": server.add_user(admin, "manager", "manager", "default"),
            "member": server.add_user(admin, "member", "member", "default"),
            "admin_key_b": server.new_key(admin, "b")["key"],
        },
    )


@pytest.mark.parametrize("who", PRINCIPALS)
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path} {r.body or ''}")
def test_authorization_matrix(world: World, route: Route, who: str) -> None:
    path = world.fill(route.path)
    body = {k: world.fill(v) if isinstance(v, str) else v for k, v in (route.body or {}).items()}
    response = world.server.call(
        route.method, path, world.credentials[who], json=body if route.body else None
    )
    expected = route.expect[PRINCIPALS.index(who)]
    assert response.status_code == expected, response.text
    if expected >= 400:
        assert response.headers["content-type"] == "application/problem+json"


def test_a_foreign_workspace_looks_exactly_like_a_missing_one(world: World) -> None:
    member = world.credentials["member"]
    foreign = world.server.call("POST", "/api/workspaces/b/search", member, json=SEARCH).json()
    missing = world.server.call("POST", "/api/workspaces/c/search", member, json=SEARCH).json()
    for body in (foreign, missing):
        body.pop("instance")
    assert foreign == {**missing, "detail": "no workspace 'b'"}
    assert missing["detail"] == "no workspace 'c'"


def test_probes_and_docs_stay_public(world: World) -> None:
    for path in ("/healthz", "/readyz", "/docs", "/openapi.json"):
        assert world.server.call("GET", path).status_code in (200, 503), path
    spec = world.server.call("GET", "/openapi.json").json()
    assert "HTTPBearer" in spec["components"]["securitySchemes"]


# -- logs -----------------------------------------------------------------------------
@pytest.fixture
def server_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Everything the server logs, access log included, at every level."""
    caplog.set_level(logging.DEBUG)
    own = [logging.getLogger(name) for name in ("uvicorn.access", "uvicorn.error")]
    levels = [logger.level for logger in own]
    for logger in own:  # uvicorn's loggers do not propagate to the root
        logger.addHandler(caplog.handler)
        logger.setLevel(logging.DEBUG)
    yield caplog
    for logger, level in zip(own, levels, strict=True):
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)


def test_secrets_never_reach_the_logs(
    server: Server, server_logs: pytest.LogCaptureFixture
) -> None:
    server.call("GET", f"/setup#token={server.setup_token}")
    admin = server.setup()
    token = server.add_user(admin, "ann", "member", "default")
    key = server.new_key(token, "default")["key"]
    server.call(
        "POST", "/api/auth/login", json={"username": "ann", "password": "wrong " + PASSWORD}
    )
    server.call("PATCH", "/api/users/ann", admin, json={"password": "the new " + PASSWORD})
    server.call("POST", "/api/workspaces/default/search", key, json=SEARCH)
    server.call("GET", "/api/auth/me", key[:-1] + "0")

    text = "\n".join(
        record.getMessage()
        for record in server_logs.records
        if not record.name.startswith(("httpx", "httpcore"))  # the test's own client
    )
    assert "login refused from 127.0.0.1" in text  # the server's logs are captured
    assert "POST /api/auth/login" in text  # and so is its access log
    for secret in (server.setup_token, PASSWORD, token, admin, key, key[:-1] + "0"):
        assert secret not in text
