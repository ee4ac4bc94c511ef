"""The settings pages in the browser: OCR (instructions saved; a job waiting for review
previewed and approved), the chat's "Show DLP texts" toggle (an admin with a password
login sees the original of a redacted question, each reveal audited, and hides it
again; a member has no toggle), and Settings → Maintenance (re-index every workspace:
confirmed, its progress followed to done). And the Documents page's "Add a YouTube
video" (YouTube answered from the recorded files of tests/fixtures/youtube): a video
without captions refused with the reason, one added, the chat's citation of it opening
the video at the passage's second. No console or page errors.

The server is the one ``autorag serve`` runs (``create_app``, warming up as it starts),
served by uvicorn on loopback inside the test process, so the embedding model loads once
for the process (as the integration tests' servers do), not in a new one; Debian's
Chromium (Playwright), one browser for the module.
The OCR job waiting for review is made in the catalog, as the authorization matrix makes
its own (reading a real scan is test_api_ocr.py's): the worker that claims its queue job
finds it waiting and leaves it be."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy import update

from autorag.api.app import create_app
from autorag.api.routes.youtube import transcript_session
from autorag.auth.service import add_membership, create_user
from autorag.context import open_context
from autorag.ocr import store as ocr_store
from autorag.store.catalog.models import OcrJobRow
from autorag.workspace import Workspace, init_workspace
from autorag.youtube.urls import passage_second
from tests.doubles.youtube import RecordedYouTube, recorded_session
from tests.e2e.web_helpers import CHROMIUM, CHROMIUM_FLAGS, DESKTOP, playwright_sync_api

sync_api = playwright_sync_api()
expect = sync_api.expect

ADMIN, MEMBER, PASSWORD = "ada", "mo", "a long enough password"
EMAIL = "jane.doe@example.com"
PAGE_TEXT = "Invoice 2041: three tapirs delivered to the zoo."
WAIT_S = 60.0
TEA, NO_CAPTIONS = "kT3aHx9_wQo", "nOcApTi0nS1"  # recorded videos (tests/fixtures/youtube)
TEA_TITLE = "How to Whisk Matcha — A Japanese Tea Ceremony"


class Server:
    """``autorag serve``'s app under uvicorn on a free loopback port, in a thread."""

    def __init__(self, workspace: Workspace) -> None:
        # Bound here and handed over, so no other process takes the port meanwhile.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.app = app = create_app(workspace, warm=True)
        # YouTube is out of reach here: its answers come from the recorded files.
        app.dependency_overrides[transcript_session] = lambda: recorded_session(RecordedYouTube())
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + WAIT_S
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "no server"
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)
        self.sock.close()


@dataclass
class World:
    server: Server
    token: str  # the admin's password login, for checks the pages do not show
    document_id: int  # uploaded as the module starts, processed while the browser starts
    job_id: int  # an OCR job over it, waiting for review

    def api(self, method: str, path: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"}
        response = httpx.request(method, self.server.url + path, headers=headers, timeout=60, **kw)
        assert response.is_success, response.text
        return response.json()

    def wait_ready(self) -> None:
        """The document processed (the server's embedding model loaded meanwhile)."""
        deadline = time.monotonic() + WAIT_S
        path = f"/api/workspaces/default/documents/{self.document_id}"
        while (status := self.api("GET", path)["status"]) not in ("ready", "failed"):
            assert time.monotonic() < deadline, "the document was never processed"
            time.sleep(0.1)
        assert status == "ready"


def _review_job(workspace: Workspace, document_id: int) -> int:
    context = open_context(workspace)
    try:
        engine = context.catalog.engine
        with engine.begin() as conn:
            job_id = ocr_store.create_job(
                conn, context.info.id, document_id, [1], mode="auto", max_pages=1
            )
            conn.execute(
                update(OcrJobRow)
                .where(OcrJobRow.id == job_id)
                .values(status="review", reason="below the quality bar")
            )
        values = {"status": "low", "engine": "tesseract", "confidence": 0.4,
                  "credibility": 0.5, "chars": len(PAGE_TEXT), "text": PAGE_TEXT}  # fmt: skip
        ocr_store.save_page(engine, job_id, 1, values)
    finally:
        context.close()
    return job_id


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("web-settings")
    workspace = init_workspace(root / "kb")
    context = open_context(workspace)
    try:
        create_user(context.catalog, ADMIN, PASSWORD, "admin")
        create_user(context.catalog, MEMBER, PASSWORD, "member")
        add_membership(context.catalog, MEMBER, "default")
    finally:
        context.close()
    server = Server(workspace)
    try:
        login = httpx.post(
            server.url + "/api/auth/login", json={"username": ADMIN, "password": PASSWORD}
        )
        world = World(server, login.json()["access_token"], 0, 0)
        # Not waited for here: the browser starts while the server loads its model.
        files = {"file": ("tapirs.txt", b"Tapirs browse in the forest at night.")}
        world.document_id = world.api("POST", "/api/workspaces/default/documents", files=files)[
            "id"
        ]
        world.job_id = _review_job(workspace, world.document_id)
        yield world
    finally:
        server.stop()


def _sign_in(page: Any, url: str, username: str) -> None:
    page.goto(url)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_ocr_dlp_toggle_and_maintenance(world: World) -> None:
    url = world.server.url
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            admin = browser.new_context(viewport=DESKTOP, locale="en-US").new_page()
            admin.set_default_timeout(20_000)
            errors: list[str] = []
            admin.on("pageerror", lambda error: errors.append(str(error)))
            admin.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            _sign_in(admin, url + "/#/ocr", ADMIN)
            _ocr_page(admin, world)
            _dlp_toggle(admin, world)
            _maintenance(admin)
            assert not errors, errors

            member = browser.new_context(viewport=DESKTOP, locale="en-US").new_page()
            member.set_default_timeout(20_000)
            _sign_in(member, url + "/#/chat", MEMBER)
            expect(member.get_by_role("textbox", name="Message")).to_be_visible()
            expect(member.get_by_role("button", name="Show DLP texts")).to_have_count(0)
        finally:
            browser.close()


def _ocr_page(page: Any, world: World) -> None:
    expect(page.get_by_role("heading", level=1)).to_have_text("OCR")
    instructions = page.get_by_label("Instructions", exact=True)
    instructions.fill("Transcribe tables row by row.")
    page.get_by_role("button", name="Save instructions").click()
    expect(page.get_by_text("Instructions saved.")).to_be_visible()
    saved = world.api("GET", "/api/workspaces/default/ocr/instructions")
    assert saved == {"instructions": "Transcribe tables row by row."}

    row = page.locator(f"tr[data-job='{world.job_id}']")
    expect(row).to_contain_text("Waiting for review")
    row.get_by_role("button", name="Preview").click()
    expect(page.get_by_text(PAGE_TEXT)).to_be_visible()
    world.wait_ready()  # approving indexes the text, beside the document's own
    row.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("approved: its text is indexed")).to_be_visible()
    expect(page.locator(f"tr[data-job='{world.job_id}']")).to_contain_text("Indexed")
    job = world.api("GET", f"/api/workspaces/default/ocr/jobs/{world.job_id}")
    assert (job["status"], job["reviewedBy"]) == ("indexed", ADMIN)


def _dlp_toggle(page: Any, world: World) -> None:
    asked = world.api(
        "POST", "/api/workspaces/default/chat", json={"message": f"Mail {EMAIL} about tapirs"}
    )
    page.goto(f"{world.server.url}/#/chat/{asked['chatId']}")
    question = page.locator(".msg.user[data-dlp-ref]").first
    expect(question).to_contain_text("[REDACTED]")
    assert EMAIL not in page.content()
    page.get_by_role("button", name="Show DLP texts").click()
    expect(question).to_contain_text(EMAIL)
    reveals = world.api("GET", "/api/dlp/matches", params={"event": "dlp.revealed"})["items"]
    assert len(reveals) >= 1, reveals  # each reveal is audited by the reveal API
    page.get_by_role("button", name="Hide DLP texts").click()
    expect(question).to_contain_text("[REDACTED]")
    assert EMAIL not in page.content()


def _maintenance(page: Any) -> None:
    page.goto(page.url.split("#")[0] + "#/settings")
    card = page.get_by_role("region", name="Maintenance")
    card.get_by_role("button", name="Re-index all workspaces").click()
    page.get_by_role("dialog").get_by_role("button", name="Re-index").click()
    expect(card.get_by_role("status")).to_contain_text("Re-index finished: 1 of 1 workspaces done")
    expect(card.locator("li[data-workspace=default]")).to_contain_text("Done")


def test_a_youtube_video_is_added_and_its_citation_opens_at_the_second(world: World) -> None:
    """The Documents page adds a video by its link (one without captions refused with
    the reason); the chat's citation of it opens the video at the passage's second."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_context(viewport=DESKTOP, locale="en-US").new_page()
            page.set_default_timeout(30_000)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            _sign_in(page, world.server.url + "/#/documents", ADMIN)
            form = page.get_by_role("form", name="Add a YouTube video")
            form.get_by_label("Add a YouTube video").fill(f"https://youtu.be/{NO_CAPTIONS}")
            form.get_by_role("button", name="Add video").click()
            expect(form.get_by_role("alert")).to_contain_text("its uploader turned captions off")
            form.get_by_label("Add a YouTube video").fill(f"https://www.youtube.com/watch?v={TEA}")
            form.get_by_role("button", name="Add video").click()
            expect(form.get_by_role("status")).to_contain_text(f"Added “{TEA_TITLE}”")

            page.goto(world.server.url + "/#/chat")
            composer = page.get_by_role("textbox", name="Message")
            composer.fill("How many prongs does the chasen bamboo whisk have?")
            composer.press("Enter")
            answer = page.locator(".msg.assistant").last
            answer.locator(".answer .cite").first.click()
            panel = page.get_by_role("dialog", name="Source")
            expect(panel).to_contain_text(TEA_TITLE)
            watch = panel.get_by_role("link", name="Watch from here")
            link = re.compile(rf"^https://www\.youtube\.com/watch\?v={TEA}&t=(\d+)s$")
            expect(watch).to_have_attribute("href", link)
            passage = panel.get_by_label("Passage").inner_text()
            second = link.match(watch.get_attribute("href") or "")
            assert second is not None and int(second.group(1)) == passage_second(passage)
            assert not errors, errors
        finally:
            browser.close()
