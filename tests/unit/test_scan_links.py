"""The walk of the search paths reads each file once, under its real path (issue 14)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autorag.ingest.minsync import ScanRules, scan
from autorag.sources import SourceRoot, plan_source_roots


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for folder in ("public", "private"):
        (docs / folder).mkdir(parents=True)
    (docs / "private" / "salary.md").write_text("salary")
    (docs / "public" / "notes.md").write_text("notes")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    return tmp_path


def roots_of(tree: Path) -> list[SourceRoot]:
    return plan_source_roots([tree / "docs"])


def walk(tree: Path, **rules: object) -> tuple[dict[str, Path], dict[str, str]]:
    entries, problems = scan(roots_of(tree), ScanRules(**rules))  # type: ignore[arg-type]
    found = {entry.source_id: entry.path for entry in entries}
    failed = {problem.source_id: str(problem.error_code) for problem in problems}
    return found, failed


def test_a_link_into_a_private_folder_is_read_as_its_target_only(tree: Path) -> None:
    (tree / "docs/public/salary-link.md").symlink_to(tree / "docs/private/salary.md")
    (tree / "docs/public/private-dir").symlink_to(tree / "docs/private")
    found, failed = walk(tree)
    assert set(found) == {"/docs/public/notes.md", "/docs/private/salary.md"}
    assert found["/docs/private/salary.md"] == tree / "docs/private/salary.md"
    assert failed == {}


def test_a_link_out_of_every_root_is_recorded_and_not_followed(tree: Path) -> None:
    (tree / "docs/public/out.md").symlink_to(tree / "outside/secret.md")
    (tree / "docs/public/etc").symlink_to(tree / "outside")
    found, failed = walk(tree)
    assert set(found) == {"/docs/public/notes.md", "/docs/private/salary.md"}
    assert failed == {"/docs/public/out.md": "link_outside", "/docs/public/etc": "link_outside"}


def test_an_operator_may_follow_links_out_of_one_root(tree: Path) -> None:
    (tree / "docs/public/etc").symlink_to(tree / "outside")
    root = roots_of(tree)[0]
    found, failed = walk(tree, follow_links=frozenset({root.path}))
    secret = os.path.realpath(tree / "outside/secret.md")
    assert found[secret] == Path(secret)  # its real path: private unless a rule says so
    assert failed == {}


def test_the_workspace_own_files_are_never_indexed(tree: Path) -> None:
    data = tree / "docs/public/ws/.autorag"
    data.mkdir(parents=True)
    (data / "autorag.db").write_text("catalog")
    (tree / "docs/public/db-link").symlink_to(data / "autorag.db")
    found, failed = walk(tree, ignore=(), protected=(os.path.realpath(data),))
    assert not any(".autorag" in source for source in found)
    assert failed == {"/docs/public/ws/.autorag/autorag.db": "protected"}


def test_a_file_with_two_names_is_refused_unless_allowed(tree: Path) -> None:
    os.link(tree / "docs/private/salary.md", tree / "docs/public/salary.md")
    found, failed = walk(tree)
    assert failed == {"/docs/public/salary.md": "hard_link", "/docs/private/salary.md": "hard_link"}
    assert "/docs/private/salary.md" not in found
    found, failed = walk(tree, hard_links=True)
    assert {"/docs/public/salary.md", "/docs/private/salary.md"} <= set(found)


def test_loops_are_recorded_and_odd_names_all_get_ids(tree: Path) -> None:
    public = tree / "docs/public"
    (public / "loop").symlink_to(public)
    (public / "self.md").symlink_to(public / "self.md")
    (tree / "docs/public\\leak.md").write_text("backslash")
    names = ["q#1?.md", "new\nline.md", "\uff0e\uff0e", "%2e%2e", "a%b.md"]
    for name in names:
        (public / name).write_text(name)
    found, failed = walk(tree)
    assert failed == {"/docs/public/self.md": "symlink_loop"}
    assert found["/docs/public%5Cleak.md"] == tree / "docs/public\\leak.md"
    assert {found[source].name for source in found if source.startswith("/docs/public/")} >= {
        *names,
        "notes.md",
    }
    assert len(found) == len(set(found.values()))  # one id, one file
