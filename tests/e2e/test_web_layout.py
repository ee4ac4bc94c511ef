"""The web UI's layout and words in a real browser (Debian's Chromium, Playwright) against
a real ``autorag serve``: the documents table at 1280 px keeps Size and Added on one line,
a document is a compact card on a 375 px phone, dropdown labels fit, the search's dates
are the documents' own and an empty result says what the dates left out, skills and the
default model are named for people, the phone's empty chat shows no keyboard shortcut,
and P2P is in the menu of admins (and of managers only while P2P runs).

Measured from element boxes, never from timing. Screenshots go to
``tests/e2e/artifacts/layout-*.png`` (git-ignored)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import open_context
from autorag.workspace import Workspace, init_workspace
from tests.e2e.web_helpers import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    Server,
    browser_page,
    page_errors,
    playwright_sync_api,
    sign_in,
)

sync_api = playwright_sync_api()

expect = sync_api.expect
expect.set_options(timeout=20_000)
ADMIN, MANAGER, PASSWORD = "ada", "max", "correct horse battery staple"
# A long name and a long failure reason: what pushes Size and Added onto two lines.
FILES: dict[str, bytes] = {
    "Quarterly lighthouse maintenance report for the northern harbour district.txt": (
        b"The lighthouse lamp is cleaned every Sunday by the harbour crew, and the lens is "
        b"polished each March before the storm season begins in the northern district.\n"
    ),
    "empty notes.txt": b"",
    "scan of the signed harbour lease agreement.pdf": b"%PDF-1.4 damaged beyond repair",
}

# How many lines an element's text takes: its line boxes' distinct tops.
LINES = """(el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  return new Set([...range.getClientRects()].filter((r) => r.width > 0)
    .map((r) => Math.round(r.top))).size;
}"""
# Selects whose chosen label is wider than the box that shows it (cut off).
CUT_SELECTS = """() => [...document.querySelectorAll('select')].filter((s) => s.offsetParent)
  .filter((s) => {
    const style = getComputedStyle(s);
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const label = s.options[s.selectedIndex] ? s.options[s.selectedIndex].text : '';
    const room = s.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return ctx.measureText(label).width > room + 1;
  }).map((s) => s.options[s.selectedIndex].text)"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    workspace = init_workspace(tmp_path_factory.mktemp("layout") / "kb")
    workspace.write_config({"workspace": "default", "search_paths": []})
    context = open_context(workspace)
    try:
        create_user(context.catalog, ADMIN, PASSWORD, "admin")
        create_user(context.catalog, MANAGER, PASSWORD, "manager")
        add_membership(context.catalog, MANAGER, "default")
        _, key = create_api_key(context.catalog, ADMIN, "tests", [])
    finally:
        context.close()
    yield workspace, key


@pytest.fixture(scope="module")
def server(
    workspace: tuple[Workspace, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    running = Server(workspace[0], tmp_path_factory.mktemp("logs") / "serve.log")
    headers = {"Authorization": f"Bearer {workspace[1]}"}
    with httpx.Client(base_url=running.url, headers=headers, timeout=120) as client:
        for name, content in FILES.items():
            sent = client.post("/api/workspaces/default/documents", files={"file": (name, content)})
            assert sent.status_code == 202, sent.text
    _wait_processed(running, workspace[1])
    yield running
    running.stop()


def _wait_processed(server: Server, key: str) -> None:
    """Until no upload is waiting, polled as a client would (at the server's own pace)."""
    headers = {"Authorization": f"Bearer {key}"}
    deadline = time.monotonic() + 300
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        while time.monotonic() < deadline:
            items = client.get("/api/workspaces/default/documents").json()["items"]
            if len(items) == len(FILES) and all(
                d["status"] not in ("pending", "processing") for d in items
            ):
                return
            time.sleep(0.2)
    raise AssertionError("the uploads were not processed in 5 minutes")


def _sign_in(page: Any, server: Server, username: str) -> None:
    sign_in(page, f"{server.url}/#/login", username, PASSWORD)
    expect(page.get_by_role("heading", name="New chat", exact=True)).to_be_visible()


def _open(page: Any, name: str) -> None:
    """A page through the main menu, once its heading shows."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name).click()
    heading = "New chat" if name == "Chat" else name
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"layout-{name}.png"), full_page=True)


def test_layout_and_words(server: Server, workspace: tuple[Workspace, str]) -> None:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        errors = page_errors(page)
        try:
            _sign_in(page, server, ADMIN)
            documents_at_desktop_and_phone(page)
            search_words_and_dates(page)
            settings_words(page)
            empty_chat_on_a_phone(page)
            expect(page.get_by_role("link", name="P2P")).to_be_visible()  # an admin
            page.get_by_role("button", name="Sign out").click()
            _sign_in(page, server, MANAGER)  # P2P is off here: not in a manager's menu
            expect(page.get_by_role("link", name="Documents")).to_be_visible()
            expect(page.get_by_role("link", name="P2P")).to_have_count(0)
        except AssertionError as failed:
            raise AssertionError(f"{failed}\nbrowser errors: {errors}") from failed
        assert not errors, errors


def documents_at_desktop_and_phone(page: Any) -> None:
    page.set_viewport_size(DESKTOP)
    _open(page, "Documents")
    table = page.get_by_role("table", name="Documents")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(len(FILES))
    skipped = table.locator('tr[data-status="skipped"]')
    expect(skipped).to_contain_text("Skipped")
    expect(skipped).to_contain_text("empty notes.txt contains no text")  # not its hash
    expect(table.locator('tr[data-status="failed"]')).to_contain_text("Failed")
    expect(table).to_contain_text("empty notes.txt")  # the original name…
    expect(table).not_to_contain_text("/uploads/")  # …never the internal path
    _shot(page, "documents-1280")
    for cell in table.locator("td.size-cell, td.added-cell").all():
        assert cell.evaluate(LINES) == 1, cell.inner_text()
    wrap = page.locator(".table-wrap.docs-table")
    assert wrap.evaluate("(el) => el.scrollWidth <= el.clientWidth"), "the table overflows"
    assert not page.evaluate(CUT_SELECTS)

    page.set_viewport_size(PHONE)
    expect(rows.first).to_be_visible()
    _shot(page, "documents-375")
    for row in rows.all():
        box = row.bounding_box()
        assert box is not None and box["height"] <= 150, box  # four lines at most, not a screen
        assert box["width"] <= PHONE["width"]
    page.set_viewport_size(DESKTOP)


def search_words_and_dates(page: Any) -> None:
    _open(page, "Search")
    page.get_by_role("searchbox", name="Search query").fill("lighthouse lamp")
    page.get_by_role("searchbox", name="Search query").press("Enter")
    expect(page.get_by_label("Document date from")).to_be_visible()
    expect(page.get_by_text("else when the file was last changed")).to_be_visible()
    hits = page.locator(".hit")
    expect(hits.first).to_contain_text("Quarterly lighthouse maintenance report")
    expect(hits.first.locator(".hit-foot")).not_to_contain_text("score")
    assert not page.evaluate(CUT_SELECTS)
    _shot(page, "search-1280")
    page.set_viewport_size(PHONE)
    page.get_by_text("Filters", exact=True).click()  # folded on a phone
    expect(page.get_by_label("Method")).to_be_visible()
    assert not page.evaluate(CUT_SELECTS)
    page.set_viewport_size(DESKTOP)
    page.get_by_label("Document date from").fill("2030-01-01")
    page.get_by_label("Document date from").dispatch_event("change")
    expect(page.get_by_text("No results with these filters")).to_be_visible()
    expect(page.get_by_text("outside the dates you chose")).to_be_visible()
    _shot(page, "search-outside-dates")


def settings_words(page: Any) -> None:
    _open(page, "Settings")
    skills = page.locator("fieldset.skills")
    expect(skills).to_contain_text("Search your documents")
    expect(skills).not_to_contain_text("rag_search")
    expect(page.get_by_text("The default (built-in extractive)")).to_be_attached()
    expect(page.locator("body")).not_to_contain_text("environment:")
    _shot(page, "settings-1280")
    assert not page.evaluate(CUT_SELECTS)
    page.set_viewport_size(PHONE)
    expect(skills).to_be_visible()
    _shot(page, "settings-375")
    assert not page.evaluate(CUT_SELECTS)
    page.set_viewport_size(DESKTOP)


def empty_chat_on_a_phone(page: Any) -> None:
    _open(page, "Chat")
    hint = page.locator(".chat-empty .hint")
    expect(hint.locator("kbd", has_text="K").first).to_be_visible()  # a keyboard: shown
    page.set_viewport_size(PHONE)
    expect(hint).to_be_visible()
    expect(hint.locator("kbd", has_text="K").first).to_be_hidden()
    _shot(page, "chat-375")
    page.set_viewport_size(DESKTOP)
