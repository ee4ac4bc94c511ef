"""``autorag chat`` as a person types it: a real pseudo-terminal, a real model server (the
scripted double, on loopback), SIGINT in the middle of an answer. The session never ends
on a mistake: a stopped answer, an unknown model or command prints a line and the next
prompt follows; Ctrl+D leaves with exit code 0."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autorag.workspace import init_workspace
from tests.cli import AUTORAG, interruptible
from tests.doubles import Error, ScriptedOpenAI, Text, Turn
from tests.doubles.script import message_text

PROMPT = "you> "
# A failure's limit, never a measurement: a busy machine starts Python slowly.
PATIENCE_S = 120.0
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# An answer the model holds in its middle (``hold_next_at``) until the test releases
# it: the test waits for its first words, sends SIGINT, and sees "(Stopped)" while the
# rest cannot have streamed yet, so no timing decides where the signal lands.
HOLD_AT = "The keeper rests here."
SENTENCE = "The lighthouse keeper logs the tide."
SLOW_ANSWER = Text(" ".join([SENTENCE] * 30 + [HOLD_AT] + [SENTENCE] * 30))


def _turn(request: dict[str, Any]) -> Turn:
    question = message_text(request["messages"][-1].get("content"))
    if "slowly" in question:
        return SLOW_ANSWER
    if "broken" in question:
        return Error(status=500, message="the model server fell over")
    return Text("Refunds are accepted within thirty days.")


class Terminal:
    """A process on a pseudo-terminal: what it wrote, read up to what is expected."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, child = os.openpty()
        self.process = subprocess.Popen(
            args,
            stdin=child,
            stdout=child,
            stderr=child,
            env=env,
            start_new_session=True,
            preexec_fn=interruptible,
        )
        os.close(child)
        self.seen = ""  # everything so far, escape codes removed
        self.read_to = 0  # where the next expect() starts looking

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, wanted: str) -> str:
        """The output from the last match up to and including ``wanted``."""
        while True:
            found = self.seen.find(wanted, self.read_to)
            if found >= 0:
                start, self.read_to = self.read_to, found + len(wanted)
                return self.seen[start : self.read_to]
            ready, _, _ = select.select([self.master], [], [], PATIENCE_S)
            chunk = self._read() if ready else b""
            if not chunk:
                raise AssertionError(f"never saw {wanted!r}; the terminal shows:\n{self.seen}")
            self.seen += _ANSI.sub("", chunk.decode(errors="replace")).replace("\r\n", "\n")

    def _read(self) -> bytes:
        try:
            return os.read(self.master, 65536)
        except OSError:  # EIO: the process ended and closed the terminal
            return b""

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(_turn, models=("story-model",)) as server:
        yield server


@pytest.fixture
def terminal(tmp_path: Path, model: ScriptedOpenAI) -> Iterator[Terminal]:
    workspace = init_workspace(tmp_path / "kb")
    provider = {"name": "scripted", "kind": "openai", "base_url": model.base_url,
                "models": ["story-model"], "default_model": "story-model"}  # fmt: skip
    llm = {"default": "scripted", "providers": [provider], "fallback": False}
    workspace.write_config({"workspace": "default", "search_paths": [], "llm": llm})
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100"}
    running = Terminal([*AUTORAG, "-w", str(workspace.root), "chat"], env)
    yield running
    running.close()


def test_a_session_survives_mistakes_and_a_stopped_answer(
    terminal: Terminal, model: ScriptedOpenAI
) -> None:
    terminal.expect(PROMPT)
    terminal.send("/help\n")
    listed = terminal.expect(PROMPT)
    assert all(word in listed for word in ("/model", "/new", "/help", "/quit"))

    terminal.send("/modle llama\n")
    typo = terminal.expect(PROMPT)
    assert "unknown command /modle, did you mean /model?" in typo and "/help" in typo

    terminal.send("/model ollama/llama3.2:3b\n")
    unknown = terminal.expect(PROMPT)
    assert "unknown model provider 'ollama'" in unknown
    assert "scripted/story-model" in unknown  # which models exist
    assert model.requests == []  # no command went to the model as a question

    model.hold_next_at(HOLD_AT)
    try:
        terminal.send("Tell me slowly about the lighthouse\n")
        terminal.expect("lighthouse keeper logs")  # the answer is streaming, then held
        terminal.process.send_signal(signal.SIGINT)
        terminal.expect("(Stopped)")
    finally:
        model.release()  # the stopped answer's stream ends; the session goes on
    stopped = terminal.expect(PROMPT)
    assert "Traceback" not in stopped
    assert terminal.seen.count(SENTENCE) <= 30  # nothing after the hold was shown

    terminal.send("Is the broken model still there?\n")
    failed = terminal.expect(PROMPT)
    assert "error:" in failed and "Traceback" not in failed

    terminal.send("How long is the refund window?\n")
    assert "thirty days" in terminal.expect(PROMPT)

    terminal.send("\x04")  # Ctrl+D at the prompt leaves
    assert terminal.process.wait(timeout=PATIENCE_S) == 0
    assert "Traceback" not in terminal.seen and "Error" not in terminal.seen
