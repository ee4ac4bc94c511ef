"""Synthesis in the browser: on an archive, "Synthesise from documents" starts a run
(extractive: no model configured), its page follows the five steps, then shows the
proposed changes as cards: a new page's text, an update's changes, each with the cited
passages (document title, source id, text) beside it; a page edited by a person since
the run read it is marked and left as a conflict when approved; items are approved and
rejected one by one, the rest all at once; at phone width the review list fits the
screen. No console errors, no page errors.

A real ``autorag serve`` (its worker runs the job) and Debian's Chromium (Playwright).
Embeddings come from a loopback OpenAI-compatible double (a vector from each text's
hash): the documents and the approved pages are indexed without loading the local
embedding model, seconds this test does not need (search quality is not its subject)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from autorag.auth.service import create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from autorag.wiki.service import WikiService
from autorag.workspace import init_workspace
from tests.doubles.openai_server import ScriptedOpenAI
from tests.e2e.web_helpers import (
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

ADMIN, PASSWORD = "ada", "a long enough password"
DIM = 8
APOLLO = (
    "# Apollo\n\n"
    "Apollo launches in May from the northern pad. The Apollo crew trains on Mondays.\n\n"
    "# Harbour Lighthouse\n\n"
    "The Harbour Lighthouse is cleaned every Sunday by the harbour crew.\n"
)
LEDGER = "# Ledger Office\n\nThe Ledger Office closes the books on the last Friday of each month.\n"


class EmbeddingDouble(ScriptedOpenAI):
    """The scripted OpenAI-compatible server with ``/v1/embeddings``: each text's vector
    from its hash (deterministic, never zero)."""

    def app(self) -> ASGIApp:
        routes = [*super().app().routes, Route("/v1/embeddings", self._embed, methods=["POST"])]  # type: ignore[attr-defined]
        return Starlette(routes=routes)

    async def _embed(self, request: Request) -> Response:
        texts = (await request.json())["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(t)}
            for i, t in enumerate(texts)
        ]
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": "double",
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [1.0 + digest[i] / 255 for i in range(DIM)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    root = tmp_path_factory.mktemp("web-synth")
    docs = root / "docs"
    docs.mkdir()
    (docs / "apollo.md").write_text(APOLLO, "utf-8")
    (docs / "ledger.md").write_text(LEDGER, "utf-8")
    with EmbeddingDouble() as embeddings:
        workspace = init_workspace(root / "kb")
        workspace.write_config(
            {
                "workspace": "default",
                "search_paths": [str(docs)],
                # A model name of its own: the process-wide provider cache keys by it.
                "embedding": {"provider": "openai", "model": "synth-ui-double",
                              "base_url": embeddings.base_url, "cache": False},
            }
        )  # fmt: skip
        context = open_context(workspace)
        try:
            create_user(context.catalog, ADMIN, PASSWORD, "admin")
            key = create_api_key(context.catalog, ADMIN, "tests", [])[1]
            refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
            wiki = WikiService(context)
            wiki.create_archive("handbook", title="Team handbook", by=ADMIN)
            # A page the documents speak of: its item is an update.
            wiki.save_page(
                "handbook", "apollo", title="Apollo", body="Apollo is our rocket.\n",
                base_version=None, by=ADMIN,
            )  # fmt: skip
        finally:
            context.close()
        running = Server(workspace, root / "serve.log")
        try:
            yield running, key
        finally:
            running.stop()


def test_start_follow_review_approve_and_reject(server: tuple[Server, str]) -> None:
    running, key = server
    auth = {"Authorization": f"Bearer {key}"}
    pages = f"{running.url}/api/workspaces/default/archives/handbook/pages"
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(15_000)
        errors = page_errors(page)
        sign_in(page, running.url + "/#/wiki/handbook", ADMIN, PASSWORD)
        heading = page.get_by_role("heading", level=1)
        expect(heading).to_have_text("Team handbook")

        # Start: every new document, the default model (none configured: extractive).
        page.get_by_role("button", name="Synthesise from documents").click()
        dialog = page.get_by_role("dialog", name="Synthesise from documents")
        expect(dialog.get_by_label("All new documents")).to_be_checked()
        dialog.get_by_role("button", name="Start").click()

        # The run's page follows the steps, then shows the change set.
        expect(heading).to_have_text("Proposed changes")
        expect(page.locator(".synth-extractive")).to_have_text(
            "Written without a model (extractive)"
        )
        review = page.get_by_role("list", name="Proposed changes")
        new_page = review.get_by_role("region", name="New page: Harbour Lighthouse")
        expect(new_page.locator(".synth-text")).to_contain_text("cleaned every Sunday")
        sources = new_page.get_by_role("complementary", name="Sources")
        expect(sources.get_by_role("link", name="Apollo")).to_be_visible()  # the document's title
        expect(sources.locator(".source-id")).to_contain_text("apollo.md")
        expect(sources.locator("blockquote").first).to_contain_text("Harbour Lighthouse is cleaned")
        update = review.get_by_role("region", name="Update: Apollo")
        expect(update.locator(".wiki-diff .add", has_text="Apollo launches in May")).to_be_visible()
        page.locator("summary", has_text="How the run went").click()
        expect(page.locator(".synth-step")).to_have_count(5)
        expect(page.locator(".synth-step.done")).to_have_count(5)
        assert "null" not in page.locator(".wiki-main").inner_text()

        # A person edits Apollo meanwhile: the update is marked, and approving it leaves it.
        theirs = httpx.put(
            f"{pages}/apollo",
            headers=auth,
            json={"title": "Apollo", "body": "Their words.", "baseVersion": 1},
            timeout=30,
        )
        assert theirs.status_code == 200, theirs.text
        page.reload()
        expect(update.locator(".synth-stale")).to_contain_text(
            "Edited since — approving will not overwrite"
        )
        update.get_by_role("button", name="Approve: Apollo").click()
        expect(update).to_contain_text("Not applied: someone saved the page after the run read it")
        assert httpx.get(f"{pages}/apollo", headers=auth).json()["body"] == "Their words."

        # One new page approved, one rejected; the rest all at once.
        new_page.get_by_role("button", name="Approve: Harbour Lighthouse").click()
        expect(new_page.locator(".synth-decision")).to_contain_text("Applied as version 1.")
        expect(page.locator(".wiki-tree")).to_contain_text("Harbour Lighthouse")  # the new page
        ledger = review.get_by_role("region", name="New page: Ledger Office")
        ledger.get_by_role("button", name="Reject: Ledger Office").click()
        expect(ledger.locator(".synth-decision")).to_contain_text("Rejected")
        made = httpx.get(f"{pages}/harbour-lighthouse", headers=auth).json()
        assert made["version"] == 1 and "cleaned every Sunday" in made["body"]
        assert httpx.get(f"{pages}/ledger-office", headers=auth).status_code == 404

        # At phone width the review fits: nothing wider than the screen, buttons in reach.
        page.set_viewport_size(PHONE)
        overflow = page.evaluate(
            "() => [...document.querySelectorAll('.synth-item')]"
            ".filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1).length"
        )
        assert overflow == 0
        approve_all = page.get_by_role("button", name="Approve all")
        approve_all.scroll_into_view_if_needed()
        expect(approve_all).to_be_in_viewport()
        page.set_viewport_size(DESKTOP)

        approve_all.click()
        page.get_by_role("dialog").get_by_role("button", name="Approve all").click()
        expect(page.locator(".synth-summary")).to_contain_text("Every change is decided.")
        expect(page.get_by_role("button", name="Approve all")).to_have_count(0)
        overview = review.get_by_role("region", name="Overview: Overview")
        expect(overview.locator(".synth-decision")).to_contain_text("Applied")

        # The archive's home lists the run among its reviews.
        page.get_by_role("link", name="Team handbook").first.click()
        expect(page.locator(".synth-reviews")).to_contain_text("Run 1")
        assert not errors, errors
