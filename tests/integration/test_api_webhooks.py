"""Webhooks over HTTP on a real server, delivering to a real receiver on loopback (the
server's ``webhooks.allow_private`` is on to reach it): a webhook registered answers its
secret once (201) and never again; the test event reaches the receiver signed with that
secret and is in the delivery log; an event of the server's own (a user created) is
delivered by the server's dispatcher; changes, switches and removal; what is refused.

Who may call each route is the authorization matrix's (test_api_authz_matrix.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.types import ASGIApp
from tests.doubles.webhook_receiver import Receiver, running_receiver
from tests.integration.conftest import ApiServer
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import open_context

PASSWORD = "a long enough password"
URL = "/api/webhooks"
WAIT_S = 30.0


@dataclass
class Api:
    server: ApiServer
    token: str  # the admin's password login
    receiver: Receiver

    def call(self, method: str, path: str, **kw: Any) -> Any:
        return self.server.call(method, URL + path, self.token, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        response = self.call(method, path, **kw)
        assert response.status_code == status, response.text
        return response.json() if response.content else None

    def hook(self, name: str, events: list[str] | None = None) -> dict[str, Any]:
        path = f"/{name}"
        body = {"name": name, "url": self.receiver.url + path, "events": events or []}
        made: dict[str, Any] = self.ok("POST", "", 201, json=body)
        self.receiver.secrets[path] = made["secret"]
        return made


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("webhooks-api")
    workspace = new_workspace(root / "kb", webhooks={"allow_private": True})
    context = open_context(workspace)
    try:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    app = create_app(workspace, server={"login_attempts_per_minute": 10_000})
    server = ApiServer(serve_asgi(app), app, workspace, None)
    login = server.call("POST", "/api/auth/login", json={"username": "root", "password": PASSWORD})
    with running_receiver() as receiver:
        yield Api(server, login.json()["access_token"], receiver)


def test_register_test_and_read_the_log(api: Api) -> None:
    made = api.hook("ci", ["document.failed"])
    assert made["secret"].startswith("whsec_") and made["events"] == ["document.failed"]
    assert (made["enabled"], made["consecutiveFailures"], made["lastDelivery"]) == (True, 0, None)
    listed = api.ok("GET", "")
    assert [hook["name"] for hook in listed["webhooks"]] == ["ci"]
    assert "document.processed" in listed["eventNames"]
    for answer in (listed["webhooks"][0], api.ok("GET", "/ci")):
        assert "secret" not in answer and made["secret"] not in str(answer)

    sent = api.ok("POST", "/ci/test")
    assert (sent["status"], sent["responseCode"], sent["event"]) == (
        "delivered",
        200,
        "webhook.test",
    )
    (got,) = api.receiver.at("/ci")
    assert got.signed and got.json["event"] == "webhook.test"
    assert got.json["data"] == {"webhook": "ci", "message": "A test event sent from AutoRAG.",
                                "actor": "root"}  # fmt: skip
    assert got.headers["x-webhook-id"] == sent["deliveryId"]
    log = api.ok("GET", "/ci/deliveries?limit=5")["deliveries"]
    assert [d["id"] for d in log] == [sent["id"]]
    assert api.ok("GET", "/ci")["lastDelivery"]["id"] == sent["id"]


def test_the_servers_own_events_are_delivered(api: Api) -> None:
    """A user created through the API: the server's dispatcher delivers user.created."""
    api.hook("people", ["user.created"])
    created = api.server.call(
        "POST", "/api/users", api.token,
        json={"username": "newcomer", "password": PASSWORD, "role": "member"},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + WAIT_S
    while not api.receiver.at("/people"):
        assert time.monotonic() < deadline, "user.created never reached the webhook"
        time.sleep(0.02)
    (got,) = api.receiver.at("/people")
    assert got.signed and got.json["event"] == "user.created"
    assert got.json["data"]["username"] == "newcomer" and PASSWORD not in got.body.decode()


def test_a_rotated_secret_signs_from_then_on(api: Api) -> None:
    old = api.hook("rotating", ["webhook.test"])["secret"]
    rotated = api.ok("POST", "/rotating/rotate-secret")
    new = rotated["secret"]
    assert new.startswith("whsec_") and new != old and rotated["name"] == "rotating"
    assert new not in str(api.ok("GET", "/rotating"))  # shown this once
    api.receiver.secrets["/rotating"] = new
    assert api.ok("POST", "/rotating/test")["status"] == "delivered"
    (got,) = api.receiver.at("/rotating")
    assert got.signed  # with the new secret: the receiver checks it against that one
    assert api.call("POST", "/nobody/rotate-secret").status_code == 404


def test_change_switch_and_remove(api: Api) -> None:
    api.hook("changing")
    changed = api.ok("PATCH", "/changing", json={"events": ["backup.failed", "backup.completed"]})
    assert changed["events"] == ["backup.completed", "backup.failed"]
    off = api.ok("PATCH", "/changing", json={"enabled": False})
    assert off["enabled"] is False and off["disabledReason"] == "turned off by root"
    on = api.ok("PATCH", "/changing", json={"enabled": True})
    assert (on["enabled"], on["disabledReason"]) == (True, None)
    moved = api.ok("PATCH", "/changing", json={"url": api.receiver.url + "/moved"})
    assert moved["url"].endswith("/moved")
    assert api.call("PATCH", "/changing", json={"url": None}).status_code == 400
    assert api.call("DELETE", "/changing").status_code == 204
    assert api.call("GET", "/changing").status_code == 404
    assert api.call("DELETE", "/changing").status_code == 404


def test_what_is_refused(api: Api) -> None:
    url = api.receiver.url + "/x"
    cases = [
        ({"name": "bad name", "url": url}, 422, None),
        ({"name": "typo", "url": url, "events": ["document.procesed"]}, 400, "unknown_event"),
        ({"name": "creds", "url": "https://u:p@hooks.example/"}, 400, "webhook_url_invalid"),
        ({"name": "ftp", "url": "ftp://hooks.example/"}, 400, "webhook_url_invalid"),
        ({"name": "extra", "url": url, "secret": "mine"}, 422, None),
    ]
    for body, status, code in cases:
        response = api.call("POST", "", json=body)
        assert response.status_code == status, (body, response.text)
        if code:
            assert response.json()["code"] == code
    api.hook("taken")
    again = api.call("POST", "", json={"name": "taken", "url": url})
    assert again.status_code == 409 and again.json()["code"] == "webhook_exists"
    assert api.call("POST", "/missing/test").status_code == 404
    assert api.call("GET", "/missing/deliveries").status_code == 404
    assert api.server.call("GET", URL).status_code == 401
