"""Page paths and archive names: one normal form, and a clear error for the rest."""

from __future__ import annotations

import pytest

from autorag.errors import InvalidInput
from autorag.wiki.slugs import check_name, is_path, normalise_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("projects/apollo", "projects/apollo"),
        ("  Projects/Apollo Launch.md  ", "projects/apollo-launch"),
        ("/people/ada/", "people/ada"),
        ("Café Menu", "cafe-menu"),
        ("notes/2024.06.01_standup", "notes/2024.06.01_standup"),
        ("a/b/c/d/e/f/g/h", "a/b/c/d/e/f/g/h"),
    ],
)
def test_paths_take_one_normal_form(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "/",
        "../etc/passwd",
        "notes/../../secret",
        "notes/./x",
        "a//b",
        "-/history",
        "notes/-",
        "_hidden",
        ".git/config",
        "a\\b",
        "notes/%2e%2e",
        "x\x00y",
        "tab\tname/\u202eevil",
        "a/b/c/d/e/f/g/h/i",
        "x" * 201,
        "数据",
    ],
)
def test_odd_paths_are_refused_with_a_clear_error(raw: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        normalise_path(raw)
    assert caught.value.code == "invalid_page_path"
    assert "not a valid page path" in caught.value.message
    assert is_path(raw) is None


def test_a_segment_is_never_a_lone_dash_so_sub_resources_can_follow_it() -> None:
    for raw in ("-", "a/-/b", "-/"):
        assert is_path(raw) is None


def test_archive_names() -> None:
    assert check_name(" Team-Notes_2 ") == "team-notes_2"
    for bad in ("", "-x", "a b", "a:b", "archive:1", "x" * 64, "é"):
        with pytest.raises(InvalidInput) as caught:
            check_name(bad)
        assert caught.value.code == "invalid_archive_name"
