"""The details of the ``autorag`` command a person meets first: help that shows flags as
flags, usage errors in one line with a hint, dates refused in the option's own words, a
single file as a search path, a key for the only admin, a busy port refused before
"Serving on …", plurals, local times, and a refresh whose rate and library warnings stay
out of the way. In-process, on temporary workspaces."""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pypdf
import pytest
from rich.progress import Progress
from tests.samples import write_pdf
from typer.testing import CliRunner

from autorag.auth import service
from autorag.cli import index
from autorag.cli._common import local_time, plural
from autorag.cli.main import app, run
from autorag.context import open_context
from autorag.errors import Conflict, InvalidInput
from autorag.ingest.minsync import ScanRules, scan
from autorag.ingest.pipeline import IngestOutcome
from autorag.sources import plan_source_roots
from autorag.workspace import Workspace, init_workspace

PASSWORD = "long enough password"


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, list[str]]:
    """``autorag ARGS`` as the console script runs it: its exit code and stderr lines."""
    monkeypatch.setattr(sys, "argv", ["autorag", *args])
    with pytest.raises(SystemExit) as exited:
        run()
    code = exited.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err.splitlines()


@pytest.fixture(autouse=True)
def _umask_kept() -> Iterator[None]:
    """``run()`` makes the process's files owner-only: other tests keep theirs."""
    umask = os.umask(0o077)
    os.umask(umask)
    yield
    os.umask(umask)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return init_workspace(tmp_path / "kb")


# -- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["--help"], ["search", "--help"], ["refresh", "--help"]])
def test_help_shows_flags_without_a_value(args: list[str]) -> None:
    shown = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "--help" in shown.output and "<bool>" not in shown.output
    if args != ["--help"]:
        assert re.search(r"--json\s+Print machine-readable JSON", shown.output)


def test_help_shows_one_value_for_a_repeatable_option() -> None:
    shown = CliRunner().invoke(app, ["keys", "create", "--help"], env={"COLUMNS": "200"})
    assert re.search(r"--workspace\s+<str>\s+Limit the key", shown.output), shown.output
    assert "<list[" not in shown.output


# -- usage errors ----------------------------------------------------------------------------
def test_a_usage_error_is_one_plain_line_and_a_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _run(monkeypatch, capsys, "keys", "create")
    assert code == 2
    assert lines == ["error: missing argument 'name'.", "Try 'autorag keys create --help'."]


def test_a_group_without_a_command_prints_its_help_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["autorag", "keys"])
    with pytest.raises(SystemExit) as exited:
        run()
    printed = capsys.readouterr()
    assert exited.value.code == 2 and printed.err == ""
    assert "Create, list and revoke API keys." in printed.out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--from", "2025-13-01"], "error: --from: not a date (expected YYYY-MM-DD)"),
        (["--to", "yesterday"], "error: --to: not a date (expected YYYY-MM-DD)"),
        (["--from", "2025-06-01", "--to", "2025-01-31"],
         "error: --from: 2025-06-01 is not before --to 2025-01-31"),
    ],
)  # fmt: skip
def test_a_bad_date_is_named_by_its_option(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    said: str,
) -> None:
    code, lines = _run(monkeypatch, capsys, "search", "refunds", *args)
    assert (code, lines) == (2, [said, "Try 'autorag search --help'."])


def test_an_empty_search_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = _run(monkeypatch, capsys, "search", "  ")
    assert (code, lines) == (2, ["error: nothing to search for: the query is empty"])


# -- autorag add FILE ------------------------------------------------------------------------
def test_a_single_file_is_a_search_path_of_its_own(workspace: Workspace, tmp_path: Path) -> None:
    notes = tmp_path / "loose" / "Board notes.md"
    notes.parent.mkdir()
    notes.write_text("# Board\n\nThe budget is approved.\n")
    (notes.parent / "not added.md").write_text("# Other\n")
    added = CliRunner().invoke(app, ["-w", str(workspace.root), "add", str(notes)])
    assert added.exit_code == 0, added.output
    assert "/Board-notes.md  ←" in added.output
    search_paths = workspace.read_config()["search_paths"]
    assert search_paths == [str(notes)]
    entries, problems = scan(plan_source_roots(search_paths), ScanRules())
    assert [(e.source_id, e.path) for e in entries] == [("/Board-notes.md", notes)]
    assert problems == []


def test_a_file_inside_a_search_path_or_missing_is_not_added(
    workspace: Workspace, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n")
    cli = CliRunner()
    assert cli.invoke(app, ["-w", str(workspace.root), "add", str(docs)]).exit_code == 0
    again = cli.invoke(app, ["-w", str(workspace.root), "add", str(docs / "a.md")])
    assert again.exit_code == 0 and "indexed already" in again.output
    assert workspace.read_config()["search_paths"] == [str(docs)]
    missing = cli.invoke(app, ["-w", str(workspace.root), "add", str(tmp_path / "nope.md")])
    assert isinstance(missing.exception, InvalidInput)
    assert "does not exist" in missing.exception.message


# -- autorag keys create without --user ------------------------------------------------------
def test_a_key_without_user_belongs_to_the_only_admin(workspace: Workspace) -> None:
    context = open_context(workspace)
    try:
        cli, args = CliRunner(), ["-w", str(workspace.root), "keys", "create", "nightly"]
        nobody = cli.invoke(app, args)
        assert isinstance(nobody.exception, InvalidInput)
        assert "no admin" in nobody.exception.message
        service.create_user(context.catalog, "root", PASSWORD, "admin")
        service.create_user(context.catalog, "ann", PASSWORD, "member")
        created = cli.invoke(app, args)
        assert created.exit_code == 0, created.output
        assert [k.username for k in service.list_api_keys(context.catalog)] == ["root"]
        service.create_user(context.catalog, "bea", PASSWORD, "admin")
        two = cli.invoke(app, args)
        assert isinstance(two.exception, InvalidInput)
        assert "2 admins (bea, root)" in two.exception.message
    finally:
        context.close()


# -- autorag serve on a busy port ------------------------------------------------------------
@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_serve_on_a_busy_port_fails_before_serving(workspace: Workspace, busy_port: int) -> None:
    result = CliRunner().invoke(app, ["-w", str(workspace.root), "serve", "--port", str(busy_port)])
    assert isinstance(result.exception, Conflict)
    assert f"port {busy_port} on 127.0.0.1 is in use" in result.exception.message
    assert "Serving" not in result.output


# -- words -----------------------------------------------------------------------------------
def test_counts_take_the_right_plural() -> None:
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert plural(1, "search path") == "1 search path"
    assert plural(3, "copy", "copies") == "3 copies"


def test_times_are_local_to_the_second_with_the_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    try:
        time.tzset()
        stored = datetime(2026, 12, 3, 17, 20, 35, 123456)  # naive: UTC, as stored
        assert local_time(stored) == "2026-12-03 18:20:35 CET"
        assert local_time("2026-07-01T12:00:00.5+00:00") == "2026-07-01 14:00:00 CEST"
        assert local_time(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01 01:00:00 CET"
        assert local_time(None) == ""
    finally:
        monkeypatch.undo()
        time.tzset()


# -- refresh: the rate and the readers' warnings ---------------------------------------------
def test_no_rate_is_shown_over_files_that_were_not_read() -> None:
    with Progress(disable=True) as progress:
        observer = index._ProgressObserver(progress)
        observer.planned(5000, 0, 0)
        for n in range(5000):  # touched, but their content is unchanged: none is read
            observer.done(IngestOutcome(f"/docs/{n}.md", "unchanged"))
        task = progress.tasks[0]
        assert task.completed == 5000
        assert task.fields["read_rate"] is None
        assert index._RateColumn().render(task).plain == ""


def test_pdf_reader_warnings_go_to_the_log_not_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pdf = write_pdf(tmp_path / "damaged.pdf", ["The refund window is thirty days."]).read_bytes()
    pointer = re.search(rb"startxref\s+(\d+)", pdf)
    assert pointer is not None
    wrong = str(int(pointer.group(1)) + 7).encode()
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(pdf[: pointer.start(1)] + wrong + pdf[pointer.end(1) :])
    log_file = tmp_path / "refresh.log"
    with index._reader_messages_to(log_file) as noted:
        assert "thirty days" in pypdf.PdfReader(damaged).pages[0].extract_text()
    assert noted.count >= 1
    assert "startxref" in log_file.read_text()
    assert capsys.readouterr().err == ""
    assert logging.getLogger("pypdf").propagate  # as it was, once the refresh is over
