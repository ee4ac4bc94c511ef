"""simplex-chat as a child process serving its WebSocket bot API (the brief's §1).

The command line is the brief's bot invocation::

    simplex-chat -d <db prefix> -p <port> --create-bot-display-name <name> -y

``-d`` names the two databases (``<prefix>_chat.db``, ``<prefix>_agent.db``), which only
simplex-chat reads. ``-p`` serves the WebSocket API on 127.0.0.1 instead of the terminal
UI. ``--create-bot-display-name`` creates the bot user on the first start, so a fresh
database never waits for a name on stdin (stdin is /dev/null anyway: a prompt fails
rather than hangs), and ``-y`` confirms database migrations after an upgrade.
simplex-chat logs every command on stdout, so stdout and stderr go to a log file.

A missing binary is not an error: it is reported once and ``start_simplex`` returns
None, so the server runs without peer queries.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from autorag.errors import Unavailable

HOST = "127.0.0.1"  # the CLI binds IPv4 loopback only; "localhost" may resolve to ::1
_POLL_S = 0.05
_LOG_TAIL_BYTES = 2000


@dataclass
class SimplexProcess:
    """A running simplex-chat; ``stop()`` ends it (SIGTERM, then SIGKILL)."""

    popen: subprocess.Popen[bytes]
    port: int
    command: list[str]
    log_file: Path
    _log: IO[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        return f"ws://{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 5.0) -> int | None:
        """End the process and return its exit code (None if it could not be reaped)."""
        atexit.unregister(self.stop)
        with contextlib.suppress(ProcessLookupError):
            self.popen.terminate()
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            try:
                code = self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                code = None
        self._log.close()
        return code


def simplex_command(binary: str, db_prefix: Path, port: int, bot_name: str) -> list[str]:
    return [
        binary,
        "-d",
        str(db_prefix),
        "-p",
        str(port),
        "--create-bot-display-name",
        bot_name,
        "-y",
    ]


async def start_simplex(
    *,
    binary: str,
    db_prefix: Path,
    port: int,
    bot_name: str,
    log_file: Path,
    start_timeout: float = 30.0,
) -> SimplexProcess | None:
    """Start simplex-chat and wait until its port accepts connections.

    Returns None (after saying so once) when ``binary`` is not found. Raises
    ``Unavailable`` when the port is taken, or the process exits or stays silent.
    """
    path = shutil.which(binary)
    if path is None:
        _report_missing(binary)
        return None
    if _port_open(port):
        raise Unavailable(f"port {port} is in use (another simplex-chat?): set p2p.ws_port")
    db_prefix.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    command = simplex_command(path, db_prefix, port, bot_name)
    # 0600: the CLI logs every command it receives, message text included.
    log = os.fdopen(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    process = SimplexProcess(popen, port, command, log_file, log)
    atexit.register(process.stop)  # no orphan holding the port if we exit uncleanly
    try:
        await _wait_for_port(process, start_timeout)
    except BaseException:
        process.stop()
        raise
    return process


async def _wait_for_port(process: SimplexProcess, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not _port_open(process.port):
        if not process.running:
            raise Unavailable(
                f"simplex-chat exited with code {process.popen.returncode} before serving "
                f"port {process.port}; its log ({process.log_file}) ends:\n"
                f"{_tail(process.log_file)}"
            )
        if loop.time() > deadline:
            raise Unavailable(f"simplex-chat did not open port {process.port} in {timeout:g} s")
        await asyncio.sleep(_POLL_S)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError), path.open("rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - _LOG_TAIL_BYTES))
        return handle.read().decode("utf-8", "replace").strip()
    return ""


@functools.cache  # once per binary name and process: a restart loop must not spam stderr
def _report_missing(binary: str) -> None:
    print(
        f"p2p: {binary!r} was not found on PATH, so peer queries over SimpleX are off; "
        "install simplex-chat or set p2p.simplex_binary (everything else is served)",
        file=sys.stderr,
        flush=True,
    )
