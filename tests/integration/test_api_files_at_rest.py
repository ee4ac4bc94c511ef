"""After an upload through the API (stored, parsed, embedded by the server's workers),
everything the server wrote under ``.autorag/`` is the owner's alone."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.integration.test_files_at_rest import loose_paths, mode

from autorag.auth import service
from autorag.context import AppContext

if TYPE_CHECKING:
    from tests.integration.conftest import LaunchApi


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    """The usual 022 while the server runs: the modes checked are the ones it sets."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_an_uploaded_document_and_its_index_are_owner_only(
    tmp_path: Path, launch_api: LaunchApi
) -> None:
    def prepare(context: AppContext) -> str:
        service.create_user(context.catalog, "root", "correct horse battery", "admin")
        return service.create_api_key(context.catalog, "root", "tests", [])[1]

    api = launch_api(tmp_path / "kb", prepare)
    key = api.prepared
    with api.client(key) as client:
        response = client.post(
            "/api/workspaces/default/documents",
            files={"file": ("notes.txt", b"The office cat is called Miso.\n" * 20)},
        )
    assert response.status_code == 202, response.text
    assert api.wait_processed(key, response.json()["id"])["status"] == "ready"
    workspace = api.workspace
    stored = [p for p in workspace.uploads_dir.rglob("*") if p.is_file()]
    assert stored and all(mode(p) == 0o600 for p in stored)
    assert any(workspace.vectors_dir.rglob("*.lance"))
    assert loose_paths(workspace) == []
