"""Notifications in the browser (issue 21): Settings never asks the browser's permission
on its own; "Turn on notifications" asks it, and registers the service worker at /sw.js
(served under the UI's CSP, with the whole UI as its scope).

The API served on loopback and Debian's Chromium. Headless Chromium has no push service, so
the subscription itself is test_api_push.py's (against a push-service double).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from autorag.api.app import create_app
from autorag.auth.service import create_user
from autorag.context import open_context
from tests.e2e.web_helpers import browser_page, playwright_sync_api
from tests.workspaces import new_workspace

sync_api = playwright_sync_api()
expect = sync_api.expect

PASSWORD = "a long enough password"
# Counts the page's permission requests (a prompt the user did not ask for is a bug).
COUNT_ASKS = """
window.__permissionAsks = 0;
if (window.Notification) {
  const ask = Notification.requestPermission.bind(Notification);
  Notification.requestPermission = (...args) => {
    window.__permissionAsks += 1;
    return ask(...args);
  };
}
"""
START_TIMEOUT_S = 30.0
REGISTERED = "async () => (await navigator.serviceWorker.getRegistrations()).length"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The API in this process (uvicorn on loopback), an admin made beforehand: quicker
    than ``autorag serve`` and the setup link, which other browser tests cover."""
    workspace = new_workspace(tmp_path_factory.mktemp("web-push"))
    context = open_context(workspace)
    try:
        create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(workspace), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "the API did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_S)
        sock.close()


def test_permission_is_asked_only_when_the_user_turns_notifications_on(url: str) -> None:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.context.grant_permissions(["notifications"], origin=url)
        page.add_init_script(COUNT_ASKS)
        page.goto(f"{url}/#/login")
        page.get_by_label("Username").fill("root")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="New chat", exact=True)).to_be_visible()
        page.get_by_role("link", name="Settings").click()
        card = page.get_by_role("region", name="Notifications")
        turn_on = card.get_by_role("button", name="Turn on notifications")
        expect(turn_on).to_be_visible()
        expect(card.get_by_role("checkbox", name="Backup failed")).to_be_checked()
        assert page.evaluate("window.__permissionAsks") == 0
        assert page.evaluate(REGISTERED) == 0

        turn_on.click()
        page.wait_for_function("window.__permissionAsks === 1")
        page.wait_for_function(REGISTERED)
        scope = page.evaluate("async () => (await navigator.serviceWorker.getRegistration()).scope")
        assert scope == f"{url}/"
        assert errors == []
