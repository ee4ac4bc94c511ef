"""The web UI in a real browser (Debian's Chromium driven by Playwright) against a real
``autorag serve`` on loopback: first-run setup, login, uploads, streamed and cited
answers, stopping an answer, switching model (and falling back), DLP, P2P approvals.

Screenshots of every step, light and dark, desktop and phone, are written to
``tests/e2e/artifacts/`` (git-ignored).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from autorag.p2p.approvals import Approvals, PendingSource
from autorag.p2p.registry import PeerRegistry
from autorag.p2p.simplex.shapes import Contact, Profile
from autorag.workspace import Workspace, init_workspace
from tests.doubles.openai_server import ScriptedOpenAI
from tests.e2e.web_helpers import (
    DESKTOP,
    SCRIPTED_ANSWER,
    Server,
    Shots,
    browser_page,
    free_port,
    playwright_sync_api,
    scripted_turn,
)
from tests.samples import write_docx, write_pdf

sync_api = playwright_sync_api()

expect = sync_api.expect
expect.set_options(timeout=15_000)
ADMIN, PASSWORD = "ada", "correct horse battery staple"
SCRIPTED = "scripted/slow-model"
EXTRACTIVE = "extractive/extractive"
OFFLINE = "offline/ghost"
PDF_PAGES = [
    "Refund policy\nCustomers may return unused items within 30 days of delivery.\n"
    "Refunds go back to the original payment method within five business days.",
    "Exchanges\nExchanges are free of charge for items of the same value.",
]
DOCX_PARAGRAPHS = [
    "Parcels ship from the Rotterdam warehouse every weekday morning.",
    "Support ticket TCK-123456 tracks refund disputes for damaged parcels.",
]


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(scripted_turn, models=("slow-model",)) as server:
        yield server


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, model: ScriptedOpenAI) -> Workspace:
    workspace = init_workspace(tmp_path_factory.mktemp("web") / "kb")
    workspace.write_config(
        {
            "workspace": "default",
            "search_paths": [],
            "llm": {
                "default": "extractive",
                "poll_seconds": 5,
                "providers": [
                    {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                     "models": ["slow-model"], "default_model": "slow-model"},
                    # Nothing listens there: chosen, it falls back.
                    {"name": "offline", "kind": "openai", "default_model": "ghost",
                     "base_url": f"http://127.0.0.1:{free_port()}/v1", "timeout_s": 2},
                ],
            },
        }
    )  # fmt: skip
    return workspace


@pytest.fixture(scope="module")
def server(workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(workspace, tmp_path_factory.mktemp("logs") / "serve.log")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("docs")
    return {
        "pdf": write_pdf(folder / "refund-policy.pdf", PDF_PAGES),
        "docx": write_docx(folder / "shipping-guide.docx", DOCX_PARAGRAPHS),
    }


@pytest.fixture(scope="module")
def page(server: Server) -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(20_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if _error(message) else None)
        page.errors = errors
        yield page


def _error(message: Any) -> bool:
    """A console error, other than the browser's note of an HTTP error answer (the test
    provokes 401s and 400s on purpose; the UI shows them)."""
    return bool(message.type == "error" and "Failed to load resource" not in message.text)


# -- the server side of the UI, without a browser --------------------------------------------
def test_the_ui_is_served_with_a_strict_policy(server: Server) -> None:
    index = httpx.get(f"{server.url}/")
    assert index.status_code == 200 and '<script type="module" src="/ui/main.js">' in index.text
    policy = index.headers["content-security-policy"]
    assert "script-src 'sha256-" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    setup = httpx.get(f"{server.url}/setup")
    assert "Create the first admin" in setup.text and setup.headers["cache-control"] == "no-store"
    module = httpx.get(f"{server.url}/ui/chat.js")
    assert module.status_code == 200 and "javascript" in module.headers["content-type"]
    assert module.headers["cache-control"] == "no-cache" and module.headers["etag"]
    again = httpx.get(f"{server.url}/ui/chat.js", headers={"If-None-Match": module.headers["etag"]})
    assert again.status_code == 304
    for missing in ("/ui/nope.js", "/ui/..%2Fapp.css", "/ui/.hidden"):
        answer = httpx.get(f"{server.url}{missing}")
        assert answer.status_code in (404, 422), missing
        assert answer.headers["content-type"] == "application/problem+json"
    # Nothing is fetched from elsewhere: every asset the page names is served here.
    for asset in re.findall(r'(?:src|href)="(/ui/[^"]+)"', index.text):
        assert httpx.get(f"{server.url}{asset}").status_code == 200, asset


# -- the whole journey in a browser ----------------------------------------------------------
def test_web_ui_journey(
    page: Any,
    server: Server,
    workspace: Workspace,
    model: ScriptedOpenAI,
    documents: dict[str, Path],
) -> None:
    shots = Shots(page)
    setup_and_login(page, server, shots)
    upload_documents(page, documents, shots)
    ask_with_citations(page, shots)
    stream_switch_and_stop(page, model, shots)
    fall_back_and_undo(page, shots)
    manage_users_and_keys(page, shots)
    redact_with_a_new_pattern(page, shots)
    approve_a_peer_request(page, workspace, shots)
    settings_and_palette(page, shots)
    assert not page.errors, page.errors


def setup_and_login(page: Any, server: Server, shots: Shots) -> None:
    page.goto(server.setup_url())
    expect(page.get_by_role("heading", name="Create the first admin", exact=True)).to_be_visible()
    assert "token=" not in page.url  # taken out of the address bar at once
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Repeat the password").fill(PASSWORD + "!")
    page.get_by_role("button", name="Create admin and sign in").click()
    expect(page.get_by_text("The passwords differ.")).to_be_visible()
    page.get_by_label("Repeat the password").fill(PASSWORD)
    shots.take("setup")
    page.get_by_role("button", name="Create admin and sign in").click()
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
    assert page.url.endswith("/#/documents")

    # Sign out, then in again: a wrong password first.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in", exact=True)).to_be_visible()
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill("wrong password!")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("That username and password do not match.")).to_be_visible()
    shots.take("login-error")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="New chat", exact=True)).to_be_visible()
    token = page.evaluate("JSON.parse(sessionStorage.getItem('autorag.session')).token")
    assert token and not token.startswith("ark_")

    # A token the server no longer accepts: back to the login, then back where we were.
    # The page is opened anew with it (the tab's session storage keeps it): swapped under
    # the chat page, whichever of its own requests was still on its way would be answered
    # 401 first and end the session there, not on Documents (networkidle cannot tell:
    # a page whose address only changes after the # never loads again).
    page.evaluate(
        "const s = JSON.parse(sessionStorage.getItem('autorag.session'));"
        "sessionStorage.setItem('autorag.session', JSON.stringify({...s, token: 'expired'}))"
    )
    page.goto(server.url + "/#/documents")
    expect(page.get_by_text("Your session has ended. Sign in again to continue.")).to_be_visible()
    page.get_by_label("Username").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()


def upload_documents(page: Any, documents: dict[str, Path], shots: Shots) -> None:
    page.get_by_role("link", name="Documents").click()
    expect(page.get_by_text("No documents yet")).to_be_visible()
    shots.take("documents-empty")
    # The PDF through the file picker, the DOCX dropped onto the page.
    page.locator("input[type=file]").set_input_files(str(documents["pdf"]))
    drop(page, documents["docx"], ".documents-page")
    rows = page.locator(".upload")
    expect(rows).to_have_count(2)
    expect(page.locator(".upload progress").first).to_be_attached()
    for name in ("refund-policy.pdf", "shipping-guide.docx"):
        row = page.locator(f'.upload[data-name="{name}"]')
        expect(row).to_have_attribute("data-state", "ready", timeout=120_000)
        expect(row).to_contain_text("Ready")
    table = page.get_by_role("table", name="Documents")
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator('tr[data-status="ready"]')).to_have_count(2)
    # The same file again: a duplicate, not a second document.
    page.locator("input[type=file]").set_input_files(str(documents["pdf"]))
    expect(page.locator(".upload.duplicate")).to_contain_text("Already in this workspace")
    # A type that is not accepted fails with its reason, the rest carries on.
    page.locator("input[type=file]").set_input_files(
        [{"name": "notes.exe", "mimeType": "application/octet-stream", "buffer": b"MZ"}]
    )
    expect(page.locator('.upload[data-name="notes.exe"]')).to_contain_text("Not a supported type")
    page.get_by_label("Type", exact=True).select_option("pdf")
    expect(table.locator("tbody tr")).to_have_count(1)
    shots.take("documents")
    page.get_by_label("Type", exact=True).select_option("")
    expect(table.locator("tbody tr")).to_have_count(2)


def drop(page: Any, path: Path, target: str) -> None:
    """Drop a file on ``target`` as a drag from the desktop does."""
    data = base64.b64encode(path.read_bytes()).decode()
    transfer = page.evaluate_handle(
        """([name, data]) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name));
            return transfer;
        }""",
        [path.name, data],
    )
    for event in ("dragenter", "dragover", "drop"):
        page.dispatch_event(target, event, {"dataTransfer": transfer})


def ask_with_citations(page: Any, shots: Shots) -> None:
    page.get_by_role("link", name="Chat").click()
    expect(page.get_by_text("2 documents in this workspace.")).to_be_visible()
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("How long is the refund window?")
    composer.press("Enter")
    answer = page.locator(".msg.assistant").last
    expect(answer.locator(".answer")).to_contain_text(re.compile("refund", re.IGNORECASE))
    expect(answer.locator(".sources-row .source-chip").first).to_be_visible()
    expect(page.locator(".history-item")).to_have_count(1)
    assert re.search(r"#/chat/\d+$", page.url)
    answer.locator(".answer .cite").first.click()
    panel = page.get_by_role("dialog", name="Source")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("refund-policy")
    expect(panel).to_contain_text("30 days")
    expect(panel.get_by_role("link", name="Open document")).to_have_attribute(
        "href", re.compile(r"#/documents/\d+")
    )
    shots.take("chat-citation")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()


def stream_switch_and_stop(page: Any, model: ScriptedOpenAI, shots: Shots) -> None:
    composer = page.get_by_role("textbox", name="Message")
    # /model with its suggestions.
    composer.fill("/model scr")
    expect(page.get_by_role("option", name=SCRIPTED)).to_be_visible()
    composer.press("Enter")
    expect(page.locator(".model-button")).to_contain_text(SCRIPTED)
    # Streamed token by token, with citations at the end. The model holds its stream a
    # sentence and a half in until released, so what shows is what streamed so far (the
    # agent shows nothing before 120 characters, which could still turn into a tool call,
    # and DLP holds a last word that could still grow into an address).
    model.hold_next_at("within five business days")
    composer.fill("What does the refund policy say?")
    composer.press("Enter")
    answer = page.locator(".msg.assistant").last
    stop = page.get_by_role("button", name="Stop answering")
    expect(stop).to_be_visible()
    expect(answer.locator(".answer")).to_contain_text("Customers may return")
    partial = answer.locator(".answer").inner_text()
    assert len(partial) < len(SCRIPTED_ANSWER), "the answer arrived whole, not streamed"
    shots.take("chat-streaming", phone=False)
    model.release()
    expect(answer.locator(".answer")).to_contain_text("free of charge")
    expect(answer.locator(".sources-row .source-chip").first).to_be_visible()
    expect(answer.locator(".status-line")).to_contain_text(SCRIPTED)
    expect(stop).to_be_hidden()
    # A long answer, stopped midway.
    composer.fill("Explain slowly, please.")
    composer.press("Enter")
    slow = page.locator(".msg.assistant").last
    expect(slow.locator(".answer")).to_contain_text("deliberate length")
    shots.take("chat-stop-visible", phone=False)
    disconnects = model.disconnects
    stop.click()
    expect(slow.locator(".status-line")).to_contain_text("Stopped")
    expect(page.get_by_role("button", name="Send message")).to_be_visible()
    stopped_at = slow.locator(".answer").inner_text()
    page.wait_for_timeout(600)
    assert slow.locator(".answer").inner_text() == stopped_at
    deadline = 1200  # a generous wait for the server to close the model's stream
    while model.disconnects == disconnects and deadline:
        page.wait_for_timeout(100)
        deadline -= 1
    assert model.disconnects > disconnects, "the model's stream was not closed"
    # Back to the extractive model with the palette.
    page.keyboard.press("Control+k")
    palette = page.get_by_role("dialog", name="Command palette")
    expect(palette).to_be_visible()
    page.keyboard.type("extractive")
    shots.take("palette", phone=False)
    page.keyboard.press("Enter")
    expect(palette).to_be_hidden()
    expect(page.locator(".model-button")).to_contain_text(EXTRACTIVE)
    # Two models side by side.
    page.keyboard.press("Control+Shift+M")
    compare = page.get_by_role("dialog", name="Compare models")
    expect(compare).to_be_visible()
    compare.get_by_label("Model A").select_option(EXTRACTIVE)
    compare.get_by_label("Model B").select_option(SCRIPTED)
    compare.get_by_label("Question").fill("How long is the refund window?")
    compare.get_by_role("button", name="Compare").click()
    columns = compare.locator(".compare-col")
    expect(columns.nth(0).locator(".status-line")).to_contain_text(EXTRACTIVE, timeout=30_000)
    expect(columns.nth(1).locator(".status-line")).to_contain_text(SCRIPTED, timeout=30_000)
    expect(columns.nth(0).locator(".answer")).to_contain_text(re.compile("refund", re.I))
    expect(columns.nth(1).locator(".answer")).to_contain_text("Customers may return")
    shots.take("compare")
    compare.get_by_role("button", name="Close comparison").click()
    expect(compare).to_be_hidden()


def fall_back_and_undo(page: Any, shots: Shots) -> None:
    page.get_by_role("button", name="New chat").click()
    composer = page.get_by_role("textbox", name="Message")
    composer.fill(f"/model {OFFLINE}")
    composer.press("Enter")
    expect(page.locator(".model-button")).to_contain_text(OFFLINE)
    composer.fill("How long is the refund window?")
    composer.press("Enter")
    notice = page.locator(".notice.fallback")
    expect(notice).to_contain_text(f"{OFFLINE} is unavailable")
    expect(notice).to_contain_text(f"This chat now uses {EXTRACTIVE}")
    expect(page.locator(".model-button")).to_contain_text(EXTRACTIVE)
    shots.take("fallback")
    notice.get_by_role("button", name="Undo").click()
    expect(notice).to_contain_text(f"This chat uses {OFFLINE} again")
    expect(page.locator(".model-button")).to_contain_text(OFFLINE)


def manage_users_and_keys(page: Any, shots: Shots) -> None:
    page.get_by_role("link", name="Admin").click()
    expect(page.get_by_role("tab", name="Users")).to_have_attribute("aria-selected", "true")
    form = page.locator("form", has=page.get_by_role("heading", name="Add a user", exact=True))
    form.get_by_label("Username").fill("bea")
    form.get_by_label("Password").fill("another long password")
    form.get_by_label("Role").select_option("member")
    form.get_by_role("button", name="Add user").click()
    row = page.locator('tr[data-user="bea"]')
    expect(row).to_contain_text("default")
    row.get_by_label("Role of bea").select_option("manager")
    expect(page.get_by_text("bea is now manager.")).to_be_visible()
    shots.take("admin-users")

    page.get_by_role("tab", name="API keys").click()
    assert page.url.endswith("#/admin/keys")
    page.get_by_label("Name").fill("nightly-import")
    page.get_by_role("button", name="Create key").click()
    created = page.get_by_role("dialog", name="Key “nightly-import” created")
    expect(created.get_by_label("New API key")).to_have_value(re.compile("^ark_"))
    shots.take("admin-key-created", phone=False)
    created.get_by_role("button", name="Done").click()
    key_row = page.locator("tr", has_text="nightly-import")
    expect(key_row).to_contain_text("active")
    key_row.get_by_role("button", name="Revoke").click()
    page.get_by_role("dialog", name="Revoke “nightly-import”?").get_by_role(
        "button", name="Revoke"
    ).click()
    expect(key_row).to_contain_text("revoked")


def redact_with_a_new_pattern(page: Any, shots: Shots) -> None:
    page.get_by_role("tab", name="DLP").click()
    form = page.locator("form", has=page.get_by_role("heading", name="Add a pattern", exact=True))
    form.get_by_label("Name").fill("ticket")
    form.get_by_label("Regex").fill("TCK-[0-9]{6}")
    form.get_by_label("Description").fill("Support ticket ids")
    expect(form.get_by_label("Preview")).to_contain_text("[REDACTED]")
    expect(form.get_by_label("Preview").locator("mark")).to_contain_text("TCK-123456")
    form.get_by_label("Regex").fill("TCK-(?=1)")
    expect(form.locator(".field-error").nth(1)).not_to_be_empty()  # RE2 refuses look-ahead
    form.get_by_label("Regex").fill("TCK-[0-9]{6}")
    expect(form.locator(".field-error").nth(1)).to_be_empty()
    expect(form.get_by_label("Preview").locator("mark")).to_contain_text("TCK-123456")
    shots.take("dlp-preview")
    form.get_by_role("button", name="Add pattern").click()
    expect(page.locator('tr[data-pattern="ticket"]')).to_be_visible()

    page.get_by_role("link", name="Search").click()
    page.get_by_label("Search query").fill("support ticket disputes")
    page.get_by_role("button", name="Search", exact=True).click()
    hit = page.locator(".hit", has_text="shipping-guide")
    expect(hit.locator(".snippet")).to_contain_text("[REDACTED]")
    expect(hit.locator(".snippet")).not_to_contain_text("TCK-123456")
    expect(hit).to_contain_text("redacted")
    expect(hit.locator(".legs")).to_contain_text(re.compile("semantic|keyword"))
    shots.take("search")
    page.get_by_role("checkbox", name="Type pdf").check()
    expect(page.locator(".hit", has_text="shipping-guide")).to_have_count(0)
    expect(page.locator(".hit").first).to_contain_text("refund-policy")
    assert "type=pdf" in page.url

    # An e-mail address in a question: redacted before any model sees it, and said so.
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New chat").click()
    composer = page.get_by_role("textbox", name="Message")
    composer.fill("I am jane.doe@example.com: how long is the refund window?")
    composer.press("Enter")
    expect(page.locator(".msg.assistant").last.locator(".notice.warn")).to_contain_text(
        "Sensitive data was redacted"
    )
    shots.take("chat-dlp-warning")
    # The redaction is in the match history (the types, never the secret).
    page.locator(".msg.assistant").last.get_by_role("link", name="DLP history").click()
    history = page.get_by_role("table", name="DLP match history")
    expect(history.locator("tr", has_text="email").first).to_contain_text("redacted")
    expect(history).not_to_contain_text("jane.doe")


def approve_a_peer_request(page: Any, workspace: Workspace, shots: Shots) -> None:
    approvals = Approvals(workspace.p2p_dir)
    request = approvals.create(
        peer="bob",
        contact_id=7,
        query_id="q-1",
        query="What is the refund window?",
        sources=[
            PendingSource(
                source="/policies/refund-policy.pdf",
                title="refund-policy",
                snippet="Customers may return unused items within 30 days of delivery.",
                score=0.61,
                page=1,
            )
        ],
    )
    registry = PeerRegistry(workspace.simplex_peers_file)
    registry.add("bob", 7, "Bob's lab notes")
    profile = Profile(display_name="bob", full_name="Bob Example", short_descr="Lab protocols")
    registry.merge_profiles([Contact(7, "bob", profile, has_connection=True)])
    page.get_by_role("link", name="P2P").click()
    expect(page.get_by_text("P2P is not running.")).to_be_visible()
    expect(page.get_by_role("article", name="Peer bob")).to_contain_text("Lab protocols")
    item = page.locator(f'.request[data-id="{request.id}"]')
    expect(item).to_contain_text("What is the refund window?")
    expect(item).to_contain_text("refund-policy")
    shots.take("p2p")
    item.get_by_role("button", name="Approve request from bob").click()
    expect(item).to_have_attribute("data-status", "approved")
    assert approvals.pending()[0][1] == "approved"
    # The explain tester.
    page.get_by_label("Source", exact=True).fill("/policies/refund-policy.pdf")
    page.get_by_role("button", name="Explain").click()
    expect(page.locator(".explain-out")).to_contain_text("private")


def settings_and_palette(page: Any, shots: Shots) -> None:
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Agent", exact=True)).to_be_visible()
    page.get_by_label("Default model", exact=True).select_option(SCRIPTED)
    shots.take("settings")
    page.locator("form", has=page.get_by_role("heading", name="Agent", exact=True)).get_by_role(
        "button", name="Save"
    ).click()
    expect(page.get_by_text("Agent settings saved.")).to_be_visible()
    # The theme toggle wins over the system's preference, and is remembered.
    page.get_by_role("button", name=re.compile("^Theme: system")).first.click()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    page.get_by_role("button", name=re.compile("^Theme: light")).first.click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.set_viewport_size({"width": 375, "height": 740})
    page.get_by_role("button", name="Open navigation").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    page.wait_for_timeout(400)  # the drawer slides in
    page.screenshot(path=str(shots.folder / "99-phone-navigation-dark.png"))
    page.get_by_role("link", name="Documents").click()
    expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
    page.screenshot(path=str(shots.folder / "99-phone-documents-dark.png"))


def test_a_page_still_loading_never_takes_the_view_from_the_next(page: Any, server: Server) -> None:
    """Settings asked for, then Search while Settings still waits on the server: once
    Settings' answer arrives, the view, the address and the title stay Search's (a stale
    render used to claim them). The signed-in page of the journey above."""
    page.set_viewport_size(DESKTOP)
    page.goto(server.url + "/#/chat")
    page.wait_for_load_state("networkidle")  # the chat page's own calls are answered
    held: list[Any] = []  # Settings' first call, held until Search is shown
    page.route("**/api/workspaces/default/agent", lambda route: held.append(route))
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_text("Loading settings…")).to_be_visible()
    assert len(held) == 1
    page.get_by_role("link", name="Search").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Search")
    with page.expect_response("**/api/workspaces/default/agent"):
        held[0].continue_()
    page.unroute("**/api/workspaces/default/agent")
    settle = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
    page.evaluate(settle)  # Settings' render finishes (its other calls were not held)
    expect(page.get_by_role("heading", level=1)).to_have_text("Search")
    assert page.evaluate("location.hash") == "#/search"
    assert page.title().startswith("Search")
    expect(page.get_by_role("search", name="Search the documents")).to_be_visible()
    page.get_by_role("link", name="Settings").click()  # and Settings still opens
    expect(page.get_by_role("heading", level=1)).to_have_text("Settings")
    expect(page.get_by_role("heading", name="Agent", exact=True)).to_be_visible()
    assert page.errors == [], page.errors
