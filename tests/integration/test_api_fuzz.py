"""Property-based fuzzing of the OpenAPI spec with schemathesis, on a real server.

Every operation of the spec gets schema-valid and schema-invalid requests (a bounded
number, derandomized so a run replays exactly); no answer may be a server error, and
every error must be problem JSON.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import AppContext
from autorag.workspace import Workspace

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

PASSWORD = "a long enough password"
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
ANONYMOUS = settings(FUZZ, max_examples=10)  # almost every answer is the same 401
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
    """The server under fuzzing and the admin's credentials."""

    def __init__(self, api: ApiServer, key: str, token: str) -> None:
        self.api = api
        self.key = key
        self.token = token

    def run(self, operation: Any, fuzz: settings, credential: str | None) -> None:
        @fuzz
        @given(case=_cases(operation))
        def one(case: schemathesis.Case) -> None:
            headers = self.api.headers(credential)
            response = case.call(base_url=self.api.url, headers=headers)
            case.validate_response(response, checks=CHECKS, headers=headers)

        one()


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Fuzzed:
    def prepare(context: AppContext) -> str:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "victim", PASSWORD, "member")
        service.create_user(context.catalog, "doomed", PASSWORD, "member")
        return service.create_api_key(context.catalog, "root", "fuzz", [])[1]

    # A small upload limit keeps generated bodies cheap.
    api = launch_api(tmp_path_factory.mktemp("fuzz") / "kb", prepare, max_upload_mb=1)
    key: str = api.prepared
    assert api.call("GET", "/openapi.json").json() == SPEC
    login = api.call("POST", "/api/auth/login", json={"username": "root", "password": PASSWORD})
    assert login.status_code == 200, login.text
    text = b"Fuzzing notes: the server answers every request with a clear status.\n"
    uploaded = api.call(
        "POST", "/api/workspaces/default/documents", key, files={"file": ("notes.txt", text)}
    )
    assert uploaded.status_code == 202, uploaded.text
    assert api.wait_processed(key, uploaded.json()["id"])["status"] == "ready"
    return Fuzzed(api, key, login.json()["access_token"])


@pytest.mark.parametrize("label", LABELS)
def test_no_server_error_as_admin(fuzzed: Fuzzed, label: str) -> None:
    operation = _operation(AUTHENTICATED, label)
    login_only = "auth" in (operation.tags or [])
    token = fuzzed.token
    if label == "POST /api/auth/logout":  # ends the user's tokens: not the shared one's
        token = fuzzed.api.call(
            "POST", "/api/auth/login", json={"username": "doomed", "password": PASSWORD}
        ).json()["access_token"]
    fuzzed.run(operation, FUZZ, token if login_only else fuzzed.key)


@pytest.mark.parametrize("label", LABELS)
def test_no_server_error_anonymously(fuzzed: Fuzzed, label: str) -> None:
    fuzzed.run(_operation(UNAUTHENTICATED, label), ANONYMOUS, None)


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
def test_made_up_credentials_are_refused(fuzzed: Fuzzed, credential: str) -> None:
    """Any made-up credential is a 401 problem, never a server error nor access."""
    response = httpx.get(
        f"{fuzzed.api.url}/api/auth/me",
        headers={"Authorization": b"Bearer " + credential.encode("latin-1")},
    )
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "unauthorized"


def test_the_server_is_healthy_after_the_fuzzing(fuzzed: Fuzzed) -> None:
    assert fuzzed.api.call("GET", "/healthz").json() == {"status": "ok"}
    me = fuzzed.api.call("GET", "/api/auth/me", fuzzed.key)
    assert me.status_code == 200 and me.json()["role"] == "admin"
    assert fuzzed.api.call("GET", "/api/workspaces/default", fuzzed.key).status_code == 200
