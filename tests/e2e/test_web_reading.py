"""Reading a cited source in the browser: ask, open the cited document at its passage
(highlighted and in view, Markdown shown as text), download the original.

A real ``autorag serve`` and Debian's Chromium; the model is a scripted OpenAI-compatible
server that cites the passage about leave by the number the search gave it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from autorag.auth.service import create_api_key, create_user
from autorag.context import open_context
from autorag.workspace import Workspace, init_workspace
from tests.doubles.openai_server import ScriptedOpenAI
from tests.doubles.script import Text, Tool, Turn
from tests.e2e.web_helpers import Server, browser_page, playwright_sync_api
from tests.integration.conftest import PROCESSED, PROCESSED_WAIT_S

sync_api = playwright_sync_api()
expect = sync_api.expect

PASSWORD = "a long enough password"
FILLER = " ".join(f"Leave rule {i} applies to every employee alike." for i in range(16))
HANDBOOK = (
    "# Employee Handbook 2025\n\n"
    f"### 5.1 Annual leave\n\nAnnual leave is twenty-five days a year. {FILLER}\n\n"
    f"### 5.2 Carry-over\n\nUnused leave days expire at the end of March. {FILLER}\n"
)


def answer(request: dict[str, Any]) -> Turn:
    """Search, then cite the passage on carry-over by its number, after another one."""
    last = (request.get("messages") or [{}])[-1]
    if last.get("role") != "tool":
        return Tool("rag_search", {"query": "when do unused leave days expire"})
    content = str(last.get("content") or "")
    heads = list(re.finditer(r"^\[(\d+)\] \[Source: ", content, re.M))
    ends = [h.start() for h in heads[1:]] + [len(content)]
    passages = {h.group(1): content[h.end() : end] for h, end in zip(heads, ends, strict=True)}
    expiry = next(n for n, text in passages.items() if "expire" in text)
    other = next((n for n in passages if n != expiry), expiry)
    return Text(f"Leave is counted per year [{other}]. Unused days expire in March [{expiry}].")


def _upload(url: str, key: str, files: list[Path]) -> None:
    """Upload ``files`` and wait until each is processed, as a client would."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api:
        ids = []
        for path in files:
            sent = api.post(
                "/api/workspaces/default/documents", files={"file": (path.name, path.read_bytes())}
            )
            assert sent.status_code == 202, sent.text
            ids.append(sent.json()["id"])
        deadline = time.monotonic() + PROCESSED_WAIT_S  # a generous wait, not a measure
        for document_id in ids:
            path = f"/api/workspaces/default/documents/{document_id}"
            while (status := api.get(path).json()["status"]) not in PROCESSED:
                assert time.monotonic() < deadline, f"document {document_id} still {status}"
                time.sleep(0.2)  # polled as the UI does
            assert status == "ready"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    root = tmp_path_factory.mktemp("web-reading")
    docs = root / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (docs / "notes.txt").write_text("The office cat is called Pixel and sleeps by the door.\n")
    # Found and on topic, but not cited: one of the "more sources".
    (docs / "faq.txt").write_text("Questions about unused leave days go to HR in March.\n")
    with ScriptedOpenAI(answer) as model:
        workspace: Workspace = init_workspace(root / "kb")
        workspace.write_config(
            {
                "workspace": "default",
                "search_paths": [],
                # The first search loads the embedding model: slow on a busy machine.
                "agent": {"skill_timeout_s": 300, "wallclock_s": 600},
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
        create_user(context.catalog, "ada", PASSWORD, "admin")
        key = create_api_key(context.catalog, "ada", "tests", [])[1]
        context.close()
        running = Server(workspace, root / "serve.log")
        try:
            # Uploaded, so that only the server loads the embedding model.
            _upload(running.url, key, sorted(docs.iterdir()))
            yield running, docs
        finally:
            running.stop()


def test_open_the_cited_passage_and_download_the_file(
    server: tuple[Server, Path], tmp_path: Path
) -> None:
    running, docs = server
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(running.url + "/")
        page.get_by_label("Username").fill("ada")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()

        # Ask: the answer cites two sources, numbered 1 and 2 in the order it cites them.
        page.get_by_role("link", name="Chat").click()
        composer = page.get_by_role("textbox", name="Message")
        composer.fill("When do unused leave days expire?")
        composer.press("Enter")
        reply = page.locator(".msg.assistant").last
        # The first answer's search loads the embedding model in the server.
        expect(reply.locator(".answer")).to_have_text(
            "Leave is counted per year 1. Unused days expire in March 2.", timeout=120_000
        )
        chips = reply.locator(":scope > .sources-row > .source-chip")
        expect(chips).to_have_count(2)
        expect(chips.nth(1)).to_contain_text("Employee Handbook 2025")
        expect(chips.nth(1)).to_contain_text("5.2 Carry-over")
        expect(reply.locator(".more-sources summary")).to_contain_text("More sources")

        # The citation, then its document: the passage marked and scrolled into view.
        reply.locator(".answer .cite", has_text="2").click()
        panel = page.get_by_role("dialog", name="Source")
        expect(panel).to_contain_text("Unused leave days expire")
        expect(panel.locator(".snippet")).not_to_contain_text("###")
        panel.get_by_role("link", name="Open document").click()
        reader = page.locator("dialog.reader")
        expect(reader.locator("h2")).to_have_text("Employee Handbook 2025")
        expect(reader.locator("mark.cited", has_text="Unused leave days expire")).to_be_visible()
        expect(reader.locator("mark.cited#cited-passage")).to_be_in_viewport()
        text = reader.locator(".doc-text")
        expect(text.get_by_role("heading", name="5.2 Carry-over")).to_be_visible()
        expect(text).not_to_contain_text("###")

        # The original file, under its own name.
        with page.expect_download() as download:
            reader.get_by_role("button", name="Download").click()
        saved = tmp_path / "downloaded.md"
        download.value.save_as(saved)
        assert download.value.suggested_filename == "handbook.md"
        assert saved.read_bytes() == (docs / "handbook.md").read_bytes()
        assert not errors, errors
