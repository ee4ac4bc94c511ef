"""`autorag serve` warms up: the embedding model and the indexes are loaded in the
background at start-up, so the first question does not pay for them."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.context import open_context


def _joined_warm_up() -> None:
    """Wait for the warm-up thread, if it is still running (it may have finished)."""
    for thread in threading.enumerate():
        if thread.name == "warm-up":
            thread.join(timeout=300)


def test_a_warm_up_loads_the_model_and_opens_the_indexes(tmp_path: Path) -> None:
    context = open_context(new_workspace(tmp_path / "kb"))
    try:
        context.warm_up()
        assert {"embedder", "vectors", "fulltext", "searcher"} <= set(context.__dict__)
    finally:
        context.close()


def test_a_warm_up_that_fails_is_only_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    context = open_context(new_workspace(tmp_path / "kb"))
    try:
        # A vector store that cannot be opened: the first question reports it, not this.
        context.__dict__["searcher"] = None
        with caplog.at_level(logging.INFO, logger="autorag.context"):
            context.warm_up()
        assert "warm-up search failed" in caplog.text
    finally:
        context.close()


def _warming() -> bool:
    return any(thread.name == "warm-up" for thread in threading.enumerate())


def test_the_server_warms_up_only_when_asked_and_allowed(tmp_path: Path) -> None:
    warmed = create_app(new_workspace(tmp_path / "warm"), warm=True)
    with TestClient(warmed) as client:
        _joined_warm_up()
        assert "embedder" in client.app.state.server.context.__dict__  # type: ignore[attr-defined]
    cold = create_app(new_workspace(tmp_path / "cold"))
    with TestClient(cold) as client:
        assert not _warming()  # none started (a started one would still be loading)
        assert "embedder" not in client.app.state.server.context.__dict__  # type: ignore[attr-defined]
    off = create_app(new_workspace(tmp_path / "off", server={"warm_up": False}), warm=True)
    with TestClient(off) as client:
        assert not _warming()
        assert "embedder" not in client.app.state.server.context.__dict__  # type: ignore[attr-defined]
