"""``GET /api/events`` on a real server: the log newest first, or after an id oldest
first, filtered; admins only. And the whole way out: a change made through the API is
committed with its event, which the server's dispatcher delivers to a webhook on
loopback (signed) without being asked."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp
from tests.doubles.webhook_receiver import Receiver, running_receiver
from tests.integration.conftest import ApiServer
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth import service
from autorag.context import open_context

PASSWORD = "a long enough password"
DEADLINE_S = 30.0


@dataclass(frozen=True)
class Api:
    server: ApiServer
    admin: str  # a password login
    member: str
    receiver: Receiver

    def get(self, path: str, credential: str | None = None, **params: Any) -> httpx.Response:
        return self.server.call("GET", path, credential or self.admin, params=params)


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    # Private targets allowed: the receiver listens on loopback.
    workspace = new_workspace(
        tmp_path_factory.mktemp("events") / "kb", webhooks={"allow_private": True}
    )
    context = open_context(workspace)
    try:
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "mia", PASSWORD, "member")
    finally:
        context.close()
    app = create_app(workspace, server={"login_attempts_per_minute": 10_000})
    server = ApiServer(serve_asgi(app), app, workspace, None)
    tokens = [
        server.call("POST", "/api/auth/login", json={"username": u, "password": PASSWORD})
        for u in ("root", "mia")
    ]
    with running_receiver() as receiver:
        yield Api(server, *(t.json()["access_token"] for t in tokens), receiver)


def test_a_change_through_the_api_reaches_a_webhook(api: Api) -> None:
    hook = {"name": "ops", "url": api.receiver.url + "/ops", "events": ["user.created"]}
    made = api.server.call("POST", "/api/webhooks", api.admin, json=hook)
    assert made.status_code == 201, made.text
    api.receiver.secrets["/ops"] = made.json()["secret"]
    body = {"username": "nina", "password": PASSWORD, "role": "member"}
    created = api.server.call("POST", "/api/users", api.admin, json=body)
    assert created.status_code == 201, created.text

    deadline = time.monotonic() + DEADLINE_S
    while not api.receiver.at("/ops"):
        assert time.monotonic() < deadline, "the webhook was not called"
        time.sleep(0.02)
    (delivery,) = api.receiver.at("/ops")
    assert delivery.signed and delivery.headers["x-webhook-event"] == "user.created"
    data = delivery.json["data"]
    assert (data["username"], data["role"], type(data["user"])) == ("nina", "member", int)
    logged = api.get("/api/events", name="user.created", limit=1).json()["events"]
    assert logged[0]["id"] == delivery.json["id"] and logged[0]["data"]["username"] == "nina"
    assert logged[0]["actor"] == "root"  # the admin who made the user


def test_listing_filters_and_pages_forward(api: Api) -> None:
    everything = api.get("/api/events").json()["events"]
    ids = [e["id"] for e in everything]
    assert ids == sorted(ids, reverse=True) and len(ids) >= 2  # newest first
    assert {"user.created"} <= {e["event"] for e in everything}
    first = ids[-1]
    forward = api.get("/api/events", afterId=first).json()["events"]
    assert [e["id"] for e in forward] == sorted(ids)[1:]  # after it, oldest first
    named = api.get("/api/events", name="user.created").json()["events"]
    assert named and {e["event"] for e in named} == {"user.created"}
    assert api.get("/api/events", workspace="nowhere").json()["events"] == []
    assert api.get("/api/events", since="2999-01-01T00:00:00Z").json()["events"] == []
    assert len(api.get("/api/events", limit=1).json()["events"]) == 1
    for event in everything:
        assert set(event) == {"id", "event", "occurredAt", "workspace", "actor", "data"}


def test_bad_queries_and_who_may_read(api: Api) -> None:
    assert api.get("/api/events", name="user.creatd").status_code == 400
    assert api.get("/api/events", limit=0).status_code in (400, 422)
    assert api.get("/api/events", api.member).status_code == 403
    assert api.server.call("GET", "/api/events").status_code == 401
    names = api.get("/api/events/names").json()["names"]
    assert {"name": "document.processed", "description": names[0]["description"]} in names
