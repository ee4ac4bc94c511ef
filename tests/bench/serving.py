"""A real ``autorag serve`` for the benchmarks: on a free loopback port, its output in a
log file, up (answering /healthz) before the body runs, stopped after it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from autorag.workspace import Workspace
from tests.e2e.web_helpers import free_port

START_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class Served:
    url: str
    process: subprocess.Popen[bytes]


@contextmanager
def autorag_serve(workspace: Workspace, log: Path) -> Iterator[Served]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "autorag",
                "-w",
                str(workspace.root),
                "serve",
                "--port",
                str(port),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        try:
            _wait_up(url, process)
            yield Served(url, process)
        finally:
            process.terminate()
            process.wait(30)


def _wait_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, "autorag serve exited"
        time.sleep(0.1)
    raise AssertionError("autorag serve did not start")
