"""Backups in the browser (an admin's page): no backups yet; "Back up now" makes one, its
row says it is in progress then done, with its size, where it went and its log; a check
says it is intact; a scheduled backup is added (its schedule said in words, with its
next run), paused and removed; the restore dialog says what it replaces and restores
nothing until the workspace's name (or RESTORE) is typed, then restores and asks for a
new sign-in. At phone width nothing is wider than the screen. No console errors, no page
errors.

A real ``autorag serve`` on an empty workspace (a backup of it takes a second) and
Debian's Chromium (Playwright). What a restore puts back is test_api_backups.py's."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from autorag.auth.service import create_user
from autorag.context import open_context
from autorag.workspace import init_workspace
from tests.e2e.web_helpers import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Server,
    Shots,
    browser_page,
    page_errors,
    playwright_sync_api,
    sign_in,
)

sync_api = playwright_sync_api()
expect = sync_api.expect

ADMIN, PASSWORD = "ada", "a long enough password"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("web-backups")
    workspace = init_workspace(root / "kb")
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


def test_back_up_check_schedule_and_the_restore_dialog(server: Server) -> None:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(20_000)
        errors = page_errors(page)
        sign_in(page, server.url + "/#/backups", ADMIN, PASSWORD)
        expect(page.get_by_role("heading", level=1)).to_have_text("Backups")
        expect(page.get_by_role("link", name="Backups")).to_have_attribute("aria-current", "page")
        expect(page.get_by_text("No backups yet")).to_be_visible()
        shots = Shots(page, ARTIFACTS / "backups") if _want_shots() else None

        # Back up now: in progress, then done, with where it went and its log.
        page.get_by_role("button", name="Back up now").click()
        runs = page.get_by_role("table", name="Backups")
        row = runs.locator("tbody tr").first
        expect(row.get_by_text("Done")).to_be_visible()
        expect(row).to_contain_text("Started by hand")
        expect(row.locator("td[data-label=Where]")).to_contain_text("/.autorag/backups")
        assert "local:" not in row.inner_text()  # the folder, not the URL's scheme
        expect(row.locator("td[data-label=Size]")).not_to_have_text("—")
        row.get_by_role("button", name="Log").click()
        expect(runs.locator(".log-row pre")).to_contain_text("stored as")
        if shots:
            shots.take("backups")

        # Check it: intact.
        row.get_by_role("button", name="Check").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("The backup is intact")
        dialog.get_by_role("button", name="Close").click()

        # A scheduled backup: its schedule in words and its next run; paused; removed.
        form = page.get_by_role("form", name="Add a scheduled backup")
        form.get_by_label("Name").fill("nightly")
        form.get_by_label("When").fill("30 2 * * *")
        expect(form).to_contain_text("Every day at 02:30.")
        form.get_by_label("When").fill("0 25 * * *")
        form.get_by_label("Where", exact=True).fill(str(server.log.parent / "nightly"))
        form.get_by_role("button", name="Add schedule").click()
        expect(form).to_contain_text("not a valid schedule")  # the server's reason, and…
        expect(form).to_contain_text("higher than the maximum value (23)")
        form.get_by_label("When").fill("30 2 * * *")
        form.get_by_role("button", name="Add schedule").click()
        jobs = page.get_by_role("table", name="Scheduled backups")
        job = jobs.locator("tr[data-job=nightly]")
        expect(job).to_contain_text("Every day at 02:30")
        expect(job).to_contain_text("Next:")
        expect(job).to_contain_text("30 days")
        job.get_by_label("Run nightly on schedule").uncheck()
        expect(job).to_contain_text("Paused")
        if shots:
            shots.take("jobs")
        job.get_by_role("button", name="Remove nightly").click()
        page.get_by_role("dialog").get_by_role("button", name="Remove").click()
        expect(page.get_by_text("No scheduled backups")).to_be_visible()

        # At phone width nothing is wider than the screen.
        page.set_viewport_size(PHONE)
        wide = page.evaluate(
            "() => [...document.querySelectorAll('.page *')]"
            ".filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1).length"
        )
        assert wide == 0
        page.set_viewport_size(DESKTOP)

        # The restore dialog: what it replaces; nothing until the name is typed; then the
        # restore, and a new sign-in.
        row.get_by_role("button", name="Restore").click()
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Everything on this server is replaced by the backup")
        expect(dialog).to_contain_text("A safety copy of what is here now is made first")
        restore = dialog.get_by_role("button", name="Restore")
        expect(restore).to_be_disabled()
        typed = dialog.get_by_label("Type default or RESTORE to confirm")
        typed.fill("defaul")
        expect(restore).to_be_disabled()
        typed.fill("RESTORE")
        expect(restore).to_be_enabled()
        if shots:
            shots.take("restore-dialog")
        restore.click()
        expect(dialog).to_contain_text("The backup was restored.", timeout=60_000)
        expect(dialog.get_by_role("heading")).to_have_text("Backup restored")
        expect(dialog).to_contain_text("A safety copy of what was here is kept")
        if shots:
            shots.take("restored")
        dialog.get_by_role("button", name="Sign in again").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        expect(page.get_by_text("The backup was restored. Sign in again.")).to_be_visible()
        # The one error the browser logs is the refused schedule's answer (422).
        assert [e for e in errors if "status of 422" not in e] == [], errors


def _want_shots() -> bool:
    """Screenshots in four looks, for a person reviewing the page (AUTORAG_SHOTS=1)."""
    return os.environ.get("AUTORAG_SHOTS") == "1"
