"""Running the ``autorag`` command in tests.

``autorag()`` goes through the command's real entry point (``autorag.cli.main.run``: the
argument parsing, the error-to-exit-code mapping, stdout and stderr) inside the test's
own process, so that the embedding model and the libraries load once per test worker
instead of once per command (seconds each). What only a separate process shows (signals,
an interrupted refresh, file modes under the command's umask, the interactive chat on a
terminal) is tested through ``autorag_process()``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner, Result

from autorag.cli.main import app, run
from autorag.workspace import Workspace

AUTORAG = [sys.executable, "-m", "autorag"]


def interruptible() -> None:
    """``preexec_fn`` for a child a test sends SIGINT: Ctrl+C works in it even when the
    suite itself was started with SIGINT ignored (a background job of a non-interactive
    shell), which the child would inherit, and Python would then never raise
    KeyboardInterrupt in it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# An answer's first search loads the embedding model inside the skill's time limit (30 s by
# default): on a machine busy with other tests that can run out. The limit is not what
# these tests are about (test_orchestrator checks it).
SLOW_MACHINE = {"AUTORAG_AGENT__SKILL_TIMEOUT_S": "300"}

Completed = subprocess.CompletedProcess[str]


def autorag(
    *args: str,
    input: str | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: Path | None = None,
) -> Completed:
    """``autorag ARGS`` through its entry point, in this process; never raises for a
    non-zero exit (the result's ``returncode`` says it). ``env``: variables to set for
    the call, None to unset one; ``cwd``: the folder it runs in."""
    umask = os.umask(0o077)  # the command sets its own; the worker's is put back after
    os.umask(umask)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []  # the command's logging.basicConfig writes to its own stderr
    argv, folder = sys.argv, Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with CliRunner().isolation(input=input, env={**SLOW_MACHINE, **(env or {})}) as streams:
            stdout, stderr, _ = streams
            sys.argv = ["autorag", *args]
            code = _exit_code(run)
            sys.stdout.flush()  # what the command wrote past Rich is still buffered
            sys.stderr.flush()
            return subprocess.CompletedProcess(
                ["autorag", *args], code, stdout.getvalue().decode(), stderr.getvalue().decode()
            )
    finally:
        sys.argv = argv
        os.chdir(folder)
        os.umask(umask)
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level


def _exit_code(entry_point: object) -> int:
    try:
        entry_point()  # type: ignore[operator]
    except SystemExit as exc:
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def autorag_process(
    *args: str, input: str | None = None, env: Mapping[str, str] | None = None, timeout: int = 300
) -> Completed:
    """``autorag ARGS`` as a separate process (``python -m autorag``)."""
    return subprocess.run(
        [*AUTORAG, *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **SLOW_MACHINE, **(env or {})},
    )


@dataclass
class WorkspaceCli:
    """``autorag -w WORKSPACE ...`` through Typer's test runner, for commands whose errors
    a test inspects as exceptions (the entry point's exit-code mapping is not applied)."""

    workspace: Workspace
    columns: int | None = None  # the terminal width tables are drawn for

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        result = self._run(args, stdin)
        assert result.exit_code == 0, result.output
        return result.stdout

    def error(self, *args: str, stdin: str | None = None) -> BaseException | None:
        result = self._run(args, stdin)
        assert result.exit_code != 0
        return result.exception

    def _run(self, args: tuple[str, ...], stdin: str | None) -> Result:
        env = {"COLUMNS": str(self.columns)} if self.columns else None
        return CliRunner().invoke(
            app, ["-w", str(self.workspace.root), *args], input=stdin, env=env
        )
