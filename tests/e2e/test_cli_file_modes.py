"""``autorag init`` and ``autorag refresh`` as a user runs them (a subprocess started
under the usual 022 umask): everything they leave under ``.autorag/`` is owner-only, and
a mode loosened meanwhile is repaired by the next command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from autorag.workspace import Workspace
from tests.integration.test_files_at_rest import loose_paths, mode
from tests.samples import write_corpus

AUTORAG = [sys.executable, "-m", "autorag"]


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)  # inherited by the subprocesses
    yield
    os.umask(old)


def autorag(*args: str) -> str:
    result = subprocess.run([*AUTORAG, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"autorag {args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_init_and_refresh_leave_only_owner_only_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    workspace = Workspace(tmp_path / "kb")
    autorag("init", str(workspace.root))
    assert mode(workspace.data_dir) == 0o700 and mode(workspace.config_file) == 0o600
    assert loose_paths(workspace) == []

    autorag("-w", str(workspace.root), "add", str(docs))
    autorag("-w", str(workspace.root), "refresh")
    assert workspace.database_file.exists() and any(workspace.vectors_dir.rglob("*.lance"))
    assert loose_paths(workspace) == []

    workspace.database_file.chmod(0o644)
    workspace.config_file.chmod(0o644)
    workspace.vectors_dir.chmod(0o755)
    autorag("-w", str(workspace.root), "status")
    assert loose_paths(workspace) == []
