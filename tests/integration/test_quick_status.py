"""`autorag status` on a SQLite catalog reads it with Python's sqlite3 (no SQLAlchemy):
the same readiness the whole context reports, or, off the common path, nothing, so the
command takes the whole context's way."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli import autorag
from tests.samples import write_corpus

from autorag.config import load_settings
from autorag.context import open_context
from autorag.ingest.readiness import Readiness, quick_readiness
from autorag.workspace import Workspace


def _both(kb: Path) -> tuple[Readiness | None, Readiness]:
    """The quick readiness of ``kb`` and the whole context's."""
    workspace = Workspace(kb)
    quick = quick_readiness(workspace, load_settings(workspace.config_file))
    return quick, open_context(workspace).readiness()


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A refreshed workspace with a file that failed and an empty one (skipped)."""
    docs = tmp_path / "docs"
    write_corpus(docs)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a PDF at all")
    (docs / "empty.txt").write_text("")
    kb = tmp_path / "kb"
    assert autorag("init", str(kb)).returncode == 0
    assert autorag("-w", str(kb), "add", str(docs)).returncode == 0
    assert autorag("-w", str(kb), "refresh").returncode in (0, 1)  # one file fails
    return kb


def test_it_reports_what_the_whole_context_reports(kb: Path) -> None:
    quick, whole = _both(kb)
    assert quick == whole
    assert whole.state == "degraded" and [f["name"] for f in whole.failed] == ["/docs/broken.pdf"]
    assert [(f["name"], f["code"]) for f in whole.skipped] == [("/docs/empty.txt", "empty")]
    assert whole.last_refresh is not None and whole.vectors == whole.chunks > 0


def test_it_reads_without_changing_the_catalog(kb: Path) -> None:
    database = Workspace(kb).database_file
    before = database.read_bytes()
    quick, _ = _both(kb)
    assert quick is not None
    quick_again = quick_readiness(Workspace(kb), load_settings(Workspace(kb).config_file))
    assert quick_again == quick and database.read_bytes() == before


def _set(database: Path, sql: str) -> None:
    with sqlite3.connect(database) as conn:
        conn.execute(sql)


@pytest.mark.parametrize(
    "change",
    [
        "an older schema",
        "another workspace named",
        "no vector count on record",
        "a catalog URL",
        "a damaged catalog",
    ],
)
def test_off_the_common_path_it_leaves_status_to_the_whole_context(kb: Path, change: str) -> None:
    workspace = Workspace(kb)
    settings = load_settings(workspace.config_file)
    if change == "an older schema":
        _set(workspace.database_file, "UPDATE alembic_version SET version_num = '0020'")
    elif change == "another workspace named":
        settings = settings.model_copy(update={"workspace": "not-yet-created"})
    elif change == "no vector count on record":
        for record in workspace.vectors_dir.glob("*.count.json"):
            record.unlink()
    elif change == "a catalog URL":
        settings = settings.model_copy(update={"database_url": "sqlite:///elsewhere.db"})
    else:
        for path in workspace.data_dir.glob(f"{workspace.database_file.name}*"):
            path.unlink()  # the file and its write-ahead log
        workspace.database_file.write_bytes(b"not a database " * 100)
    assert quick_readiness(workspace, settings) is None


def test_the_command_prints_it_without_importing_sqlalchemy(kb: Path) -> None:
    probe = (
        "import sys\n"
        "from autorag.cli.main import run\n"
        "sys.argv = ['autorag', '-w', sys.argv[1], 'status', '--json']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(sorted({'sqlalchemy', 'lancedb', 'numpy'} & set(sys.modules)), file=sys.stderr)\n"
    )
    shown = subprocess.run([sys.executable, "-c", probe, str(kb)], capture_output=True, text=True)
    assert shown.stderr.strip().endswith("[]"), shown.stderr
    status = json.loads(shown.stdout)
    _, whole = _both(kb)
    assert status["state"] == whole.state and status["failed"] == whole.failed
    assert status["search_paths"] == [{"prefix": "docs", "path": str(kb.parent / "docs")}]
