"""``autorag synth`` as a user runs it, in extractive mode (no model configured), through
the command's entry point (``tests/cli.py``): a run over two indexed documents with its
progress and proposed items, the review with diffs and cited passages, some items
approved (the page's history names the run), the rest rejected, the same documents
skipped next time, a queued run cancelled, and the ``--json`` shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli import Completed, autorag
from tests.workspaces import new_workspace

DOCS = {
    "apollo.md": "# Apollo\n\nApollo is the launch project of the team. Apollo launches in "
    "May from Kourou.\n\nJane Roe leads Apollo. Jane Roe signs the launch checklist.\n",
    "kiln.md": "# Kiln\n\nThe Kiln fires at dawn. The Kiln is serviced on Fridays.\n\n"
    "Jane Roe owns the Kiln and its logbook.\n",
}
SOURCES = {"/docs/apollo.md", "/docs/kiln.md"}


def synth(kb: Path, *args: str) -> Completed:
    return autorag("-w", str(kb), "synth", *args, env={"COLUMNS": "200"})


def run(kb: Path, *args: str) -> str:
    result = synth(kb, *args)
    assert result.returncode == 0, f"autorag synth {' '.join(args)}:\n{result.stderr}"
    return result.stdout


def run_json(kb: Path, *args: str) -> Any:
    return json.loads(run(kb, *args, "--json"))


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with two indexed documents and the archive ``handbook``."""
    root = tmp_path_factory.mktemp("synth-cli")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    kb = new_workspace(root / "kb").root
    for command in (("add", str(docs)), ("refresh",), ("wiki", "create", "handbook")):
        done = autorag("-w", str(kb), *command)
        assert done.returncode == 0, done.stderr
    return kb


def test_a_run_reviewed_approved_in_part_and_rejected(kb: Path) -> None:
    shown = run(kb, "run", "handbook")
    assert "no model wrote these texts" in shown
    (listed,) = run_json(kb, "ls", "handbook")
    number = listed["id"]
    assert (listed["status"], listed["mode"], listed["sources"]) == ("ready", "extractive", 2)
    assert f"autorag synth show {number}" in shown and f"synth approve {number}" in shown
    assert "create" in shown and "overview" in shown and "/docs/apollo.md" in shown

    review = run(kb, "show", str(number))
    assert "Sources" in review and "Why:" in review and "/docs/kiln.md" in review
    assert "+" in review and "no model wrote these texts" in review
    preview = run_json(kb, "show", str(number))
    assert preview["run"]["id"] == number and preview["run"]["status"] == "ready"
    items = preview["items"]
    assert {"id", "action", "path", "body", "reason", "sources", "diff", "stale"} <= set(items[0])
    creates = [item for item in items if item["action"] == "create"]
    assert creates and {p["sourceId"] for item in creates for p in item["sources"]} <= SOURCES

    chosen = creates[0]
    decided = run_json(kb, "approve", str(number), "--only", str(chosen["id"]))
    assert (decided["applied"], decided["pages"]) == ([chosen["id"]], [chosen["path"]])
    assert decided["run"]["status"] == "partially_applied"
    shown = autorag(
        "-w", str(kb), "wiki", "show", "handbook", chosen["path"], "--history", "--json"
    )
    page = json.loads(_ok(shown))
    (version,) = page["history"]
    assert f"synthesis run {number}" in version["note"]
    assert any(source in version["note"] for source in SOURCES)

    rejected = run(kb, "reject", str(number))
    assert f"Rejected {len(items) - 1} items; nothing was written." in rejected
    after = run_json(kb, "show", str(number))
    assert after["run"]["pending"] == 0
    assert sorted(i["status"] for i in after["items"]) == ["applied"] + ["rejected"] * (
        len(items) - 1
    )
    listing = json.loads(_ok(autorag("-w", str(kb), "wiki", "ls", "handbook", "--json")))
    assert [p["path"] for p in listing] == [chosen["path"]]

    # The same documents, unchanged since the approval: nothing to read.
    again = synth(kb, "run", "handbook")
    assert again.returncode == 2 and "unchanged since run" in again.stderr, again.stderr


def test_a_queued_run_is_cancelled(kb: Path) -> None:
    listed = json.loads(_ok(autorag("-w", str(kb), "docs", "list", "--json")))
    kiln = next(str(d["id"]) for d in listed if d["source_id"] == "/docs/kiln.md")
    queued = run_json(kb, "run", "handbook", "--force", "--docs", kiln, "--background")
    assert (queued["status"], queued["sources"]) == ("queued", 1)
    cancelled = run_json(kb, "cancel", str(queued["id"]))
    assert cancelled["status"] == "cancelled"
    assert "cancelled" in run(kb, "ls")


def test_errors_are_one_line_and_an_exit_code(kb: Path) -> None:
    missing = synth(kb, "show", "999")
    assert missing.returncode == 3 and missing.stderr.startswith("error: ")
    no_archive = synth(kb, "run", "nowhere")
    assert no_archive.returncode == 3 and "nowhere" in no_archive.stderr
    bad_ids = synth(kb, "approve", "1", "--only", "a,b")
    assert bad_ids.returncode == 2 and "--only" in bad_ids.stderr
    bad_date = synth(kb, "run", "handbook", "--since", "soon")
    assert bad_date.returncode == 2 and "--since" in bad_date.stderr
    assert "autorag synth show" in run(kb, "--help")


def _ok(result: Completed) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout
