"""Property-based fuzzing of the OpenAPI spec with schemathesis, on a real server.

Every operation of the spec gets schema-valid and schema-invalid requests (a bounded
number, derandomized so a run replays exactly); no answer may be a server error, and
every error must be problem JSON.

Both catalogs: each generated request goes to a server on SQLite and to one on
PostgreSQL (Hypothesis generates it once; generating is most of the fuzzing's time).

Who calls: an admin's API key, except on the credential routes (users, keys, login and
setup: the ``auth`` tag), which refuse every API key by design and would answer 403
before reaching their handlers; there the admin's login token calls. A second pass
calls every operation without credentials (schemathesis may still send a made-up
``Authorization`` header, which exercises the credential parsing).

What the fuzzer may destroy: workspace paths are pinned to ``default``, the workspace
the configuration names, which the server refuses to rename or delete (409). So the
destructive workspace operations run their every check and change nothing, in any
order, and every other operation reaches a real workspace holding a processed document
rather than answering 404 to a random name (test_api_authz_matrix covers unknown
names). User paths are pinned to a spare ``victim`` member, whom the fuzzer may change
or delete; key prefixes stay random, so the caller's own key is never revoked.

The operations are parametrized by pytest and each fuzzed with Hypothesis over
schemathesis's strategies (``APIOperation.as_strategy``), rather than through
``schema.parametrize()``, whose test items all share one node id under pytest 9.2.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from starlette.types import ASGIApp
from tests.doubles.youtube import RecordedYouTube, recorded_session
from tests.integration.conftest import launch_on

from autorag.api.app import create_app
from autorag.api.routes.youtube import transcript_session
from autorag.auth import service
from autorag.context import AppContext
from autorag.workspace import Workspace

# Every request goes to a server on each catalog, PostgreSQL included.
pytestmark = pytest.mark.postgres

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer
    from tests.postgres import PostgresTestServer

PASSWORD = "a long enough password"
FUZZ = settings(
    max_examples=15,  # per route and catalog: the suite stays within its 8 minutes
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
ANONYMOUS = settings(FUZZ, max_examples=6)  # almost every answer is the same 401
PINNED = {"workspace": "default", "username": "victim"}
PINNED_FOR = {"DELETE /api/users/{username}": {"username": "doomed"}}  # victim stays

# The spec every server serves, built without one, since pytest parametrizes over its
# operations before any server runs; the fixture checks the server serves this spec.
SPEC = create_app(Workspace(Path("/nonexistent/autorag-fuzz"))).openapi()
# Authenticated, the fuzzer leaves the Authorization header alone: its invalid requests
# break parameters and bodies, not credentials. Anonymous, it makes credentials up.
AUTHENTICATED = schemathesis.openapi.from_dict(
    SPEC,
    config=schemathesis.Config.from_dict({"generation": {"with-security-parameters": False}}),
)
UNAUTHENTICATED = schemathesis.openapi.from_dict(SPEC)
# Deletions last: what they remove (the document, a user) serves the others first.
LABELS = sorted(
    (result.ok().label for result in AUTHENTICATED.get_all_operations()),
    key=lambda label: label.startswith("DELETE "),
)


def _operation(schema: Any, label: str) -> Any:
    method, path = label.split(" ", 1)
    return schema[path][method]


def _cases(operation: Any) -> st.SearchStrategy[schemathesis.Case]:
    """Valid and invalid requests for the operation, with its pinned path parameters."""
    names = {parameter.name for parameter in operation.path_parameters}
    pins = PINNED | PINNED_FOR.get(operation.label, {})
    pinned = {name: value for name, value in pins.items() if name in names}
    return st.one_of(
        [
            operation.as_strategy(mode, path_parameters=pinned)
            for mode in schemathesis.GenerationMode
        ]
    )


def _problem_json(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
    """Every error is RFC 9457 problem JSON with its status and a stable code; on the
    OpenAI-compatible API, OpenAI's error body (its SDK reads that)."""
    if response.status_code < 400 or case.method.upper() == "HEAD":
        return
    content_type = response.headers.get("content-type", [""])[0]
    if case.path.startswith("/v1/"):
        assert content_type == "application/json", (response.status_code, content_type)
        error = json.loads(response.content)["error"]
        assert error["message"] and error["type"] and error["code"], error
        return
    assert content_type == "application/problem+json", (response.status_code, content_type)
    problem = json.loads(response.content)
    assert problem["status"] == response.status_code, problem
    assert isinstance(problem["code"], str) and problem["code"], problem


CHECKS = [not_a_server_error, _problem_json]


class Fuzzed:
    """A server under fuzzing and its admin's credentials."""

    def __init__(self, catalog: str, api: ApiServer, key: str, token: str, doomed: str) -> None:
        self.catalog = catalog
        self.api = api
        self.key = key
        self.token = token
        self.doomed = doomed  # a member's login token, for the fuzzed logout to end
        # Backups the fuzzer asks for go here, whatever destination it made up: a made-up
        # absolute path would be written for real (the suite may run as root).
        self.backups = f"local:{api.workspace.root.parent / 'backups'}"


def _confined(case: schemathesis.Case, server: Fuzzed) -> None:
    if isinstance(case.body, dict) and isinstance(case.body.get("destination"), str):
        case.body = {**case.body, "destination": server.backups}


Credential = Callable[[Fuzzed], "str | None"]


def _run(servers: list[Fuzzed], operation: Any, fuzz: settings, credential: Credential) -> None:
    """Each generated request goes to the server on each catalog: Hypothesis generates
    it once (two thirds of the fuzzing's time is generating), both catalogs answer it."""

    @fuzz
    @given(case=_cases(operation))
    def one(case: schemathesis.Case) -> None:
        for server in servers:
            headers = server.api.headers(credential(server))
            _confined(case, server)
            try:
                response = case.call(base_url=server.api.url, headers=headers)
                case.validate_response(response, checks=CHECKS, headers=headers)
            except BaseException as failure:
                failure.add_note(f"on the server whose catalog is {server.catalog}")
                raise

    one()


def _login(api: ApiServer, username: str) -> str:
    login = api.call("POST", "/api/auth/login", json={"username": username, "password": PASSWORD})
    assert login.status_code == 200, login.text
    token: str = login.json()["access_token"]
    return token


def _fuzzed(catalog: str, api: ApiServer) -> Fuzzed:
    key: str = api.prepared
    assert api.call("GET", "/openapi.json").json() == SPEC
    # Logged in before any fuzzing: the fuzzed login spends the attempts of a window.
    token, doomed = _login(api, "root"), _login(api, "doomed")
    text = b"Fuzzing notes: the server answers every request with a clear status.\n"
    uploaded = api.call(
        "POST", "/api/workspaces/default/documents", key, files={"file": ("notes.txt", text)}
    )
    assert uploaded.status_code == 202, uploaded.text
    assert api.wait_processed(key, uploaded.json()["id"])["status"] == "ready"
    return Fuzzed(catalog, api, key, token, doomed)


def _prepare(context: AppContext) -> str:
    service.create_user(context.catalog, "root", PASSWORD, "admin")
    service.create_user(context.catalog, "victim", PASSWORD, "member")
    service.create_user(context.catalog, "doomed", PASSWORD, "member")
    return service.create_api_key(context.catalog, "root", "fuzz", [])[1]


@pytest.fixture(scope="module")
def fuzzed(
    tmp_path_factory: pytest.TempPathFactory,
    serve_asgi: Callable[[ASGIApp], str],
    postgres_server: PostgresTestServer,
) -> list[Fuzzed]:
    """A server on each catalog backend (SQLite, PostgreSQL), each with its admin, its
    victim and a processed document. A small upload limit keeps generated bodies cheap."""
    servers = []
    for catalog, url in (("sqlite", None), ("postgresql", postgres_server.new_database())):
        root = tmp_path_factory.mktemp(f"fuzz-{catalog}") / "kb"
        api = launch_on(serve_asgi, root, url, _prepare, max_upload_mb=1)
        # YouTube is not reachable here: a generated video id gets recorded answers (an
        # unknown one: 422), never a request to the network.
        api.app.dependency_overrides[transcript_session] = lambda: recorded_session(
            RecordedYouTube()
        )
        servers.append(_fuzzed(catalog, api))
    return servers


@pytest.mark.parametrize("label", LABELS)
def test_no_server_error_as_admin(fuzzed: list[Fuzzed], label: str) -> None:
    operation = _operation(AUTHENTICATED, label)
    login_only = "auth" in (operation.tags or [])
    logout = label == "POST /api/auth/logout"  # ends the user's tokens: not the shared one's
    tokens = {server.catalog: server.doomed if logout else server.token for server in fuzzed}
    _run(
        fuzzed,
        operation,
        FUZZ,
        lambda server: tokens[server.catalog] if login_only else server.key,
    )


@pytest.mark.parametrize("label", LABELS)
def test_no_server_error_anonymously(fuzzed: list[Fuzzed], label: str) -> None:
    _run(fuzzed, _operation(UNAUTHENTICATED, label), ANONYMOUS, lambda _server: None)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


_HEADER_TEXT = st.text(
    st.characters(codec="latin-1", exclude_categories=["Cc"]), min_size=1, max_size=80
)
_KEY_TEXT = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", max_size=50)
# Shaped like what the server accepts, so the parsing gets past its first test: login
# tokens (base64url JSON claims, a dot, a signature) and API keys (ark_<prefix>_<secret>).
MADE_UP_CREDENTIALS = st.one_of(
    _HEADER_TEXT,
    st.builds(lambda text: f"ark_{text}", _KEY_TEXT),
    st.builds(
        lambda claims, signature: f"{_b64(json.dumps(claims).encode())}.{signature}",
        st.dictionaries(
            st.sampled_from(["sub", "iat", "exp", "x"]),
            st.one_of(st.integers(), st.text(max_size=5), st.none(), st.floats()),
        ),
        st.one_of(_KEY_TEXT, st.binary(max_size=40).map(_b64)),
    ),
    st.builds(lambda raw: _b64(raw) + "." + _b64(raw[::-1]), st.binary(max_size=60)),
)


@settings(FUZZ, max_examples=60)
@given(credential=MADE_UP_CREDENTIALS)
def test_made_up_credentials_are_refused(fuzzed: list[Fuzzed], credential: str) -> None:
    """Any made-up credential is a 401 problem, never a server error nor access."""
    for server in fuzzed:
        response = httpx.get(
            f"{server.api.url}/api/auth/me",
            headers={"Authorization": b"Bearer " + credential.encode("latin-1")},
        )
        assert response.status_code == 401, (server.catalog, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "unauthorized"


def test_the_servers_are_healthy_after_the_fuzzing(fuzzed: list[Fuzzed]) -> None:
    for server in fuzzed:
        assert server.api.call("GET", "/healthz").json() == {"status": "ok"}
        me = server.api.call("GET", "/api/auth/me", server.key)
        assert me.status_code == 200 and me.json()["role"] == "admin", server.catalog
        workspace = server.api.call("GET", "/api/workspaces/default", server.key)
        assert workspace.status_code == 200, server.catalog
