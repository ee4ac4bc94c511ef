"""Fixtures for integration tests: real servers on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import Connection
from starlette.types import ASGIApp
from tests.workspaces import NewCatalog, catalog_sql, new_workspace

from autorag.api.app import create_app
from autorag.context import AppContext, open_context
from autorag.workspace import Workspace

_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 10.0
API_TIMEOUT = httpx.Timeout(120.0)
PROCESSED_WAIT_S = 180.0
PROCESSED = ("ready", "failed", "skipped")


@pytest.fixture(scope="module")
def serve_asgi() -> Iterator[Callable[[ASGIApp], str]]:
    """Run an ASGI app as a real uvicorn server on a free loopback port.

    Returns a function taking the app and returning the server's base URL; every server
    started through it stops at the end of the module (all at once: each one's lifespan
    stops its worker pool), so idle servers do not pile up and poll all session long.
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
    for server, _thread, _sock in running:
        server.should_exit = True
    deadline = time.monotonic() + _STOP_TIMEOUT_S
    for _server, thread, sock in running:
        thread.join(max(0.0, deadline - time.monotonic()))
        sock.close()


def _wait_until_started(server: uvicorn.Server) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)


def bearer(credential: str | None) -> dict[str, str]:
    """The headers that send a login token or an API key; none for an anonymous call."""
    return {"Authorization": f"Bearer {credential}"} if credential else {}


@dataclass(frozen=True)
class ApiServer:
    """An AutoRAG API server started by ``launch_api``."""

    url: str
    app: FastAPI
    workspace: Workspace
    prepared: Any  # what the ``prepare`` function given to ``launch_api`` returned

    def sql(self) -> AbstractContextManager[Connection]:
        """A connection to the server's catalog, for checks no route can make."""
        return catalog_sql(self.workspace)

    def call(
        self, method: str, path: str, credential: str | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One request, with ``credential`` (a login token or an API key) if given."""
        return httpx.request(
            method, self.url + path, headers=bearer(credential), timeout=API_TIMEOUT, **kwargs
        )

    def headers(self, credential: str | None) -> dict[str, str]:
        return bearer(credential)

    def client(self, credential: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=bearer(credential), timeout=API_TIMEOUT)

    def wait_processed(
        self, credential: str, document_id: int, workspace: str = "default"
    ) -> dict[str, Any]:
        """The document once processed (``ready``, ``failed`` or ``skipped``), polled as a
        client would; as it stands after ``PROCESSED_WAIT_S`` otherwise."""
        deadline = time.monotonic() + PROCESSED_WAIT_S
        with self.client(credential) as client:
            while True:
                response = client.get(f"/api/workspaces/{workspace}/documents/{document_id}")
                assert response.status_code == 200, response.text
                document: dict[str, Any] = response.json()
                if document["status"] in PROCESSED or time.monotonic() > deadline:
                    return document
                time.sleep(0.2)


LaunchApi = Callable[..., ApiServer]


@pytest.fixture(scope="module")
def launch_api(serve_asgi: Callable[[ASGIApp], str], new_catalog: NewCatalog) -> LaunchApi:
    """Start the API on a fresh workspace at ``root``, as `autorag serve` would; the
    module runs once per catalog backend, each launch on a fresh catalog.

    ``launch_api(root, prepare=None, **server)``: ``prepare(context)`` runs on the
    workspace's catalog before the server starts (create workspaces, users, keys…) and
    its result is kept as ``ApiServer.prepared``; ``server`` are ``[server]`` settings.
    """

    def launch(
        root: Path, prepare: Callable[[AppContext], Any] | None = None, **server: Any
    ) -> ApiServer:
        return launch_on(serve_asgi, root, new_catalog(), prepare, **server)

    return launch


def launch_on(
    serve_asgi: Callable[[ASGIApp], str],
    root: Path,
    catalog: str | None,
    prepare: Callable[[AppContext], Any] | None = None,
    **server: Any,
) -> ApiServer:
    """``launch_api``'s work on a given catalog (``None``: SQLite in the workspace), for a
    module that serves both catalogs at once."""
    workspace = new_workspace(root, catalog)
    context = open_context(workspace)
    try:
        prepared = prepare(context) if prepare is not None else None
    finally:
        context.close()
    app = create_app(workspace, server=server)
    return ApiServer(serve_asgi(app), app, workspace, prepared)
