"""What the web UI's browser tests need: a real ``autorag serve``, Debian's Chromium driven
by Playwright, screenshots in four looks, and a scripted model that streams slowly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from autorag.workspace import Workspace
from tests.doubles.script import Text, Tool, Turn
from tests.ports import free_port

CHROMIUM = Path("/usr/bin/chromium")
# ../shared/docs/DEPENDENCIES.md: Debian's chromium with these flags; never `playwright install`.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).parent / "artifacts"


def playwright_sync_api() -> Any:
    """Playwright's sync API for a browser test module: the module is skipped where
    Playwright or Debian's Chromium is missing, except under CI, which installs both."""
    import pytest

    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(
            f"{CHROMIUM} is not installed (apt-get install chromium)", allow_module_level=True
        )
    return sync_api


DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 375, "height": 740}
_SETUP_URL = re.compile(r"(http://\S+/setup#token=\S+)")


class Server:
    """``autorag serve`` on a free loopback port, its output in ``log``."""

    def __init__(self, workspace: Workspace, log: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._out = log.open("wb")
        autorag = [sys.executable, "-m", "autorag", "-w", str(workspace.root)]
        self.process = subprocess.Popen(
            [*autorag, "serve", "--port", str(self.port)],
            stdout=self._out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400", **(env or {})},
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"autorag serve did not start:\n{self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text("utf-8", errors="replace")

    def setup_url(self) -> str:
        """The one-time setup link the server printed (``/setup#token=…``)."""
        found = _SETUP_URL.search(self.output())
        assert found, f"no setup URL printed:\n{self.output()}"
        return found.group(1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._out.close()


class Shots:
    """Screenshots of each step in four looks: light and dark, desktop and phone."""

    def __init__(self, page: Any, folder: Path = ARTIFACTS) -> None:
        self.page = page
        self.folder = folder
        self.count = 0
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()

    def take(self, name: str, *, phone: bool = True) -> list[Path]:
        """Desktop light and dark, then (``phone``) 375 px light and dark; the page is
        left as it was (desktop, light)."""
        self.count += 1
        saved = []
        # Notifications of earlier steps would hide what this one shows.
        self.page.evaluate("document.querySelectorAll('.toast').forEach((t) => t.remove())")
        sizes = [("desktop", DESKTOP)] + ([("phone", PHONE)] if phone else [])
        for size_name, size in sizes:
            self.page.set_viewport_size(size)
            for scheme in ("light", "dark"):
                self.page.emulate_media(color_scheme=scheme)
                self.page.wait_for_timeout(120)  # transitions settle
                path = self.folder / f"{self.count:02d}-{name}-{scheme}-{size_name}.png"
                self.page.screenshot(path=str(path))
                saved.append(path)
        self.page.set_viewport_size(DESKTOP)
        self.page.emulate_media(color_scheme="light")
        return saved


@contextmanager
def browser_page(playwright: Any) -> Iterator[Any]:
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
    try:
        context = browser.new_context(viewport=DESKTOP, color_scheme="light", locale="en-US")
        page = context.new_page()
        yield page
        context.close()
    finally:
        browser.close()


def page_errors(page: Any) -> list[str]:
    """A list that fills with the page's uncaught errors and console errors."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def sign_in(page: Any, url: str, username: str, password: str) -> None:
    """Open ``url`` (a page that asks for a login first) and sign in on its form."""
    page.goto(url)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


# -- the scripted model -----------------------------------------------------------------------
SCRIPTED_ANSWER = (
    "Customers may return unused items within 30 days of delivery for a full refund [1]. "
    "Refunds go back to the original payment method within five business days, and the "
    "support team tracks every dispute with a ticket [1]. Exchanges for items of the same "
    "value are free of charge [1]."
)
SLOW_ANSWER = " ".join(["The refund policy is explained here at deliberate length."] * 60)


def scripted_turn(request: dict[str, Any]) -> Turn:
    """Search first, then answer from the results; a question with "slowly" gets a long
    answer streamed slowly (the stop button's test)."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return Text(SCRIPTED_ANSWER, delay_s=0.05)
    question = str(last.get("content") or "")
    if "slowly" in question:
        return Text(SLOW_ANSWER, delay_s=0.06)
    return Tool("rag_search", {"query": question[:200]})
