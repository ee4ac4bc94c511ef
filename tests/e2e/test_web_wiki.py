"""The wiki in the browser: create an archive and a page whose [[wikilink]] names a page
not written yet, create that page from the link, follow the link, see the backlink with
its sentence, edit (a stale save keeps your text), restore an old version; a page whose
Markdown holds script (a <script> tag, an onerror attribute, a javascript: link) runs
none of it; and a page edit the assistant proposes in chat is applied from its card.

A real ``autorag serve`` and Debian's Chromium (Playwright); the pages are saved through
the real API and indexed by the real embedding model; the model is a scripted
OpenAI-compatible server that calls ``wiki_write``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from autorag.auth.service import create_api_key, create_user
from autorag.context import open_context
from autorag.workspace import init_workspace
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool, Turn
from tests.e2e.web_helpers import Server, browser_page, playwright_sync_api

sync_api = playwright_sync_api()
expect = sync_api.expect

ADMIN, PASSWORD = "ada", "a long enough password"
HOSTILE = (
    "Hostile text, shown as text.\n\n"
    "<script>window.__pwned = 'script'</script>\n\n"
    '<img src="x" onerror="window.__pwned = \'onerror\'">\n\n'
    "[Click me](javascript:window.__pwned='link') and [[Apollo]].\n\n"
    "[A bad escape](#%E0) is a link all the same.\n"
)
PROPOSED = "The plan, as the assistant would have it."


def propose(request: dict[str, Any]) -> Turn:
    """Propose an edit of the launch plan, then say so; asked what the plan says, read
    it with wiki_query and cite it."""
    last = (request.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        if "What does" in str(request.get("messages")):
            return Text("The plan is as the assistant would have it [1].")
        return Text("I drafted that change for you to review.")
    if "What does" in str(last.get("content")):
        return Tool("wiki_query", {"archive": "handbook", "query": "assistant would have it"})
    edit = {"archive": "handbook", "path": "launch-plan", "title": "Launch plan", "body": PROPOSED}
    return Tool("wiki_write", edit)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    root = tmp_path_factory.mktemp("web-wiki")
    model = ScriptedOpenAI(propose).__enter__()
    workspace = init_workspace(root / "kb")
    workspace.write_config(
        {
            "workspace": "default",
            "search_paths": [],
            "llm": {
                "default": "scripted",
                "providers": [
                    {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                     "default_model": "gpt-test", "local": True},
                ],
            },
        }
    )  # fmt: skip
    context = open_context(workspace)
    try:
        create_user(context.catalog, ADMIN, PASSWORD, "admin")
        key = create_api_key(context.catalog, ADMIN, "tests", [])[1]
    finally:
        context.close()
    running = Server(workspace, root / "serve.log")
    try:
        # The server's first embedding loads its model (many seconds on a busy machine):
        # paid here, as by a first search, so that the journey below is the UI's.
        warm = httpx.post(
            f"{running.url}/api/workspaces/default/search",
            headers={"Authorization": f"Bearer {key}"},
            json={"query": "warm up", "mode": "vector"},
            timeout=300,
        )
        assert warm.status_code == 200, warm.text
        yield running, key
    finally:
        running.stop()
        model.__exit__(None, None, None)


def test_write_link_follow_restore_and_no_script(server: tuple[Server, str]) -> None:
    running, key = server
    pages = f"{running.url}/api/workspaces/default/archives/handbook/pages"
    auth = {"Authorization": f"Bearer {key}"}
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(running.url + "/")
        page.get_by_label("Username").fill(ADMIN)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()

        # An archive, then a page linking to one not written yet.
        expect(page.get_by_role("textbox", name="Message")).to_be_visible()  # signed in
        page.get_by_role("link", name="Wiki").click()
        page.get_by_role("button", name="New archive").click()
        dialog = page.get_by_role("dialog", name="New archive")
        dialog.get_by_label("Title").fill("Team handbook")
        dialog.get_by_label("Short name").fill("handbook")
        dialog.get_by_role("button", name="Create archive").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Team handbook")
        page.get_by_role("link", name="New page").first.click()
        page.get_by_label("Title").fill("Apollo")
        page.get_by_label("Text").fill(
            "Apollo launches in May.[^minutes] See [[Launch plan]] for it.\n\n"
            "[^minutes]: The board's minutes, /docs/board.md"
        )
        preview = page.get_by_role("region", name="Preview")
        expect(preview.locator(".wikilink.dangling")).to_have_text("Launch plan")
        page.get_by_role("button", name="Create page").click()
        heading = page.get_by_role("heading", level=1)
        expect(heading).to_have_text("Apollo")
        # A footnote (as synthesis cites its sources): a numbered mark, the note below.
        article = page.locator("article.wiki-body")
        expect(article.locator("sup.footnote-ref")).to_have_text("1")
        expect(article.locator(".footnotes li")).to_contain_text("The board's minutes")
        expect(article).not_to_contain_text("[^minutes]")

        # The missing page is offered, and created from its link.
        missing = page.locator("article.wiki-body a.wikilink.dangling", has_text="Launch plan")
        expect(missing).to_have_attribute("title", "Create this page: Launch plan")
        missing.click()
        expect(page.get_by_label("Title")).to_have_value("Launch plan")
        expect(page.get_by_label("Address")).to_have_value("launch-plan")
        page.get_by_label("Text").fill("First draft of the plan.")
        page.get_by_role("button", name="Create page").click()
        expect(heading).to_have_text("Launch plan")

        # Back on Apollo, the link is a link now; following it, the backlink and its sentence.
        page.locator(".wiki-tree").get_by_role("link", name="Apollo").click()
        expect(heading).to_have_text("Apollo")
        page.locator("article.wiki-body").get_by_role("link", name="Launch plan").click()
        expect(heading).to_have_text("Launch plan")
        backlinks = page.locator(".backlinks")
        expect(backlinks.get_by_role("link", name="Apollo")).to_be_visible()
        expect(backlinks.locator(".context")).to_contain_text("See Launch plan for it.")

        # Edit; someone else saves meanwhile: the stale save says so and keeps the text.
        page.get_by_role("link", name="Edit").click()
        source = page.get_by_label("Text")
        source.fill("Second draft of the plan, for ")
        source.press_sequentially("[[apo")  # completes page titles
        page.get_by_role("option", name="Apollo").click()
        expect(source).to_have_value("Second draft of the plan, for [[Apollo]]")
        theirs = httpx.put(
            f"{pages}/launch-plan",
            headers=auth,
            json={"title": "Launch plan", "body": "Their draft.", "baseVersion": 1},
            timeout=60,
        )
        assert theirs.status_code == 200, theirs.text
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator(".conflict")).to_contain_text(
            "Someone saved this page since you opened it"
        )
        expect(source).to_have_value("Second draft of the plan, for [[Apollo]]")
        page.get_by_role("button", name="Save mine over theirs").click()
        page.get_by_role("dialog").get_by_role("button", name="Save mine").click()
        expect(heading).to_have_text("Launch plan")
        expect(page.locator("article.wiki-body")).to_have_text(
            "Second draft of the plan, for Apollo"
        )

        # History: three versions, the changes between two, and the first restored.
        page.get_by_role("link", name="History").click()
        expect(page.locator(".history-table tbody tr")).to_have_count(3)
        expect(page.locator(".wiki-diff .del")).to_contain_text("Their draft.")
        expect(page.locator(".wiki-diff .add")).to_contain_text("Second draft of the plan")
        page.get_by_role("button", name="Restore version 1").click()
        page.get_by_role("dialog").get_by_role("button", name="Restore").click()
        expect(page.locator("article.wiki-body")).to_have_text("First draft of the plan.")
        expect(page.locator(".page-head .sub")).to_contain_text("Version 4")

        # A page holding script: shown as text, nothing runs, the bad link is no link.
        made = httpx.put(
            f"{pages}/hostile",
            headers=auth,
            json={"title": "Hostile", "body": HOSTILE, "baseVersion": None},
            timeout=60,
        )
        assert made.status_code == 201, made.text
        page.goto(running.url + "/#/wiki/handbook/hostile")
        body = page.locator("article.wiki-body")
        expect(body).to_contain_text("<script>window.__pwned = 'script'</script>")
        expect(body).to_contain_text("onerror=")
        assert body.locator("script, img, [onerror]").count() == 0
        assert page.locator("a[href^='javascript:' i]").count() == 0
        body.get_by_text("Click me").click()
        expect(body.get_by_role("link", name="Apollo")).to_be_visible()
        expect(body.get_by_role("link", name="A bad escape")).to_be_visible()  # no error
        assert page.evaluate("window.__pwned") is None

        # In chat, the assistant proposes an edit: a card with its diff, applied on request.
        page.get_by_role("link", name="Chat").click()
        composer = page.get_by_role("textbox", name="Message")
        composer.fill("Rewrite the launch plan, please.")
        composer.press("Enter")
        card = page.get_by_role("region", name="Proposed wiki page edit")
        expect(card.locator(".wiki-diff .add")).to_contain_text(PROPOSED)
        expect(card.locator(".wiki-diff .del")).to_contain_text("First draft of the plan.")
        assert httpx.get(f"{pages}/launch-plan", headers=auth).json()["version"] == 4
        card.get_by_role("button", name="Apply").click()
        expect(card).to_contain_text("Applied.")
        saved = httpx.get(f"{pages}/launch-plan", headers=auth).json()
        assert (saved["version"], saved["body"]) == (5, PROPOSED)

        # A page the assistant cites opens in the wiki (not a document of the workspace).
        composer.fill("What does the launch plan say?")
        composer.press("Enter")
        answer = page.locator(".msg.assistant").last
        answer.locator(".answer .cite").first.click()
        panel = page.get_by_role("dialog", name="Source")
        expect(panel.get_by_role("link", name="Open document")).to_have_count(0)
        panel.get_by_role("link", name="Open in the wiki").click()
        expect(heading).to_have_text("Launch plan")
        assert page.url.endswith("#/wiki/handbook/launch-plan")
        assert not errors, errors
