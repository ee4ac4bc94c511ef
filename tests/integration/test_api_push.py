"""Web Push over HTTP (issue 21): the public VAPID key, a browser subscribing and
unsubscribing (only its own), the topics it follows, a test notification that the
push-service double decrypts, and the service worker at /sw.js.

The server runs with ``webhooks.allow_private`` so that the double on loopback (plain
http) may be an endpoint; the refusals of endpoints into the LAN are test_push.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp
from tests.doubles.push_service import PushServiceDouble
from tests.integration.conftest import ApiServer, LaunchApi, bearer

from autorag.auth import service
from autorag.context import AppContext

PASSWORD = "a long enough password"


@dataclass
class Api:
    server: ApiServer
    double: PushServiceDouble
    tokens: dict[str, str]

    def call(self, method: str, path: str, who: str | None, **kwargs: Any) -> httpx.Response:
        headers = {**kwargs.pop("headers", {}), **bearer(self.tokens.get(who or ""))}
        return httpx.request(method, self.server.url + path, headers=headers, **kwargs)


def _prepare(context: AppContext) -> None:
    service.create_user(context.catalog, "root", PASSWORD, "admin")
    service.create_user(context.catalog, "mem", PASSWORD, "member")
    config = context.workspace.read_config()
    context.workspace.write_config({**config, "webhooks": {"allow_private": True}})


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory,
    launch_api: LaunchApi,
    serve_asgi: Callable[[ASGIApp], str],
) -> Api:
    server = launch_api(tmp_path_factory.mktemp("push-api"), _prepare)
    key = server.call("GET", "/api/push/vapid-key").json()["publicKey"]
    double = PushServiceDouble(expect_key=key)
    double.url = serve_asgi(double.app)
    tokens = {}
    for name in ("root", "mem"):
        body = {"username": name, "password": PASSWORD}
        tokens[name] = server.call("POST", "/api/auth/login", json=body).json()["access_token"]
    return Api(server, double, tokens)


def test_the_vapid_key_is_public_and_stable(api: Api) -> None:
    first = api.call("GET", "/api/push/vapid-key", None)
    assert first.status_code == 200
    assert first.json()["enabled"] is True
    assert len(first.json()["publicKey"]) == 87  # base64url of an uncompressed P-256 point
    assert api.call("GET", "/api/push/vapid-key", "mem").json() == first.json()
    assert "private" not in first.text.lower()


def test_subscribe_choose_topics_test_and_unsubscribe(api: Api) -> None:
    browser = api.double.new_browser()
    made = api.call(
        "POST",
        "/api/push/subscribe",
        "mem",
        json={**browser.subscription(), "expirationTime": None},
        headers={"User-Agent": "TestBrowser/1"},
    )
    assert made.status_code == 201, made.text
    assert made.json()["userAgent"] == "TestBrowser/1"
    assert "endpoint" not in made.json()

    mine = api.call("GET", "/api/push/preferences", "mem").json()
    assert mine["subscriptions"] == 1
    assert {t["topic"]: t["applies"] for t in mine["topics"]} == {
        "approvals": False,
        "upload_failed": True,
        "backup_failed": False,
        "synthesis_ready": False,
    }
    changed = api.call(
        "PUT", "/api/push/preferences", "mem", json={"topics": {"upload_failed": False}}
    )
    assert changed.status_code == 200
    assert [t["enabled"] for t in changed.json()["topics"]] == [True, False, True, True]
    unknown = api.call("PUT", "/api/push/preferences", "mem", json={"topics": {"nope": True}})
    assert unknown.status_code == 400

    assert api.call("POST", "/api/push/test", "mem", json={}).status_code == 403
    sent = api.call("POST", "/api/push/test", "root", json={"usernames": ["mem"]})
    assert sent.json() == {"sent": 1, "removed": 0, "failed": 0, "refused": 0}
    [payload] = api.double.payloads(browser)
    assert payload["event"] == "push.test" and payload["url"] == "/#/settings"
    missing = api.call("POST", "/api/push/test", "root", json={"usernames": ["ghost"]})
    assert missing.status_code == 404

    endpoint = {"endpoint": browser.endpoint}
    assert api.call("DELETE", "/api/push/subscribe", "root", json=endpoint).status_code == 404
    assert api.call("DELETE", "/api/push/subscribe", "mem", json=endpoint).status_code == 204
    assert api.call("DELETE", "/api/push/subscribe", "mem", json=endpoint).status_code == 404
    assert api.call("GET", "/api/push/preferences", "mem").json()["subscriptions"] == 0


@pytest.mark.parametrize(
    "endpoint",
    ["http://93.184.216.34/push/x", "https://user:pw@93.184.216.34/x", "javascript:alert(1)"],
)
def test_an_endpoint_that_is_no_push_service_is_refused(api: Api, endpoint: str) -> None:
    browser = api.double.new_browser()
    body = {"endpoint": endpoint, "keys": {"p256dh": browser.p256dh, "auth": browser.auth}}
    response = api.call("POST", "/api/push/subscribe", "mem", json=body)
    assert response.status_code in (400, 422), response.text


def test_subscribing_needs_a_login(api: Api) -> None:
    browser = api.double.new_browser()
    response = api.call("POST", "/api/push/subscribe", None, json=browser.subscription())
    assert response.status_code == 401


def test_the_service_worker_is_served_at_the_root(api: Api) -> None:
    response = api.call("GET", "/sw.js", None)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["service-worker-allowed"] == "/"
    assert "showNotification" in response.text and "notificationclick" in response.text
