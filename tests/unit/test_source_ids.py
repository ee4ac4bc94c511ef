"""Canonical source ids (seed 000, "normalizeSource")."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autorag.errors import InvalidInput
from autorag.sources import (
    FILESYSTEM_ROOTS,
    SourceRoot,
    is_datasource_id,
    local_source_id,
    normalize_source,
    plan_source_roots,
    to_real_path,
)

SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
DRIVE = re.compile(r"^[A-Z]:/")


def digest(path: Path | str) -> str:
    return hashlib.sha256(str(path).encode()).hexdigest()[:6]


def real(path: Path) -> str:
    return os.path.realpath(path)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs, docs/sub (nested), other/docs (a second "docs") and notes."""
    base = tmp_path_factory.mktemp("roots")
    for directory in ("docs/sub", "other/docs", "notes"):
        (base / directory).mkdir(parents=True)
    return base


@pytest.fixture(scope="module")
def roots(tree: Path) -> list[SourceRoot]:
    return plan_source_roots(
        [tree / "docs", tree / "docs" / "sub", tree / "other" / "docs", str(tree / "notes")]
    )


def test_plan_names_roots_by_basename_and_hashes_a_repeated_name(
    tree: Path, roots: list[SourceRoot]
) -> None:
    second_docs = real(tree / "other" / "docs")
    assert [(root.prefix, root.path) for root in roots] == [
        ("docs", real(tree / "docs")),
        ("sub", real(tree / "docs" / "sub")),
        (f"docs-{digest(second_docs)}", second_docs),
        ("notes", real(tree / "notes")),
    ]


def test_plan_drops_duplicates_after_resolving(tree: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tree / "docs")
    planned = plan_source_roots([tree / "docs", f"{tree}/docs/", link])
    assert planned == [SourceRoot("docs", real(tree / "docs"))]


def test_plan_is_stable_when_paths_are_appended(tmp_path: Path) -> None:
    paths = [tmp_path / name / "docs" for name in ("a", "b", "c")]
    for path in paths:
        path.mkdir(parents=True)
    first = plan_source_roots(paths[1:2])
    later = plan_source_roots([paths[1], paths[0], paths[2]])
    assert later[0] == first[0] == SourceRoot("docs", real(paths[1]))
    assert plan_source_roots(paths[1:])[1] == later[2]


@pytest.mark.parametrize("name", ["tmp", "home", "Users", "data", "users"])
def test_plan_hashes_a_prefix_that_looks_like_a_filesystem_root(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    [root] = plan_source_roots([tmp_path / name])
    assert root.prefix == f"{name}-{digest(real(tmp_path / name))}"


def test_plan_sanitises_the_basename(tmp_path: Path) -> None:
    (tmp_path / "My Notes (2024)é").mkdir()
    [root] = plan_source_roots([tmp_path / "My Notes (2024)é"])
    assert root.prefix == "My-Notes--2024--"


def test_plan_rejects_the_filesystem_root_and_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        plan_source_roots(["/"])
    with pytest.raises(InvalidInput):
        plan_source_roots(["/tmp/a\x00b"])
    with pytest.raises(InvalidInput):
        plan_source_roots([tmp_path / "a\\b"])


def fake_realpath(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve paths as written, to plan roots under top-level directories we cannot create."""
    monkeypatch.setattr(os.path, "realpath", os.fspath)


def test_plan_hashes_a_prefix_that_reads_as_a_root_real_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_realpath(monkeypatch)
    planned = plan_source_roots(["/projects/acme", "/home/me/projects", "/docs/docs"])
    assert [root.prefix for root in planned] == [
        "acme",
        f"projects-{digest('/home/me/projects')}",
        f"docs-{digest('/docs/docs')}",
    ]
    # Otherwise /projects/acme/x would be both a virtual id and a real path.
    assert normalize_source("/home/me/projects/acme/x", planned) == (
        f"/projects-{digest('/home/me/projects')}/acme/x"
    )


def test_plan_hashes_the_name_of_a_top_level_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its virtual ids would otherwise be its real paths, and an escaped name (a%25b) would
    # read both as the file a%b and as the file a%25b.
    fake_realpath(monkeypatch)
    planned = plan_source_roots(["/projects", "/projects/acme"])
    prefix = f"projects-{digest('/projects')}"
    assert [root.prefix for root in planned] == [prefix, "acme"]
    assert normalize_source("/projects/readme.md", planned) == f"/{prefix}/readme.md"
    assert normalize_source("/projects/a%b.md", planned) == f"/{prefix}/a%25b.md"
    assert to_real_path(f"/{prefix}/a%25b.md", planned) == "/projects/a%b.md"
    assert normalize_source("/projects/acme/x", planned) == "/acme/x"


def test_plan_refuses_a_root_that_would_shadow_an_earlier_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_realpath(monkeypatch)
    with pytest.raises(InvalidInput, match="ambiguous"):
        plan_source_roots(["/home/me/projects", "/projects/acme"])


def test_real_path_under_a_root_becomes_its_virtual_id(tree: Path, roots: list[SourceRoot]) -> None:
    docs = real(tree / "docs")
    assert normalize_source(f"{docs}/policy/refund.md", roots) == "/docs/policy/refund.md"
    assert normalize_source(docs, roots) == "/docs"
    assert normalize_source(f"{docs}/", roots) == "/docs"


def test_nested_roots_longest_wins(tree: Path, roots: list[SourceRoot]) -> None:
    inner = real(tree / "docs" / "sub")
    assert normalize_source(f"{inner}/a.md", roots) == "/sub/a.md"
    # The outer root's spelling of the same file lands on the same id.
    assert normalize_source("/docs/sub/a.md", roots) == "/sub/a.md"
    assert normalize_source("/docs/subway/a.md", roots) == "/docs/subway/a.md"


def test_two_roots_named_docs_stay_apart(tree: Path, roots: list[SourceRoot]) -> None:
    other = real(tree / "other" / "docs")
    prefix = f"docs-{digest(other)}"
    assert normalize_source(f"{other}/a.md", roots) == f"/{prefix}/a.md"
    assert normalize_source(f"{real(tree / 'docs')}/a.md", roots) == "/docs/a.md"
    assert to_real_path(f"/{prefix}/a.md", roots) == f"{other}/a.md"


def test_virtual_ids_pass_through(roots: list[SourceRoot]) -> None:
    for source_id in ("/docs", "/docs/a.md", "/notes/x/y.txt"):
        assert normalize_source(source_id, roots) == source_id


def test_datasource_identity_passes_through(roots: list[SourceRoot]) -> None:
    source_id = "/kakao/personal/chunks/chunk-1"
    assert normalize_source(source_id, roots) == source_id
    assert is_datasource_id(source_id)
    assert to_real_path(source_id, roots) is None


def test_absolute_path_outside_roots_passes_as_itself(roots: list[SourceRoot]) -> None:
    assert normalize_source("/etc/secrets/key", roots) == "/etc/secrets/key"
    assert not is_datasource_id("/etc/secrets/key")
    assert to_real_path("/etc/secrets/key", roots) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("C:\\secrets\\x", "C:/secrets/x"),
        ("c:\\secrets\\x", "C:/secrets/x"),
        ("c:/secrets/x", "C:/secrets/x"),
        ("C:\\", "C:/"),
        ("\\\\server\\share\\x", "//server/share/x"),
        ("//server/share/x", "//server/share/x"),
        ("\\\\server\\share\\", "//server/share"),
    ],
)
def test_windows_drive_and_unc_paths(source: str, expected: str) -> None:
    assert normalize_source(source, []) == expected
    assert not is_datasource_id(source)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("/docs//a.md", "/docs/a.md"),
        ("/docs/./a.md", "/docs/a.md"),
        ("/docs/a/", "/docs/a"),
        ("///etc//x", "/etc/x"),
        ("/kakao\\personal\\1", "/kakao/personal/1"),
        ("/", "/"),
    ],
)
def test_spelling_is_collapsed(source: str, expected: str) -> None:
    assert normalize_source(source, []) == expected


@pytest.mark.parametrize(
    "source",
    ["/docs/a#b.md", "/docs/what?.md", "/docs/#?", "/docs/notes:2024.md", "/docs/file:x"],
)
def test_file_name_characters_stay(roots: list[SourceRoot], source: str) -> None:
    assert normalize_source(source, roots) == source


@pytest.mark.parametrize(
    "source",
    [
        "",
        "   ",
        "\t",
        "docs/a.md",
        "./a.md",
        "a\\b",
        "\\docs\\a.md",
        "kakao:room/alice/chunk-1",
        "file:///etc/passwd",
        "file:/etc/passwd",
        "http://example.com/a",
        "https://example.com/a",
        "s3+x.y-z:bucket",
        "C:",
        "C:secrets",
        "/docs/../etc",
        "/docs/..",
        "..",
        "/..",
        "C:\\docs\\..\\x",
        "\\\\server\\..\\x",
        "/docs/a\\..\\..\\x",
        "/docs/%2e%2e/x",
        "/docs/%2E./x",
        "/docs/a%2f..%2fb",
        "/docs/\uff0e\uff0e/x",
        "/docs/a\x00b",
        "/docs/a\nb",
        "/docs/a\x7fb",
        "/docs/a\ud800b",
        "\\\\",
    ],
)
def test_invalid_sources_fail_closed(roots: list[SourceRoot], source: str) -> None:
    assert normalize_source(source, roots) is None
    assert to_real_path(source, roots) is None
    assert not is_datasource_id(source)


def test_to_real_path_inverts_local_ids(tree: Path, roots: list[SourceRoot]) -> None:
    docs = real(tree / "docs")
    assert to_real_path("/docs/policy/refund.md", roots) == f"{docs}/policy/refund.md"
    assert to_real_path("/docs", roots) == docs
    assert to_real_path(f"{docs}/a.md", roots) == f"{docs}/a.md"
    assert to_real_path("/sub/a.md", roots) == f"{real(tree / 'docs' / 'sub')}/a.md"


def test_well_known_roots_are_not_datasources() -> None:
    assert {"home", "Users", "tmp", "data", "work", "workspace"} <= FILESYSTEM_ROOTS
    assert not is_datasource_id("/home/me/a.md")
    assert not is_datasource_id("/users/me/a.md")
    assert not is_datasource_id("/")
    assert is_datasource_id("/slack/team/channel/1")


# -- properties ---------------------------------------------------------------------------

SEGMENTS = st.sampled_from(
    ["a", "docs", "sub", "notes", "home", "tmp", "..", ".", "", "%2e%2e", "#x?y", "C:", "file:",
     "kakao:c", "a b", "é", "\\", "x\x00", "\uff0e\uff0e", "...", "other"]
)  # fmt: skip
LEADS = st.sampled_from(["", "/", "//", "///", "\\", "\\\\", "C:\\", "c:/", "./", "http://"])


@st.composite
def sources(draw: st.DrawFn, roots: list[SourceRoot]) -> str:
    """Path-shaped text: real or virtual paths under the roots, and near misses."""
    lead = draw(st.one_of(LEADS, st.sampled_from([f"{root.path}/" for root in roots])))
    parts = draw(st.lists(SEGMENTS, max_size=6))
    return lead + draw(st.sampled_from(["/", "\\"])).join(parts)


NAME_CHARS = st.one_of(
    st.characters(whitelist_categories=("L", "N")), st.sampled_from(" #?:-_.~+,;=@!'()[]")
)
NAMES = st.text(NAME_CHARS, min_size=1, max_size=8).filter(lambda name: name not in (".", ".."))


@given(source=st.text())
def test_never_raises_on_any_text(roots: list[SourceRoot], source: str) -> None:
    normalize_source(source, roots)
    to_real_path(source, roots)
    is_datasource_id(source)


@given(data=st.data())
def test_results_are_safe_canonical_fixed_points(
    roots: list[SourceRoot], data: st.DataObject
) -> None:
    source = data.draw(st.one_of(st.text(), sources(roots)))
    result = normalize_source(source, roots)
    if result is None:
        return
    assert ".." not in result.split("/")
    assert DRIVE.match(result) or not SCHEME.match(result)
    assert "\\" not in result
    assert normalize_source(result, roots) == result


@given(data=st.data())
def test_real_paths_under_a_root_round_trip(roots: list[SourceRoot], data: st.DataObject) -> None:
    root = data.draw(st.sampled_from(roots))
    path = "/".join([root.path, *data.draw(st.lists(NAMES, min_size=1, max_size=5))])
    source_id = normalize_source(path, roots)
    assert source_id is not None
    assert source_id.startswith("/") and not source_id.startswith(root.path)
    assert to_real_path(source_id, roots) == path


# -- file names are data (issue 14) -------------------------------------------------------

# Any name a POSIX file system permits: no "/" and no NUL; "." and ".." are not names.
ANY_NAME = st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda name: name not in (".", ".."))
ODD_NAMES = ["public\\leak.md", "q#1?.md", "%2e%2e", "new\nline.md", "\uff0e\uff0e",
             "a%25b", "a%b", "\u202eevil.md", "ﬁle.md", "..\\x", "\\"]  # fmt: skip


@given(names=st.lists(st.lists(ANY_NAME, min_size=1, max_size=3), max_size=8))
def test_every_name_gets_one_id_of_its_own_that_leads_back_to_it(
    roots: list[SourceRoot], names: list[list[str]]
) -> None:
    root = roots[0]
    paths = {"/".join([root.path, *parts]) for parts in names}
    ids = {path: local_source_id(path, roots) for path in paths}
    for path, source_id in ids.items():
        assert source_id is not None, path
        assert "\\" not in source_id and ".." not in source_id.split("/")
        assert normalize_source(source_id, roots) == source_id  # a fixed point
        assert normalize_source(path, roots) == source_id  # the real path maps to it
        assert to_real_path(source_id, roots) == path  # and back, exactly
    assert len(set(ids.values())) == len(ids)  # no two files share an id


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_names_are_escaped_never_split_or_refused(roots: list[SourceRoot], name: str) -> None:
    path = f"{roots[0].path}/{name}"
    source_id = local_source_id(path, roots)
    assert source_id is not None and source_id.count("/") == 2, source_id
    assert to_real_path(source_id, roots) == path


def test_a_backslash_name_and_a_real_subfolder_stay_apart(roots: list[SourceRoot]) -> None:
    base = roots[0].path
    assert local_source_id(f"{base}/public\\leak.md", roots) == "/docs/public%5Cleak.md"
    assert local_source_id(f"{base}/public/leak.md", roots) == "/docs/public/leak.md"
    assert normalize_source(f"{base}/public\\leak.md", roots) == "/docs/public%5Cleak.md"


@pytest.mark.parametrize(
    "source", ["/docs/%2e%2e/x", "/docs/a%2Fb", "/docs/a%zz", "/docs/\uff0e\uff0e/x", "/docs/a%5cb"]
)
def test_a_virtual_id_not_in_escaped_form_is_refused(roots: list[SourceRoot], source: str) -> None:
    assert normalize_source(source, roots) is None
    assert to_real_path(source, roots) is None


def test_escaped_names_of_odd_folders_are_accepted_as_ids(roots: list[SourceRoot]) -> None:
    base = roots[0].path
    assert to_real_path("/docs/%252e%252e/x", roots) == f"{base}/%2e%2e/x"
    assert to_real_path("/docs/%EF%BC%8E%EF%BC%8E/x", roots) == f"{base}/\uff0e\uff0e/x"


def test_a_folder_under_a_datasource_namespace_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_realpath(monkeypatch)
    with pytest.raises(InvalidInput, match="namespace"):
        plan_source_roots(["/kakao/chats"])
    assert plan_source_roots(["/home/me/uploads"])[0].prefix.startswith("uploads-")
