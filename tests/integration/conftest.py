"""Fixtures for integration tests: real servers on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import uvicorn
from starlette.types import ASGIApp

_START_TIMEOUT_S = 10.0


@pytest.fixture(scope="session")
def serve_asgi() -> Iterator[Callable[[ASGIApp], str]]:
    """Run an ASGI app as a real uvicorn server on a free loopback port.

    Returns a function taking the app and returning the server's base URL; every server
    started through it stops at the end of the session.
    """
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(app: ASGIApp) -> str:
        # Binding port 0 ourselves and handing uvicorn the socket avoids picking a port
        # that something else grabs before the server binds it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        _wait_until_started(server)
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(_START_TIMEOUT_S)
        sock.close()


def _wait_until_started(server: uvicorn.Server) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
