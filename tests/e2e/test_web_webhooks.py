"""Webhooks in the browser (an admin's page): none yet; one added shows its secret once,
with a copy button; a test event reaches a real receiver on loopback, signed with that
secret, and the log says it was delivered; a new secret made (shown once, the next test
signed with it); switched off. No console or page errors.

A real ``autorag serve`` (``webhooks.allow_private`` on, to reach the receiver) and
Debian's Chromium (Playwright)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from autorag.auth.service import create_user
from autorag.context import open_context
from autorag.workspace import init_workspace
from tests.doubles.webhook_receiver import Receiver, running_receiver
from tests.e2e.web_helpers import Server, browser_page, page_errors, playwright_sync_api, sign_in

sync_api = playwright_sync_api()
expect = sync_api.expect

ADMIN, PASSWORD = "ada", "a long enough password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("web-webhooks")
    workspace = init_workspace(root / "kb")
    workspace.write_config({**workspace.read_config(), "webhooks": {"allow_private": True}})
    context = open_context(workspace)
    try:
        create_user(context.catalog, ADMIN, PASSWORD, "admin")
    finally:
        context.close()
    running = Server(workspace, root / "serve.log")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_add_copy_the_secret_test_and_switch_off(server: Server, receiver: Receiver) -> None:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(20_000)
        errors = page_errors(page)
        sign_in(page, server.url + "/#/webhooks", ADMIN, PASSWORD)
        expect(page.get_by_role("heading", level=1)).to_have_text("Webhooks")
        expect(page.get_by_text("No webhooks yet")).to_be_visible()

        form = page.get_by_role("form", name="Add a webhook")
        form.get_by_label("Name", exact=True).fill("ci")
        form.get_by_label("URL", exact=True).fill(receiver.url + "/ci")
        form.get_by_role("button", name="Add webhook").click()
        dialog = page.get_by_role("dialog")
        secret_box = dialog.get_by_label("Webhook secret")
        expect(secret_box).to_have_value(re.compile(r"^whsec_[A-Za-z0-9_-]{43}$"))
        secret = secret_box.input_value()
        assert secret.startswith("whsec_")
        receiver.secrets["/ci"] = secret
        expect(dialog.get_by_role("button", name="Copy")).to_be_visible()
        dialog.get_by_role("button", name="Done").click()

        row = page.get_by_role("table", name="Webhooks").locator("tr[data-webhook=ci]")
        expect(row).to_contain_text("Every event")
        assert secret not in page.content()  # shown once: gone with its dialog
        row.get_by_role("button", name="Send a test event to ci").click()
        expect(page.get_by_text("Test event delivered")).to_be_visible()
        (got,) = receiver.at("/ci")
        assert got.signed and got.json["event"] == "webhook.test"
        row = page.get_by_role("table", name="Webhooks").locator("tr[data-webhook=ci]")
        row.get_by_role("button", name="Log").click()
        expect(page.get_by_role("table", name="Deliveries")).to_contain_text("Delivered (200)")

        row.get_by_role("button", name="New secret for ci").click()
        page.get_by_role("dialog").get_by_role("button", name="Make a new secret").click()
        dialog = page.get_by_role("dialog", name="New secret for “ci”")
        rotated = dialog.get_by_label("Webhook secret")
        expect(rotated).to_have_value(re.compile(r"^whsec_"))
        new_secret = rotated.input_value()
        assert new_secret != secret
        receiver.secrets["/ci"] = new_secret
        dialog.get_by_role("button", name="Done").click()
        row.get_by_role("button", name="Send a test event to ci").click()
        deadline = time.monotonic() + 20  # a bound, not a measure
        while len(receiver.at("/ci")) < 2:
            assert time.monotonic() < deadline, "the second test event never arrived"
            time.sleep(0.05)
        assert receiver.at("/ci")[-1].signed

        row.get_by_label("Send events to ci").uncheck()
        expect(page.get_by_text("ci is off.")).to_be_visible()
        assert not errors, errors
