"""Source policy matching (seed 000, "Policy resolution normalizes before matching").

Pure: rules live in memory, roots are real temporary folders from plan_source_roots.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.sources import SourceRoot, normalize_source, plan_source_roots
from autorag.sources.globs import MAX_GLOB_CHARS, canonical_glob, compile_glob, escape_glob
from autorag.sources.policy import (
    LEVELS,
    MAX_RULES,
    MemoryPolicyBackend,
    PolicyStore,
    matching_rules,
    parse_level,
)

INVALID_SOURCES = [
    "",
    "   ",
    "docs/a.md",  # relative
    "docs\\a.md",  # backslash in a relative source
    "\\docs\\a.md",  # relative to the current drive
    "/docs/../etc/passwd",
    "/docs/%2e%2e/etc/passwd",
    "C:\\secrets\\..\\x",
    "kakao:chat/sender/1",  # the retired colon scheme
    "file:///etc/passwd",
    "https://example.com/a.md",
    "/docs/a\x00.md",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("policy")
    for directory in ("docs/sub", "docs/private", "notes"):
        (base / directory).mkdir(parents=True)
    return base


@pytest.fixture(scope="module")
def roots(tree: Path) -> list[SourceRoot]:
    roots = plan_source_roots([tree / "docs", tree / "docs" / "sub", tree / "notes"])
    assert [root.prefix for root in roots] == ["docs", "sub", "notes"]
    return roots


def real(path: Path) -> str:
    return os.path.realpath(path)


def store_with(
    rules: dict[str, str], roots: list[SourceRoot] | None
) -> tuple[PolicyStore, MemoryPolicyBackend]:
    backend = MemoryPolicyBackend()
    store = PolicyStore(backend, roots)
    for glob, level in rules.items():
        store.set_rule(glob, level)
    return store, backend


# -- canonicalization before matching ----------------------------------------------------
def test_a_real_path_under_a_search_path_matches_the_roots_virtual_globs(
    tree: Path, roots: list[SourceRoot]
) -> None:
    store, _ = store_with({"/docs/**": "share"}, roots)
    source = real(tree / "docs" / "policy" / "refund.md")
    assert store.canonical(source) == "/docs/policy/refund.md"
    assert store.resolve_policy(source) == "share"
    assert store.resolve_policy("/docs/policy/refund.md") == "share"  # the virtual id


def test_nested_roots_the_longest_root_wins(tree: Path, roots: list[SourceRoot]) -> None:
    store, _ = store_with({"/docs/**": "share", "/sub/**": "ask"}, roots)
    source = real(tree / "docs" / "sub" / "a.md")
    assert store.canonical(source) == "/sub/a.md"
    assert store.resolve_policy(source) == "ask"
    # Its virtual id through the outer root is the same file, so the same policy.
    assert store.resolve_policy("/docs/sub/a.md") == "ask"


def test_a_datasource_identity_matches_its_namespace(roots: list[SourceRoot]) -> None:
    store, _ = store_with({"/kakao/**": "ask", "/kakao/work/**": "share"}, roots)
    assert store.resolve_policy("/kakao/personal/chunks/chunk-1") == "ask"
    assert store.resolve_policy("/kakao/work/chunks/chunk-9") == "share"


def test_an_absolute_path_outside_every_root_matches_absolute_globs(
    roots: list[SourceRoot],
) -> None:
    store, _ = store_with({"/etc/**": "share", "/etc/secrets/**": "private"}, roots)
    assert store.resolve_policy("/etc/hosts") == "share"
    assert store.resolve_policy("/etc/secrets/key.pem") == "private"
    assert store.explain("/etc/secrets/key.pem").winner is not None


def test_windows_paths_canonicalize_and_match_drive_globs(roots: list[SourceRoot]) -> None:
    store, _ = store_with({"C:/**": "share", "C:/secrets/**": "private"}, roots)
    assert store.canonical("C:\\secrets\\x") == "C:/secrets/x"
    assert store.resolve_policy("C:\\secrets\\x") == "private"
    assert store.resolve_policy("c:\\Users\\me\\notes.txt") == "share"
    # Windows looks names up case-insensitively, so the rule must too.
    assert store.resolve_policy("C:\\SECRETS\\x") == "private"
    assert store.resolve_policy("//server/share/a.md") == "private"  # /** is POSIX only


def test_unc_paths_match_unc_globs(roots: list[SourceRoot]) -> None:
    store, _ = store_with({"//fileserver/public/**": "share"}, roots)
    assert store.resolve_policy("\\\\fileserver\\public\\a.md") == "share"
    assert store.resolve_policy("//fileserver/private/a.md") == "private"


@pytest.mark.parametrize("source", INVALID_SOURCES)
def test_an_invalid_source_fails_closed(roots: list[SourceRoot], source: str) -> None:
    store, backend = store_with({"/**": "share", "C:/**": "share", "//**": "share"}, roots)
    explanation = store.explain(source)
    assert explanation.canonical is None and explanation.decided_by == "invalid"
    assert explanation.level == "private" and explanation.matches == ()
    assert explanation.invalid_reason
    assert store.resolve_policy(source) == "private"
    assert store.mark_source_seen(source) is False
    assert not store.is_source_seen(source) and backend.seen_sources == {}


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("kakao:chat/sender/1", "kakao:"),
        ("file:///etc/passwd", "scheme"),
        ("docs\\a.md", "backslash"),
        ("docs/a.md", "absolute"),
        ("/docs/../x", ".."),
        ("", "empty"),
    ],
)
def test_explain_says_why_a_source_is_invalid(
    roots: list[SourceRoot], source: str, words: str
) -> None:
    reason = PolicyStore(MemoryPolicyBackend(), roots).explain(source).invalid_reason
    assert reason is not None and words in reason


def test_without_roots_sources_match_exactly_as_given(tree: Path) -> None:
    store, _ = store_with({"/docs/**": "share", "/notes/a.md": "share"}, None)
    source = real(tree / "docs" / "a.md")
    assert store.canonical(source) == source
    assert store.resolve_policy(source) == "private"  # no root: not rewritten to /docs/…
    assert store.resolve_policy("/docs/a.md") == "share"
    assert store.resolve_policy("/notes/a.md") == "share"
    assert store.resolve_policy("/notes//a.md") == "private"  # not canonicalized either
    assert store.resolve_policy("docs/a.md") == "private"  # relative: no absolute glob fits


# -- glob semantics --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("glob", "source", "matches"),
    [
        ("/docs/*", "/docs/a.md", True),
        ("/docs/*", "/docs/sub/a.md", False),  # * stays inside one segment
        ("/docs/*.md", "/docs/a.md", True),
        ("/docs/*.md", "/docs/a.md.txt", False),  # whole ids only
        ("/docs/**", "/docs", True),  # ** matches zero segments
        ("/docs/**", "/docs/a/b/c.md", True),
        ("/docs/**", "/docsx/a.md", False),
        ("/docs/**/*.md", "/docs/a.md", True),
        ("/docs/**/*.md", "/docs/x/y/a.md", True),
        ("/docs/**/*.md", "/docs/x/y/a.txt", False),
        ("/kakao/*/chunks/**", "/kakao/work/chunks/chunk-1", True),
        ("/kakao/*/chunks/**", "/kakao/work/media/1", False),
        ("/docs/a?.md", "/docs/a?.md", True),  # ? is a file name character
        ("/docs/a?.md", "/docs/ab.md", False),
        ("/docs/[x].md", "/docs/[x].md", True),
        ("/docs/#1.md", "/docs/#1.md", True),
        ("/docs/\\*.md", "/docs/*.md", True),  # an escaped * is literal
        ("/docs/\\*.md", "/docs/a.md", False),
        ("/**", "/anything/at/all", True),
        ("/**", "C:/x", False),
        ("/Docs/**", "/docs/a.md", False),  # POSIX ids are case-sensitive
        ("C:/Secrets/**", "C:/secrets/a", True),
    ],
)
def test_glob_semantics(glob: str, source: str, matches: bool) -> None:
    assert compile_glob(glob).matches(source) is matches


@pytest.mark.parametrize(
    ("glob", "canonical"),
    [
        ("/docs//a/./b/", "/docs/a/b"),
        ("c:/secrets/**", "C:/secrets/**"),
        ("/docs/\\*", "/docs/\\*"),
    ],
)
def test_globs_are_stored_canonical(glob: str, canonical: str) -> None:
    assert canonical_glob(glob) == canonical


@pytest.mark.parametrize(
    ("glob", "words"),
    [
        ("", "empty"),
        ("docs/**", "absolute"),
        ("kakao:chat/**", "scheme"),
        ("file:///etc/**", "scheme"),
        ("/docs/../**", ".."),
        ("/docs/%2e%2e/**", "traversal"),
        ("C:\\secrets\\**", "forward slashes"),
        ("/docs/**.md", "whole segment"),
        ("/" + "a" * MAX_GLOB_CHARS, "at most 500"),
    ],
)
def test_invalid_globs_are_refused_with_a_reason(glob: str, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        canonical_glob(glob)


def test_levels_are_checked() -> None:
    assert [parse_level(level) for level in LEVELS] == ["private", "ask", "share"]
    with pytest.raises(InvalidInput, match="private, ask, share"):
        parse_level("public")


# -- precedence: the most specific rule wins ----------------------------------------------
@pytest.mark.parametrize(
    ("rules", "source", "level"),
    [
        ({"/docs/**": "share", "/docs/private/**": "private"}, "/docs/private/a.md", "private"),
        ({"/docs/**": "private", "/docs/public/**": "share"}, "/docs/public/a.md", "share"),
        ({"/docs/**": "private", "/docs/*.md": "share"}, "/docs/a.md", "share"),
        ({"/docs/**/x.md": "private", "/docs/*/x.md": "share"}, "/docs/a/x.md", "share"),
        ({"/docs/a*": "share", "/docs/*a": "private"}, "/docs/aba", "share"),
        # An exact id beats a glob with the same literal prefix.
        ({"/docs/a.md": "share", "/docs/a.md*": "private"}, "/docs/a.md", "share"),
        # A tie goes to the most restrictive level.
        ({"/*/x/*": "share", "/*/*/x": "ask"}, "/a/x/x", "ask"),
        ({"C:/Secrets/**": "share", "C:/secrets/**": "private"}, "C:/SECRETS/k", "private"),
    ],
)
def test_the_most_specific_rule_wins(rules: dict[str, str], source: str, level: str) -> None:
    for order in (list(rules.items()), list(reversed(rules.items()))):
        store, _ = store_with(dict(order), [])
        explanation = store.explain(source)
        assert explanation.level == level
        assert len(explanation.matches) == len(rules)
        assert explanation.winner is not None and explanation.winner.level == level


def test_no_matching_rule_is_private_by_default(roots: list[SourceRoot]) -> None:
    store, _ = store_with({"/docs/**": "share"}, roots)
    explanation = store.explain("/notes/a.md")
    assert (explanation.level, explanation.decided_by, explanation.winner) == (
        "private",
        "default",
        None,
    )


# -- seen sources and promotion ---------------------------------------------------------
def test_seen_sources_are_recorded_canonical(tree: Path, roots: list[SourceRoot]) -> None:
    store, backend = store_with({}, roots)
    source = real(tree / "docs" / "a.md")
    assert not store.is_source_seen(source)
    assert store.mark_source_seen(source) and store.mark_source_seen("/docs/a.md")
    assert list(backend.seen_sources) == ["/docs/a.md"]
    seen = store.seen(source)
    assert seen is not None and seen.count == 2 and seen.first_seen_at <= seen.last_seen_at
    assert store.is_source_seen("/docs//a.md")


def test_promote_writes_an_exact_id_rule(tree: Path, roots: list[SourceRoot]) -> None:
    store, _ = store_with({"/docs/**": "ask"}, roots)
    source = real(tree / "docs" / "report*.md")
    rule = store.promote_source(source, "share")
    assert rule.glob == "/docs/report\\*.md" and rule.level == "share"
    assert store.resolve_policy(source) == "share"
    # The * in the file name is literal: no other file is promoted with it.
    assert store.resolve_policy("/docs/report-2024.md") == "ask"
    with pytest.raises(InvalidInput, match="kakao:"):
        store.promote_source("kakao:chat/1", "share")


def test_rules_are_listed_updated_and_removed() -> None:
    store, _ = store_with({"/b/**": "ask", "/a/**": "share"}, [])
    first = store.list_rules()
    assert [(r.glob, r.level) for r in first] == [("/a/**", "share"), ("/b/**", "ask")]
    updated = store.set_rule("/a//**", "private")  # the same rule, canonicalized
    assert (updated.glob, updated.level) == ("/a/**", "private")
    assert updated.created_at == first[0].created_at
    store.remove_rule("/a/**")
    assert [r.glob for r in store.list_rules()] == ["/b/**"]
    with pytest.raises(NotFound):
        store.remove_rule("/a/**")


def test_a_workspace_holds_at_most_1000_rules() -> None:
    store, _ = store_with({}, [])
    for index in range(MAX_RULES):
        store.set_rule(f"/r/{index}/**", "share")
    with pytest.raises(Conflict, match="at most 1000"):
        store.set_rule("/one/more/**", "share")
    store.set_rule("/r/0/**", "private")  # changing an existing rule still works


# -- properties ------------------------------------------------------------------------
_SEGMENT = st.sampled_from(["docs", "a", "b.md", "x*", "*", "**", "kakao", "ab", "?", "\\*"])
_ID_SEGMENT = st.sampled_from(["docs", "a", "b.md", "xa", "kakao", "ab", "c", "?", "#", "*"])
_LEADS = st.sampled_from(["/", "C:/", "c:\\", "//srv/", "", "kakao:", "file://"])


@st.composite
def _sources(draw: st.DrawFn) -> str:
    lead = draw(_LEADS)
    separator = "\\" if "\\" in lead else "/"
    return lead + separator.join(draw(st.lists(_ID_SEGMENT | st.just(".."), max_size=5)))


@given(source=_sources() | st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_invalid_source_resolves_private(source: str) -> None:
    assume(normalize_source(source, ()) is None)
    store, backend = store_with({"/**": "share", "C:/**": "share", "//**": "share"}, [])
    assert store.resolve_policy(source) == "private"
    assert store.mark_source_seen(source) is False and backend.seen_sources == {}


@st.composite
def _globs(draw: st.DrawFn) -> str:
    lead = draw(st.sampled_from(["/", "C:/"]))
    return canonical_glob(lead + "/".join(draw(st.lists(_SEGMENT, min_size=1, max_size=4))))


@given(
    rules=st.dictionaries(_globs(), st.sampled_from(LEVELS), max_size=6),
    source=_sources(),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=300, deadline=None)
def test_resolution_follows_matching_rules_in_any_order(
    rules: dict[str, str], source: str, seed: int
) -> None:
    items = list(rules.items())
    random.Random(seed).shuffle(items)
    store, backend = store_with(dict(items), [])
    level = store.resolve_policy(source)
    canonical = normalize_source(source, ())
    if canonical is None or not matching_rules(backend.rules.values(), canonical):
        assert level == "private"  # nothing matches: the default
    else:
        assert level in {rule.level for rule in matching_rules(backend.rules.values(), canonical)}
        assert level == store_with(rules, [])[0].resolve_policy(source)  # order-free


@given(
    lead=st.sampled_from(["/", "C:/", "//srv/"]),
    segments=st.lists(_ID_SEGMENT | st.just("a*b"), max_size=5),
)
@settings(max_examples=200, deadline=None)
def test_an_exact_rule_matches_only_its_own_id(lead: str, segments: list[str]) -> None:
    canonical = normalize_source(lead + "/".join(segments), ())
    assert canonical is not None
    glob = compile_glob(escape_glob(canonical))
    assert glob.exact and glob.matches(canonical)
    assert not glob.matches(canonical + "x") and not glob.matches(canonical + "/x")
