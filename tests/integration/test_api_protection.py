"""Issue 15 on real servers on loopback: what a leaked API key may not do, login tokens
that end, login limits that hold behind (and without) a proxy, and the password policy.

* Weakening protection or destroying data (DLP patterns, deleting a workspace, turning
  redaction on ingest off, source policy) needs a password login or an API key created
  with the ``admin:protection`` scope: an unscoped admin key gets 403 saying so. Users
  and keys are managed with a password login only.
* A login token ends with a password or role change and with a logout.
* ``X-Forwarded-For`` counts only from ``server.trusted_proxies``; wrong passwords back
  off the (user, address) pair only; argon2 runs in a bounded pool.
* Common, repeated and keyboard-run passwords are refused with a reason.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
from tests.workspaces import NewCatalog, new_workspace

from autorag.api.app import create_app
from autorag.auth import passwords, ratelimit, service
from autorag.auth.service import ensure_setup_token
from autorag.auth.tokens import SECRET_FILE_NAME, TokenSigner
from autorag.cli.serve import uvicorn_config
from autorag.context import AppContext, open_context

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi


PASSWORD = "a long enough password"
SCOPE = "admin:protection"
PROTECTION_WORDS = "needs a password login, or an API key created with the 'admin:protection'"


# -- the world: an admin with a login token, an unscoped key and a protection key ------
@dataclass
class World:
    api: ApiServer
    token: str
    plain_key: str
    protection_key: str

    def call(
        self, method: str, path: str, credential: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        return self.api.call(method, path, credential, **kwargs)

    def who(self, name: str) -> str:
        return {"token": self.token, "plain": self.plain_key, "scoped": self.protection_key}[name]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> World:
    def prepare(context: AppContext) -> None:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "mgr", PASSWORD, "manager")
        service.add_membership(context.catalog, "mgr", "default")

    api = launch_api(
        tmp_path_factory.mktemp("protection") / "kb", prepare, login_attempts_per_minute=1000
    )
    token = _login(api, "root")
    keys = []
    for body in ({"name": "plain"}, {"name": "protection", "scopes": [SCOPE]}):
        response = api.call("POST", "/api/keys", token, json=body)
        assert response.status_code == 201, response.text
        keys.append(response.json())
    assert keys[0]["scopes"] == [] and keys[1]["scopes"] == [SCOPE]
    return World(api, token, keys[0]["key"], keys[1]["key"])


def _login(api: ApiServer, username: str, password: str = PASSWORD) -> str:
    response = api.call(
        "POST", "/api/auth/login", json={"username": username, "password": password}
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


def _assert_protection_refusal(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert PROTECTION_WORDS in response.json()["detail"]


# Each protected action: how to set it up (returns the request), and how to tell it
# happened. The setup runs with the admin's login token.
Request = tuple[str, str, dict[str, Any]]


def _new_pattern(world: World, n: str) -> Request:
    body = {"name": f"ticket_{n}", "regex": r"TCK-\d{6}"}
    return "POST", "/api/dlp/patterns", {"json": body}


def _pattern_id(world: World, name: str) -> int:
    patterns = world.call("GET", "/api/dlp/patterns", world.token).json()
    return int(next(p["id"] for p in patterns if p["name"] == name))


def _disable_builtin(world: World, n: str) -> Request:
    pattern_id = _pattern_id(world, "credit_card")
    enabled = world.call(
        "PATCH", f"/api/dlp/patterns/{pattern_id}", world.token, json={"enabled": True}
    )
    assert enabled.status_code == 200, enabled.text
    return "PATCH", f"/api/dlp/patterns/{pattern_id}", {"json": {"enabled": False}}


def _delete_pattern(world: World, n: str) -> Request:
    created = world.call(
        "POST", "/api/dlp/patterns", world.token, json={"name": f"doomed_{n}", "regex": "x+"}
    )
    assert created.status_code == 201, created.text
    return "DELETE", f"/api/dlp/patterns/{created.json()['id']}", {}


def _delete_workspace(world: World, n: str) -> Request:
    created = world.call("POST", "/api/workspaces", world.token, json={"name": f"doomed-{n}"})
    assert created.status_code == 201, created.text
    return "DELETE", f"/api/workspaces/doomed-{n}", {}


def _redaction_off(world: World, n: str) -> Request:
    path = "/api/workspaces/default/settings"
    on = world.call("PATCH", path, world.token, json={"redactOnIngest": True})
    assert on.status_code == 200 and on.json()["redactOnIngest"] is True, on.text
    return "PATCH", path, {"json": {"redactOnIngest": False}}


def _policy_rule(world: World, n: str) -> Request:
    body = {"glob": f"/docs/{n}/**", "level": "share"}
    return "PUT", "/api/workspaces/default/policy", {"json": body}


def _delete_rule(world: World, n: str) -> Request:
    glob = f"/private/{n}/**"
    created = world.call(
        "PUT", "/api/workspaces/default/policy", world.token, json={"glob": glob, "level": "share"}
    )
    assert created.status_code == 200, created.text
    return "DELETE", "/api/workspaces/default/policy", {"params": {"glob": glob}}


def _reembed(world: World, n: str) -> Request:
    return "POST", "/api/workspaces/default/reembed", {}


PROTECTED: dict[str, tuple[Callable[[World, str], Request], int]] = {
    "create a DLP pattern": (_new_pattern, 201),
    "disable a DLP pattern": (_disable_builtin, 200),
    "delete a DLP pattern": (_delete_pattern, 204),
    "delete a workspace": (_delete_workspace, 204),
    "turn redaction on ingest off": (_redaction_off, 200),
    "add a source policy rule": (_policy_rule, 200),
    "delete a source policy rule": (_delete_rule, 204),
    "re-embed a workspace": (_reembed, 202),
}
_counter = iter(range(10_000))


@pytest.mark.parametrize("action", list(PROTECTED))
def test_an_unscoped_admin_key_cannot_weaken_protection(world: World, action: str) -> None:
    build, ok = PROTECTED[action]
    method, path, kwargs = build(world, str(next(_counter)))
    refused = world.call(method, path, world.plain_key, **kwargs)
    _assert_protection_refusal(refused)
    # Nothing changed: the same request with a password login still does it.
    assert world.call(method, path, world.token, **kwargs).status_code == ok


@pytest.mark.parametrize("action", list(PROTECTED))
@pytest.mark.parametrize("who", ["token", "scoped"])
def test_a_password_login_or_a_protection_key_may(world: World, action: str, who: str) -> None:
    build, ok = PROTECTED[action]
    method, path, kwargs = build(world, str(next(_counter)))
    response = world.call(method, path, world.who(who), **kwargs)
    assert response.status_code == ok, response.text


def test_the_refused_disable_leaves_the_card_pattern_redacting(world: World) -> None:
    method, path, kwargs = _disable_builtin(world, "x")
    _assert_protection_refusal(world.call(method, path, world.plain_key, **kwargs))
    scan = world.call(
        "POST", "/api/dlp/scan", world.plain_key, json={"text": "card 4111 1111 1111 1111"}
    )
    assert scan.status_code == 200 and "4111 1111 1111 1111" not in scan.json()["redactedText"]


def test_reading_and_harmless_changes_stay_open_to_an_unscoped_key(world: World) -> None:
    assert world.call("GET", "/api/dlp/patterns", world.plain_key).status_code == 200
    assert world.call("GET", "/api/dlp/matches", world.plain_key).status_code == 200
    path = "/api/workspaces/default/settings"
    on = world.call("PATCH", path, world.plain_key, json={"redactOnIngest": True, "defaultK": 7})
    assert on.status_code == 200 and on.json()["defaultK"] == 7


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/users", None),
        ("POST", "/api/users", {"username": "sneaky", "password": PASSWORD}),
        ("PATCH", "/api/users/mgr", {"role": "admin"}),
        ("GET", "/api/keys", None),
        ("POST", "/api/keys", {"name": "another"}),
    ],
)
@pytest.mark.parametrize("who", ["plain", "scoped"])
def test_users_and_keys_need_a_password_login(
    world: World, method: str, path: str, body: dict[str, Any] | None, who: str
) -> None:
    response = world.call(method, path, world.who(who), json=body)
    assert response.status_code == 403, response.text


def test_keys_are_listed_with_their_scopes_and_me_says_what_a_key_may(world: World) -> None:
    listed = {k["name"]: k for k in world.call("GET", "/api/keys", world.token).json()}
    assert listed["protection"]["scopes"] == [SCOPE] and listed["plain"]["scopes"] == []
    plain = world.call("GET", "/api/auth/me", world.plain_key).json()
    scoped = world.call("GET", "/api/auth/me", world.protection_key).json()
    assert (plain["scopes"], plain["protection"]) == ([], False)
    assert (scoped["scopes"], scoped["protection"]) == ([SCOPE], True)
    assert "policy:write" in scoped["permissions"] and "policy:write" not in plain["permissions"]
    unknown = world.call(
        "POST", "/api/keys", world.token, json={"name": "x", "scopes": ["admin:everything"]}
    )
    assert unknown.status_code == 422


def test_a_managers_protection_key_changes_policy_but_deletes_no_workspace(
    world: World,
) -> None:
    manager = _login(world.api, "mgr")
    created = world.call("POST", "/api/keys", manager, json={"name": "m", "scopes": [SCOPE]})
    assert created.status_code == 201
    key = created.json()["key"]
    rule = {"glob": "/mgr/**", "level": "share"}
    assert world.call("PUT", "/api/workspaces/default/policy", key, json=rule).status_code == 200
    # The scope adds no permission the role lacks.
    assert world.call("DELETE", "/api/workspaces/default", key).status_code == 403


# -- tokens end ---------------------------------------------------------------------------
@pytest.fixture
def users(tmp_path: Path, launch_api: LaunchApi) -> ApiServer:
    def prepare(context: AppContext) -> None:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "ann", PASSWORD, "member")

    return launch_api(tmp_path / "kb", prepare, login_attempts_per_minute=1000)


def _me(api: ApiServer, credential: str) -> int:
    return api.call("GET", "/api/auth/me", credential).status_code


def test_a_password_change_ends_the_users_tokens(users: ApiServer) -> None:
    admin, ann = _login(users, "root"), _login(users, "ann")
    new = "the new " + PASSWORD
    patch = users.call("PATCH", "/api/users/ann", admin, json={"password": new})
    assert patch.status_code == 200
    refused = users.call("GET", "/api/auth/me", ann)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert "log" in refused.json()["detail"]
    assert _me(users, _login(users, "ann", new)) == 200
    assert _me(users, admin) == 200  # another user's token is untouched


def test_a_role_change_ends_the_users_tokens(users: ApiServer) -> None:
    admin, ann = _login(users, "root"), _login(users, "ann")
    same = users.call("PATCH", "/api/users/ann", admin, json={"role": "member"})
    assert same.status_code == 200 and _me(users, ann) == 200  # no change, no logout
    assert users.call("PATCH", "/api/users/ann", admin, json={"role": "manager"}).status_code == 200
    assert _me(users, ann) == 401
    me = users.call("GET", "/api/auth/me", _login(users, "ann")).json()
    assert me["role"] == "manager"


def test_logout_ends_every_login_token_of_the_user(users: ApiServer) -> None:
    first, second, other = _login(users, "ann"), _login(users, "ann"), _login(users, "root")
    assert users.call("POST", "/api/auth/logout", first).status_code == 204
    assert (_me(users, first), _me(users, second), _me(users, other)) == (401, 401, 200)
    assert users.call("POST", "/api/auth/logout", first).status_code == 401
    third = _login(users, "ann")
    assert users.call("POST", "/api/auth/logout?everywhere=true", third).status_code == 204
    assert _me(users, third) == 401
    assert users.call("POST", "/api/auth/logout").status_code == 401


def test_an_api_key_does_not_log_out(users: ApiServer) -> None:
    ann = _login(users, "ann")
    key = users.call("POST", "/api/keys", ann, json={"name": "k"}).json()["key"]
    refused = users.call("POST", "/api/auth/logout", key)
    assert refused.status_code == 403 and "not a login" in refused.json()["detail"]
    assert _me(users, ann) == 200 and _me(users, key) == 200


def test_a_token_of_an_older_generation_or_without_one_is_refused(users: ApiServer) -> None:
    """Tokens signed with the server's own secret: one a generation behind, and one of
    the form before generations ({sub, iat, exp})."""
    secret = (users.workspace.data_dir / SECRET_FILE_NAME).read_bytes()
    context = open_context(users.workspace)
    try:
        ann = service.get_user(context.catalog, "ann").id
        generation = service.token_generation(context.catalog, ann)
    finally:
        context.close()
    signer = TokenSigner(secret, 600)
    assert _me(users, signer.issue(ann, generation)) == 200
    assert _me(users, signer.issue(ann, generation - 1)) == 401
    now = int(time.time())
    payload = _b64(json.dumps({"sub": ann, "iat": now, "exp": now + 600}).encode())
    signature = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    assert _me(users, f"{payload}.{signature}") == 401


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# -- login limits, on a server started as `autorag serve` starts it ----------------------
@pytest.fixture
def serve_like_cli(new_catalog: NewCatalog) -> Iterator[Callable[..., tuple[str, str]]]:
    """``start(root, **server)``: a server on loopback with uvicorn configured by
    ``autorag.cli.serve.uvicorn_config``; returns its URL and the first-admin setup
    token."""
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(root: Path, **server: Any) -> tuple[str, str]:
        workspace = new_workspace(root, new_catalog())
        context = open_context(workspace)
        try:
            token = ensure_setup_token(context.catalog, workspace.data_dir)
        finally:
            context.close()
        assert token is not None
        app = create_app(workspace, server=server)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn_config(app, log_level="warning", lifespan="on")
        assert config.proxy_headers is False
        instance = uvicorn.Server(config)
        thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((instance, thread, sock))
        while not instance.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.01)
        return f"http://127.0.0.1:{sock.getsockname()[1]}", token

    yield start
    for instance, thread, sock in running:
        instance.should_exit = True
        thread.join(10)
        sock.close()


def _setup(url: str, token: str) -> None:
    body = {"token": token, "username": "root", "password": PASSWORD}
    assert httpx.post(f"{url}/api/setup", json=body).status_code == 201


def _try_login(
    url: str, password: str, forwarded: str | None = None, source: str | None = None
) -> httpx.Response:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    transport = httpx.HTTPTransport(local_address=source) if source else None
    with httpx.Client(transport=transport) as client:
        return client.post(
            f"{url}/api/auth/login",
            json={"username": "root", "password": password},
            headers=headers,
        )


def _has_second_loopback_address() -> bool:
    try:
        with socket.create_connection(
            ("127.0.0.1", 9), timeout=0.5, source_address=("127.0.0.2", 0)
        ):
            pass
    except ConnectionRefusedError:
        return True  # bound from 127.0.0.2 and reached loopback: nothing listens on 9
    except OSError:
        return False
    return True


def test_spoofed_forwarded_for_does_not_escape_the_address_limit(
    tmp_path: Path, serve_like_cli: Callable[..., tuple[str, str]]
) -> None:
    url, token = serve_like_cli(tmp_path / "kb", login_attempts_per_minute=5)
    _setup(url, token)
    answers = [
        _try_login(url, "wrong password!", forwarded=f"203.0.113.{n}").status_code
        for n in range(12)
    ]
    assert answers[:5] == [401] * 5
    assert set(answers[5:]) == {429}


def test_forwarded_for_counts_from_a_trusted_proxy(
    tmp_path: Path, serve_like_cli: Callable[..., tuple[str, str]]
) -> None:
    url, token = serve_like_cli(
        tmp_path / "kb", login_attempts_per_minute=3, trusted_proxies=["127.0.0.1"]
    )
    _setup(url, token)
    # Each client behind the proxy has its own budget; a client naming a trusted hop
    # as itself is the hop before it.
    for client in ("198.51.100.7", "198.51.100.8"):
        answers = [
            _try_login(url, "wrong password!", forwarded=client).status_code for _ in range(4)
        ]
        assert answers == [401, 401, 401, 429]
    spoof = _try_login(url, "wrong password!", forwarded="198.51.100.7, 198.51.100.9")
    assert spoof.status_code == 401  # the proxy saw .9: the left part is the client's say


def test_wrong_passwords_elsewhere_do_not_lock_the_user_out(
    tmp_path: Path,
    serve_like_cli: Callable[..., tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first backoff made long enough that the test never sees it run out.
    monkeypatch.setattr(ratelimit, "BACKOFF_BASE_S", 600.0)
    url, token = serve_like_cli(
        tmp_path / "kb", login_attempts_per_minute=1000, trusted_proxies=["127.0.0.1"]
    )
    _setup(url, token)
    attacker, user = "203.0.113.66", "198.51.100.20"
    answers = [
        _try_login(url, "wrong password!", forwarded=attacker).status_code for _ in range(12)
    ]
    assert 429 in answers
    locked = _try_login(url, PASSWORD, forwarded=attacker)
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
    assert "this user from this address" in locked.json()["detail"]
    assert _try_login(url, PASSWORD, forwarded=user).status_code == 200


@pytest.mark.skipif(not _has_second_loopback_address(), reason="no 127.0.0.2 on this host")
def test_lockout_is_per_address_without_a_proxy_too(
    tmp_path: Path,
    serve_like_cli: Callable[..., tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ratelimit, "BACKOFF_BASE_S", 600.0)
    url, token = serve_like_cli(tmp_path / "kb", login_attempts_per_minute=1000)
    _setup(url, token)
    for _ in range(12):
        _try_login(url, "wrong password!", source="127.0.0.2")
    assert _try_login(url, PASSWORD, source="127.0.0.2").status_code == 429
    assert _try_login(url, PASSWORD, source="127.0.0.1").status_code == 200


def test_password_checks_beyond_the_pool_answer_429_at_once(
    users: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool sized to one check and no queue, and that one check held by the test:
    a login is told to come back instead of adding another 64 MiB hash."""
    monkeypatch.setattr(passwords, "_SLOTS", passwords._Slots(1, 0, 0.0))
    with passwords._SLOTS:
        busy = users.call("POST", "/api/auth/login", json={"username": "ann", "password": PASSWORD})
    assert busy.status_code == 429, busy.text
    assert busy.headers["retry-after"] == str(passwords.BUSY_RETRY_AFTER_S)
    assert "busy" in busy.json()["detail"]
    assert _login(users, "ann")  # free again: the refusal cost the account nothing


def test_parallel_logins_never_run_more_than_the_pool(users: ApiServer) -> None:
    """Many logins at once: each is answered (200 or 429), none fails."""
    results: list[int] = []
    body = {"username": "ann", "password": PASSWORD}

    def one() -> None:
        results.append(users.call("POST", "/api/auth/login", json=body).status_code)

    threads = [threading.Thread(target=one) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 24 and set(results) <= {200, 429}
    assert 200 in results


# -- the password policy ----------------------------------------------------------------
WEAK = {
    "ten spaces": ("          ", "one character repeated"),
    "aaaaaaaaaa": ("aaaaaaaaaa", "one character repeated"),
    "password12": ("password12", "common or breached"),
    "1234567890": ("1234567890", "keyboard, alphabet or digit run"),
    "qwertyuiop": ("qwertyuiop", "keyboard, alphabet or digit run"),
    "abcdefghij": ("abcdefghij", "keyboard, alphabet or digit run"),
    "short": ("kx8-qv2", "at least 10 characters"),
}


@pytest.mark.parametrize("case", list(WEAK))
def test_the_first_admin_needs_a_strong_password(
    tmp_path: Path, launch_api: LaunchApi, case: str
) -> None:
    api = launch_api(tmp_path / "kb", lambda c: ensure_setup_token(c.catalog, c.workspace.data_dir))
    password, reason = WEAK[case]
    body = {"token": api.prepared, "username": "root", "password": password}
    refused = api.call("POST", "/api/setup", json=body)
    assert refused.status_code == 400, refused.text
    assert reason in refused.json()["detail"]
    # The token is not used up by a refused password.
    assert api.call("POST", "/api/setup", json={**body, "password": PASSWORD}).status_code == 201


@pytest.mark.parametrize("case", list(WEAK))
def test_users_and_password_changes_need_strong_passwords(users: ApiServer, case: str) -> None:
    admin = _login(users, "root")
    password, reason = WEAK[case]
    created = users.call(
        "POST", "/api/users", admin, json={"username": "weak", "password": password}
    )
    assert created.status_code == 400 and reason in created.json()["detail"]
    changed = users.call("PATCH", "/api/users/ann", admin, json={"password": password})
    assert changed.status_code == 400 and reason in changed.json()["detail"]
    assert _login(users, "ann")  # the old password still works
