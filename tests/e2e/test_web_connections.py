"""Connecting a model from the browser: with only the built-in model, the first-run setup
and then the chat say so and offer the Ollama they detected; in Settings → Models the
admin tests a server, sees its models, connects it, and the chat answers with one of
them at once.

A real ``autorag serve`` (no model in autorag.toml) and Debian's Chromium; the model
server is an Ollama double on loopback, which ``OLLAMA_HOST`` points detection at.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autorag.workspace import init_workspace
from tests.doubles.ollama_server import ScriptedOllama
from tests.doubles.script import Text
from tests.e2e.web_helpers import Server, browser_page, playwright_sync_api

sync_api = playwright_sync_api()
expect = sync_api.expect

PASSWORD = "a long enough password"
ANSWER = "The connected box answers in its own words."


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, ScriptedOllama]]:
    root = tmp_path_factory.mktemp("web-connections")
    with ScriptedOllama(models=["llama3.2:3b", "qwen3:8b"], default=Text(ANSWER)) as ollama:
        workspace = init_workspace(root / "kb")
        env = {"OLLAMA_HOST": ollama.base_url}
        server = Server(workspace, Path(root / "serve.log"), env=env)
        try:
            yield server, ollama
        finally:
            server.stop()


def test_connect_a_model_from_settings_and_answer_with_it(
    running: tuple[Server, ScriptedOllama],
) -> None:
    server, ollama = running
    with sync_api.sync_playwright() as playwright, browser_page(playwright) as page:
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(server.setup_url())
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Repeat the password").fill(PASSWORD)
        page.get_by_role("button", name="Create admin and sign in").click()

        # First run with only the built-in model: connecting one is offered, with the
        # Ollama found on this machine.
        step = page.get_by_role("region", name="Connect a model")
        expect(step).to_contain_text(f"Ollama is running on this machine ({ollama.base_url})")
        expect(step.get_by_role("button", name="Connect it")).to_be_visible()
        step.get_by_role("button", name="Continue without one").click()
        expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()

        # The chat says so too, and offers the Ollama again.
        page.get_by_role("link", name="Chat").click()
        notice = page.locator(".builtin-notice")
        expect(notice).to_contain_text("No language model is connected")
        expect(notice).to_contain_text(f"Ollama is running on this machine ({ollama.base_url})")
        notice.get_by_role("link", name="Connect a model").click()

        # Settings → Models: test the server, see its models, connect it.
        form = page.get_by_role("form", name="Connect a model server")
        form.get_by_label("Name").fill("box")
        form.get_by_label("Server address").fill(ollama.base_url)
        form.get_by_role("button", name="Test connection").click()
        expect(form).to_contain_text("2 models")
        expect(form.get_by_role("listitem").filter(has_text="qwen3:8b")).to_be_visible()
        form.get_by_role("button", name="Connect", exact=True).click()
        listed = page.locator("li[data-connection='box']")
        expect(listed).to_contain_text("Ollama")
        expect(page.get_by_role("list", name="Models", exact=True)).to_contain_text("box/qwen3:8b")

        # The chat: the notice is gone; pick the connected model and ask.
        page.get_by_role("link", name="Chat").click()
        expect(page.locator(".builtin-notice")).to_have_count(0)
        composer = page.get_by_role("textbox", name="Message")
        composer.fill("/model box/qwen3:8b")
        composer.press("Enter")
        expect(page.locator(".model-button")).to_contain_text("box/qwen3:8b")
        composer.fill("What does the box say?")
        composer.press("Enter")
        reply = page.locator(".msg.assistant").last
        expect(reply.locator(".answer")).to_contain_text(ANSWER)
        assert ollama.requests and ollama.requests[-1]["model"] == "qwen3:8b"
        assert not errors, errors
