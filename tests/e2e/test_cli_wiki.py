"""``autorag wiki`` as a user runs it, through the command's entry point (``tests/cli.py``):
an archive written from standard input, shown with its backlinks and history, listed as
a tree, searched, linked, exported and imported, a page from an indexed document, and
``edit`` with a real editor process: a save, and a stale save that keeps the user's text.
"""

from __future__ import annotations

import json
import stat
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

from autorag.context import open_context
from autorag.wiki.service import WikiService
from autorag.workspace import Workspace
from tests.cli import Completed, autorag
from tests.workspaces import new_workspace

EDITOR_WAIT_S = 120.0  # how long the paused editor waits for the test (never reached)


def run(kb: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    result = wiki(kb, *args, stdin=stdin, env=env)
    assert result.returncode == 0, f"autorag wiki {' '.join(args)}:\n{result.stderr}"
    return result.stdout


def run_json(kb: Path, *args: str, stdin: str | None = None) -> Any:
    return json.loads(run(kb, *args, "--json", stdin=stdin))


def wiki(
    kb: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Completed:
    return autorag("-w", str(kb), "wiki", *args, input=stdin, env=env)


def _workspace(tmp_path: Path) -> Path:
    return new_workspace(tmp_path / "kb").root


def test_an_archive_from_the_command_line(tmp_path: Path) -> None:
    kb = _workspace(tmp_path)
    assert "No archives yet" in run(kb, "ls")
    run(kb, "create", "handbook", "--title", "Team handbook")
    apollo = "---\ntags: [space]\n---\nApollo launches in May. See [[Checklist]].\n"
    made = run_json(kb, "new", "handbook", "projects/apollo", "--title", "Apollo", stdin=apollo)
    assert (made["path"], made["version"], made["frontMatter"]) == (
        "projects/apollo",
        1,
        {"tags": ["space"]},
    )
    assert "Created 'checklist'" in run(
        kb, "new", "handbook", "Checklist", "--title", "Checklist", stdin="Before [[Apollo]] go.\n"
    )

    shown = run(kb, "show", "handbook", "Apollo", "--backlinks", "--history")
    assert "tags:" in shown and "See [[Checklist]]." in shown
    assert "Backlinks" in shown and "checklist" in shown and "Before Apollo go." in shown
    data = run_json(kb, "show", "handbook", "projects/apollo", "--backlinks", "--history")
    assert [link["sourcePath"] for link in data["backlinks"]] == ["checklist"]
    assert [version["version"] for version in data["history"]] == [1]

    tree = run(kb, "ls", "handbook", "--tree")
    assert tree.index("projects") < tree.index("apollo") and "Apollo" in tree
    assert [p["path"] for p in run_json(kb, "ls", "handbook")] == ["checklist", "projects/apollo"]
    (archive,) = run_json(kb, "ls")
    assert (archive["name"], archive["pageCount"]) == ("handbook", 2)

    links = run_json(kb, "links", "handbook", "projects/apollo")
    assert [link["targetPath"] for link in links["outgoing"]] == ["checklist"]
    assert links["dangling"] == []
    hits = run_json(kb, "search", "handbook", "launches in May")
    assert hits[0]["path"] == "projects/apollo" and "May" in hits[0]["text"]

    # History: an edit through the editor (a real process), a diff, a restore.
    draft_text = tmp_path / "new.md"
    draft_text.write_text("Apollo launches in June.\n")
    edited = run(kb, "edit", "handbook", "projects/apollo", env={"EDITOR": f"cp {draft_text}"})
    assert "version 2" in edited
    unchanged = run(kb, "edit", "handbook", "projects/apollo", env={"EDITOR": "true"})
    assert "No changes." in unchanged
    diff = run(kb, "diff", "handbook", "projects/apollo", "1", "2")
    assert "+Apollo launches in June." in diff and "-Apollo launches in May." in diff
    assert "as version 3" in run(kb, "restore", "handbook", "projects/apollo", "1")
    versions = run_json(kb, "history", "handbook", "projects/apollo")
    assert [v["version"] for v in versions] == [3, 2, 1]
    run(kb, "rename", "handbook", "projects/apollo", "programs/apollo")
    assert run_json(kb, "show", "handbook", "projects/apollo")["path"] == "programs/apollo"

    # Export, then import the zip and a folder (an Obsidian vault) into a second archive.
    exported = tmp_path / "handbook.zip"
    assert "Wrote 2 pages" in run(kb, "export", "handbook", "-o", str(exported))
    with zipfile.ZipFile(exported) as zipped:
        assert {"checklist.md", "programs/apollo.md"} <= set(zipped.namelist())
    run(kb, "create", "copy")
    report = run_json(kb, "import", "copy", str(exported))
    assert sorted(report["created"]) == ["checklist", "programs/apollo"]
    vault = tmp_path / "vault" / "Projects"
    vault.mkdir(parents=True)
    (vault / "Kiln Notes.md").write_text("# Kiln notes\n\nFires at dawn. [[Checklist]]\n")
    imported = run(kb, "import", "copy", str(vault.parent))
    assert "1 created" in imported
    assert run_json(kb, "show", "copy", "projects/kiln-notes")["title"] == "Kiln notes"

    assert "person" in run(kb, "templates", "list")
    run(kb, "rm", "copy", "projects/kiln-notes", "--yes")
    run(kb, "rm", "copy", "--yes")
    assert [a["name"] for a in run_json(kb, "ls")] == ["handbook"]


def test_a_page_from_an_indexed_document(tmp_path: Path) -> None:
    kb = _workspace(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "minutes.md").write_text("# Minutes\n\nThe board approved the granary budget.\n")
    assert autorag("-w", str(kb), "add", str(docs)).returncode == 0
    assert autorag("-w", str(kb), "refresh").returncode == 0
    run(kb, "create", "handbook")
    page = run_json(kb, "from-doc", "handbook", "/docs/minutes.md", "minutes/board")
    assert page["path"] == "minutes/board" and "granary budget" in page["body"]


def test_errors_are_one_line_and_an_exit_code(tmp_path: Path) -> None:
    kb = _workspace(tmp_path)
    missing = wiki(kb, "show", "nowhere", "page")
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("error: ")
    run(kb, "create", "handbook")
    taken = wiki(kb, "create", "handbook")
    assert taken.returncode == 4 and "handbook" in taken.stderr
    bad = wiki(kb, "new", "handbook", "../etc/passwd", stdin="x")
    assert bad.returncode == 2 and "not a valid page path" in bad.stderr
    not_yaml = wiki(kb, "new", "handbook", "ok", stdin="---\n: [\n---\nx")
    assert not_yaml.returncode == 2 and "front matter" in not_yaml.stderr
    assert wiki(kb, "show", "handbook", "ok").returncode == 3  # nothing half-written


def test_a_manager_names_the_members_who_write_an_archive(tmp_path: Path) -> None:
    kb = _workspace(tmp_path)
    for user in ("alice", "bob"):
        made = autorag(
            "-w", str(kb), "users", "create", user, "--password-stdin", input="a long password\n"
        )
        assert made.returncode == 0, made.stderr
    unknown = wiki(kb, "create", "handbook", "--writer", "nobody")
    assert unknown.returncode == 2 and "no user 'nobody'" in unknown.stderr
    assert wiki(kb, "ls", "--json").stdout.strip() == "[]"  # nothing made
    run(kb, "create", "handbook", "--writer", "alice")
    assert run_json(kb, "writers", "handbook") == ["alice"]
    assert run_json(kb, "writers", "handbook", "--add", "bob", "--remove", "alice") == ["bob"]
    assert "Writers of 'handbook': bob." in run(kb, "writers", "handbook")
    assert wiki(kb, "writers", "handbook", "--add", "nobody").returncode == 2
    run(kb, "writers", "handbook", "--remove", "bob")
    assert "managers and admins write" in run(kb, "writers", "handbook")


_PAUSED_EDITOR = """\
import pathlib, sys, time
draft = pathlib.Path(sys.argv[1])
draft.write_text(draft.read_text() + "My careful addition.\\n")
folder = pathlib.Path({folder!r})
(folder / "opened").write_text(str(draft))
deadline = time.monotonic() + {wait}
while not (folder / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def test_edit_refuses_a_stale_save_and_keeps_the_text(tmp_path: Path) -> None:
    """While the editor is open, someone else saves the page: the edit is refused with
    the version now current, and the user's text stays in the draft (the owner's alone)."""
    kb = _workspace(tmp_path)
    run(kb, "create", "handbook")
    run(kb, "new", "handbook", "plan", stdin="The first plan.\n")
    signals = tmp_path / "signals"
    signals.mkdir()
    editor = tmp_path / "editor.py"
    editor.write_text(_PAUSED_EDITOR.format(folder=str(signals), wait=EDITOR_WAIT_S))
    outcome: list[Completed] = []
    editing = threading.Thread(
        target=lambda: outcome.append(
            wiki(kb, "edit", "handbook", "plan", env={"EDITOR": f"{sys.executable} {editor}"})
        )
    )
    editing.start()
    try:
        _wait_for(signals / "opened", editing)
        _save_elsewhere(Workspace(kb), "The plan someone else saved.\n")
    finally:
        (signals / "go").write_text("")
        editing.join()

    (result,) = outcome
    assert result.returncode == 4, result.stderr
    assert "saved by someone else" in result.stderr and "now version 2" in result.stderr
    draft = Path((signals / "opened").read_text())
    assert str(draft) in result.stderr
    assert draft.read_text() == "The first plan.\nMy careful addition.\n"
    assert stat.S_IMODE(draft.stat().st_mode) == 0o600
    assert "someone else" in run(kb, "show", "handbook", "plan")
    draft.unlink()


def _wait_for(signal: Path, editing: threading.Thread) -> None:
    """Until the editor has opened the draft (or the command ended without opening it)."""
    while not signal.exists():
        assert editing.is_alive(), "the edit ended before its editor opened the draft"
        time.sleep(0.02)


def _save_elsewhere(workspace: Workspace, body: str) -> None:
    context = open_context(workspace)
    try:
        service = WikiService(context)
        service.save_page("handbook", "plan", body=body, base_version=1, by="someone else")
    finally:
        context.close()
