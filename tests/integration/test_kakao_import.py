"""KakaoTalk exports imported into a real workspace (SQLite + LanceDB + the local model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.workspaces import new_workspace
from typer.testing import CliRunner

from autorag.cli.main import app as cli
from autorag.context import AppContext, open_context
from autorag.datasources import import_kakao
from autorag.errors import Conflict, InvalidInput
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.models import DocumentRow
from autorag.workspace import Workspace

EXPORT = """\
Team with KakaoTalk Chats
Date Saved : 2024-01-07 09:00:00

--------------- Friday, January 5, 2024 ---------------
[Alice] [9:02 AM] Good morning everyone
[Bob] [9:05 AM] The quarterly budget review moved to Thursday at the lighthouse cafe.
[Alice] [9:06 AM] Photo
[Alice] [9:07 AM] Noted, I will bring the printed spreadsheets.

--------------- Saturday, January 6, 2024 ---------------
[Bob] [6:30 PM] Who is feeding the office cat Biscuit this weekend?
[Alice] [6:45 PM] I will feed Biscuit on Sunday morning.
"""

FIRST_DAY = EXPORT.split("\n\n--------------- Saturday")[0] + "\n"
LATER_DAY = """
--------------- Sunday, January 7, 2024 ---------------
[Bob] [8:00 AM] The kayak rental shop opens at noon on the harbour pier.
"""


@pytest.fixture()
def workspace(tmp_path: Path, catalog_url: str | None) -> Workspace:
    return new_workspace(tmp_path / "kb", catalog_url)


@pytest.fixture()
def app(workspace: Workspace) -> Iterator[AppContext]:
    context = open_context(workspace)
    yield context
    context.close()


def _export(tmp_path: Path, text: str, name: str = "chat.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _sources(app: AppContext, query: str, **kwargs: object) -> list[str]:
    response = app.searcher.search(SearchRequest(query, **kwargs))  # type: ignore[arg-type]
    return [hit.source for hit in response.hits]


def _indexed_at(app: AppContext) -> dict[str, object]:
    with app.catalog.engine.connect() as conn:
        rows = conn.execute(DocumentRow.__table__.select()).mappings().all()
    return {row["source_id"]: row["indexed_at"] for row in rows}


def test_import_search_and_reimport(app: AppContext, tmp_path: Path) -> None:
    export = _export(tmp_path, EXPORT)
    report = import_kakao(app, export, "team")
    assert (report.chat, report.format, report.encoding) == ("Team", "pc-en", "utf-8")
    assert (report.messages, report.media, report.chunks) == (5, 1, 2)
    assert (report.indexed, report.unchanged, report.removed, report.failed) == (2, 0, 0, 0)

    response = app.searcher.search(SearchRequest("when is the budget review", k=3))
    top = response.hits[0]
    assert top.source == "/kakao/team/chunks/chunk-1"  # seed 000: the identity, no path
    assert top.source_id == "/kakao/team/chunks/chunk-1"
    assert top.title == "KakaoTalk Team — 2024-01-05"
    assert top.doc_type == "txt"
    assert "2024-01-05 09:05 Bob: The quarterly budget review" in top.text
    for mode in ("fts", "vector", "hybrid"):
        found = _sources(app, "who feeds the office cat Biscuit", k=1, mode=mode)
        assert found == ["/kakao/team/chunks/chunk-2"], mode

    before = _indexed_at(app)
    again = import_kakao(app, export, "team")
    assert (again.indexed, again.unchanged, again.removed) == (0, 2, 0)
    assert _indexed_at(app) == before  # nothing was written again


def test_a_longer_export_adds_chunks_and_a_shorter_one_removes_them(
    app: AppContext, tmp_path: Path
) -> None:
    import_kakao(app, _export(tmp_path, EXPORT), "team")
    longer = import_kakao(app, _export(tmp_path, EXPORT + LATER_DAY, "later.txt"), "team")
    assert (longer.chunks, longer.indexed, longer.unchanged, longer.removed) == (3, 1, 2, 0)
    assert _sources(app, "kayak rental harbour pier", k=1) == ["/kakao/team/chunks/chunk-3"]

    shorter = import_kakao(app, _export(tmp_path, FIRST_DAY, "short.txt"), "team")
    assert (shorter.chunks, shorter.indexed, shorter.unchanged, shorter.removed) == (1, 0, 1, 2)
    assert "/kakao/team/chunks/chunk-3" not in _sources(app, "kayak rental harbour pier", k=5)
    assert set(_indexed_at(app)) == {"/kakao/team/chunks/chunk-1"}


def test_instances_are_separate_and_dates_filter(app: AppContext, tmp_path: Path) -> None:
    export = _export(tmp_path, EXPORT)
    import_kakao(app, export, "team")
    import_kakao(app, export, "team-copy")
    assert len(_indexed_at(app)) == 4
    # Dropping one instance's chat leaves the other alone.
    import_kakao(app, _export(tmp_path, FIRST_DAY, "first-day.txt"), "team")
    assert sorted(_indexed_at(app)) == [
        "/kakao/team-copy/chunks/chunk-1",
        "/kakao/team-copy/chunks/chunk-2",
        "/kakao/team/chunks/chunk-1",
    ]
    on_the_6th = build_filters(date_from="2024-01-06", date_to="2024-01-06")
    found = _sources(app, "office cat Biscuit", k=5, filters=on_the_6th)
    assert found == ["/kakao/team-copy/chunks/chunk-2"]


def test_bad_input_is_refused_before_anything_is_written(
    app: AppContext, workspace: Workspace, tmp_path: Path
) -> None:
    notes = _export(tmp_path, "Shopping list\nmilk\n", "notes.txt")
    with pytest.raises(InvalidInput, match=r"notes\.txt is not a KakaoTalk chat export: line 1"):
        import_kakao(app, notes, "team")
    with pytest.raises(InvalidInput, match="instance"):
        import_kakao(app, _export(tmp_path, EXPORT), "kakao:team")
    assert _indexed_at(app) == {}

    folder = tmp_path / "kakao"
    folder.mkdir()
    workspace.write_config({**workspace.read_config(), "search_paths": [str(folder)]})
    shadowed = open_context(workspace)
    try:
        with pytest.raises(Conflict, match="namespace"):
            import_kakao(shadowed, _export(tmp_path, EXPORT), "team")
    finally:
        shadowed.close()


def test_cli_import_with_json(workspace: Workspace, tmp_path: Path) -> None:
    export = _export(tmp_path, EXPORT)
    args = ["-w", str(workspace.root), "import", "kakao", str(export), "--instance", "team"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("instance", "messages", "chunks", "indexed", "removed")} == {
        "instance": "team",
        "messages": 5,
        "chunks": 2,
        "indexed": 2,
        "removed": 0,
    }
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert "0 indexed, 2 unchanged, 0 removed" in again.stdout


def test_cli_reports_a_non_export_and_exits_2(workspace: Workspace, tmp_path: Path) -> None:
    notes = _export(tmp_path, "Shopping list\nmilk\n", "notes.txt")
    command = ["import", "kakao", str(notes), "--instance", "team"]
    result = subprocess.run(
        [sys.executable, "-m", "autorag", "-w", str(workspace.root), *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert result.returncode == 2, result.stderr
    assert "is not a KakaoTalk chat export: line 1" in result.stderr
    assert "'Shopping list'" in result.stderr
    assert "Traceback" not in result.stderr
