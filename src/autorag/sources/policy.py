"""Source policy (seed 000): which sources may leave this machine, and how.

Each workspace holds glob rules (see :mod:`autorag.sources.globs`) mapping canonical
source ids to a level:

* ``private`` — never leaves this machine (the default, and the answer for any source
  that is not a valid source id);
* ``ask`` — each peer query that would return it needs the owner's approval;
* ``share`` — may be returned to trusted peers.

Precedence, when several rules match one id (the most specific wins):

1. an exact-id rule (no wildcard) beats every glob;
2. then the longer literal prefix (characters before the first wildcard);
3. then more literal characters in all;
4. then fewer ``**`` segments, then fewer segments holding a ``*``;
5. a tie on all of these goes to the most restrictive level (private > ask > share).

So ``/docs/private/**`` overrides ``/docs/**`` for ``/docs/private/a.md``, and
``/docs/*.md`` overrides ``/docs/**`` for ``/docs/a.md``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol, get_args

from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.sources.globs import canonical_glob, compile_glob, escape_glob
from autorag.sources.ids import SourceRoot, normalize_source

Level = Literal["private", "ask", "share"]
LEVELS: tuple[Level, ...] = get_args(Level)
DEFAULT_LEVEL: Level = "private"
MAX_RULES = 1000
# Longer than any real path (PATH_MAX is 4096 bytes): refused rather than stored.
MAX_SOURCE_CHARS = 4096

_RESTRICTIVENESS: dict[Level, int] = {"share": 0, "ask": 1, "private": 2}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


@dataclass(frozen=True)
class Rule:
    glob: str  # canonical
    level: Level
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SeenSource:
    """A source that was returned to, or considered for, a peer query."""

    source_id: str  # canonical
    first_seen_at: datetime
    last_seen_at: datetime
    count: int


@dataclass(frozen=True)
class Explanation:
    """Why a source resolves to its level: for ``autorag policy explain`` and the API."""

    source: str  # as given
    canonical: str | None  # None: not a valid source id
    invalid_reason: str | None
    matches: tuple[Rule, ...]  # every matching rule, the winner first
    level: Level

    @property
    def winner(self) -> Rule | None:
        return self.matches[0] if self.matches else None

    @property
    def decided_by(self) -> Literal["rule", "default", "invalid"]:
        if self.canonical is None:
            return "invalid"
        return "rule" if self.matches else "default"


class PolicyBackend(Protocol):
    """Where one workspace's rules and seen sources live (the catalog, or memory)."""

    def list_rules(self) -> list[Rule]: ...

    def put_rule(self, glob: str, level: Level, *, limit: int) -> Rule:
        """Create or update the rule for ``glob``; ``Conflict`` past ``limit`` rules."""
        ...

    def delete_rule(self, glob: str) -> bool: ...

    def record_seen(self, source_id: str) -> None: ...

    def get_seen(self, source_id: str) -> SeenSource | None: ...


def parse_level(value: str) -> Level:
    for level in LEVELS:
        if value == level:
            return level
    raise InvalidInput(f"level {value!r} is not one of {', '.join(LEVELS)}")


def matching_rules(rules: Iterable[Rule], source_id: str) -> list[Rule]:
    """The rules matching ``source_id`` (canonical), the most specific first."""
    found = [rule for rule in rules if compile_glob(rule.glob).matches(source_id)]
    return sorted(found, key=_precedence, reverse=True)


def _precedence(rule: Rule) -> tuple[bool, int, int, int, int, int]:
    glob = compile_glob(rule.glob)
    return (
        glob.exact,
        glob.literal_prefix,
        glob.literal_chars,
        -glob.globstars,
        -glob.stars,
        _RESTRICTIVENESS[rule.level],
    )


def rule_limit_error(limit: int) -> Conflict:
    return Conflict(
        f"a workspace holds at most {limit} policy rules; remove one first",
        code="policy_rule_limit",
    )


def why_invalid(source: str) -> str:
    """A reason for the user when ``normalize_source`` refused ``source`` (which decides:
    this only words it)."""
    if not source.strip():
        return "the source is empty"
    if len(source) > MAX_SOURCE_CHARS:
        return f"the source is longer than {MAX_SOURCE_CHARS} characters"
    if not _DRIVE.match(source) and _SCHEME.match(source):
        if source.lower().startswith("kakao:"):
            return "the retired 'kakao:' scheme; datasource ids look like /kakao/<instance>/…"
        return "a URL scheme is not a source id; give the path itself"
    if not source.startswith("/") and not _DRIVE.match(source):
        if "\\" in source:
            return "a backslash in a relative source"
        return "not absolute: give an absolute path, a virtual id (/docs/…) or a datasource id"
    if ".." in source.replace("\\", "/").split("/"):
        return "a '..' segment (path traversal)"
    return "not a valid source id (traversal, a control character or an empty UNC server)"


class PolicyStore:
    """One workspace's policy: rules, resolution, and the sources seen by peer queries.

    With ``source_roots`` (from ``plan_source_roots(search_paths)``), every source goes
    through ``normalize_source`` first: real paths under a search path become virtual ids,
    datasource ids and paths outside every root stay themselves, and an invalid source
    resolves to ``private`` and is never recorded. Without, sources are matched exactly
    as given (legacy).
    """

    def __init__(
        self, backend: PolicyBackend, source_roots: Sequence[SourceRoot] | None = None
    ) -> None:
        self._backend = backend
        self._roots = None if source_roots is None else tuple(source_roots)

    # -- resolution --------------------------------------------------------------------
    def canonical(self, source: str) -> str | None:
        """The id rules and seen records use for ``source``; ``None`` when invalid."""
        if len(source) > MAX_SOURCE_CHARS:
            return None
        if self._roots is None:
            return source
        return normalize_source(source, self._roots)

    def resolve_policy(self, source: str) -> Level:
        return self.explain(source).level

    def explain(self, source: str) -> Explanation:
        canonical = self.canonical(source)
        if canonical is None:
            return Explanation(source, None, why_invalid(source), (), DEFAULT_LEVEL)
        matches = matching_rules(self._backend.list_rules(), canonical)
        level = matches[0].level if matches else DEFAULT_LEVEL
        return Explanation(source, canonical, None, tuple(matches), level)

    # -- seen sources ------------------------------------------------------------------
    def mark_source_seen(self, source: str) -> bool:
        """Record that a peer query returned or considered ``source``; False (and nothing
        recorded) when it is not a valid source."""
        canonical = self.canonical(source)
        if canonical is None:
            return False
        self._backend.record_seen(canonical)
        return True

    def is_source_seen(self, source: str) -> bool:
        return self.seen(source) is not None

    def seen(self, source: str) -> SeenSource | None:
        canonical = self.canonical(source)
        return None if canonical is None else self._backend.get_seen(canonical)

    def promote_source(self, source: str, level: str) -> Rule:
        """Write an exact-id rule for ``source`` ("always share this one")."""
        canonical = self.canonical(source)
        if canonical is None:
            raise InvalidInput(f"cannot promote {source!r}: {why_invalid(source)}")
        return self.set_rule(escape_glob(canonical), level)

    # -- rules -------------------------------------------------------------------------
    def list_rules(self) -> list[Rule]:
        return sorted(self._backend.list_rules(), key=lambda rule: rule.glob)

    def set_rule(self, glob: str, level: str) -> Rule:
        """Create or update the rule for ``glob`` (stored in canonical form)."""
        return self._backend.put_rule(canonical_glob(glob), parse_level(level), limit=MAX_RULES)

    def remove_rule(self, glob: str) -> None:
        canonical = canonical_glob(glob)
        if not self._backend.delete_rule(canonical):
            raise NotFound(f"no policy rule for {canonical!r}")


@dataclass
class MemoryPolicyBackend:
    """Rules and seen sources in memory: for tests, and for callers without a catalog."""

    rules: dict[str, Rule] = field(default_factory=dict)
    seen_sources: dict[str, SeenSource] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def list_rules(self) -> list[Rule]:
        with self._lock:
            return list(self.rules.values())

    def put_rule(self, glob: str, level: Level, *, limit: int) -> Rule:
        with self._lock:
            old = self.rules.get(glob)
            if old is None and len(self.rules) >= limit:
                raise rule_limit_error(limit)
            now = datetime.now(UTC)
            rule = Rule(glob, level, old.created_at if old else now, now)
            self.rules[glob] = rule
            return rule

    def delete_rule(self, glob: str) -> bool:
        with self._lock:
            return self.rules.pop(glob, None) is not None

    def record_seen(self, source_id: str) -> None:
        with self._lock:
            now = datetime.now(UTC)
            old = self.seen_sources.get(source_id)
            first, count = (old.first_seen_at, old.count) if old else (now, 0)
            self.seen_sources[source_id] = SeenSource(source_id, first, now, count + 1)

    def get_seen(self, source_id: str) -> SeenSource | None:
        with self._lock:
            return self.seen_sources.get(source_id)
