"""Globs over canonical source ids: the pattern language of source policy rules.

A glob is written like the ids it matches (``/docs/**``, ``/kakao/*/chunks/**``,
``/etc/secrets/**``, ``C:/secrets/**``) and matches whole ids:

* ``*`` matches any run of characters inside one segment (never a ``/``);
* ``**``, as a whole segment, matches zero or more segments, so ``/docs/**`` matches
  ``/docs`` and everything under it;
* ``\\*`` is a literal ``*`` (file names may hold one); every other character is itself,
  ``?``, ``[`` and ``#`` included, because local file names are data, not syntax.

Drive (``C:/``) and UNC (``//server``) globs match case-insensitively, as Windows looks
names up; POSIX-form globs match case-sensitively. ``/**`` covers POSIX-form ids only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from autorag.errors import InvalidInput
from autorag.sources.ids import normalize_source

MAX_GLOB_CHARS = 500

# Noncharacters stand in for the wildcards while the glob's literal text goes through
# normalize_source, so a glob canonicalizes exactly as the ids it matches do.
_WILD = "\ufdd0"
_LITERAL_STAR = "\ufdd1"
_DRIVE = re.compile(r"[A-Za-z]:/")
_BACKSLASH_DRIVE = re.compile(r"[A-Za-z]:\\")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")

# One character of a segment, or None for a wildcard `*`.
_Token = str | None


@dataclass(frozen=True)
class CompiledGlob:
    """A canonical glob, ready to match and to rank against other globs."""

    glob: str  # canonical form, as stored
    lead: str  # "/", "//" or "C:/"
    segments: tuple[re.Pattern[str] | None, ...]  # None: a ``**`` segment
    literal_prefix: int  # literal characters before the first wildcard
    literal_chars: int  # literal characters in all
    globstars: int
    stars: int

    @property
    def exact(self) -> bool:
        """No wildcard: matches one id (drive and UNC ids up to case)."""
        return self.globstars == 0 and self.stars == 0

    def matches(self, source_id: str) -> bool:
        split = split_id(source_id)
        if split is None or split[0].upper() != self.lead:
            return False
        return _match_segments(self.segments, split[1])


def canonical_glob(glob: str) -> str:
    """The stored form of ``glob``; ``InvalidInput`` saying why it is not a valid glob."""
    _check_text(glob)
    marked = glob.replace("\\*", _LITERAL_STAR).replace("*", _WILD)
    if "\\" in marked:
        raise _backslash_error(glob)
    canonical = normalize_source(marked, ())
    if canonical is None:
        raise InvalidInput(
            f"glob {glob!r} is not a valid source id pattern (a traversal segment however"
            " encoded, or an unusable character)"
        )
    for segment in canonical.split("/"):
        if _WILD * 2 in segment and segment != _WILD * 2:
            raise InvalidInput(f"glob {glob!r}: '**' must be a whole segment (/docs/**/x.md)")
    return canonical.replace(_WILD, "*").replace(_LITERAL_STAR, "\\*")


def escape_glob(source_id: str) -> str:
    """A glob matching exactly ``source_id`` (an exact-id rule)."""
    return source_id.replace("*", "\\*")


@lru_cache(maxsize=4096)
def compile_glob(glob: str) -> CompiledGlob:
    """Compile a glob, canonicalizing it first (``InvalidInput`` when it is not valid)."""
    return _compile(canonical_glob(glob))


def split_id(source_id: str) -> tuple[str, list[str]] | None:
    """An absolute id's lead (``/``, ``//``, ``C:/``) and segments; ``None`` otherwise."""
    if source_id.startswith("//"):
        lead = "//"
    elif _DRIVE.match(source_id):
        lead = source_id[:3]
    elif source_id.startswith("/"):
        lead = "/"
    else:
        return None
    rest = source_id[len(lead) :]
    return lead, rest.split("/") if rest else []


def _check_text(glob: str) -> None:
    """The reasons a glob is refused that deserve their own words."""
    if not glob.strip():
        raise InvalidInput("a glob cannot be empty")
    if len(glob) > MAX_GLOB_CHARS:
        raise InvalidInput(f"a glob has at most {MAX_GLOB_CHARS} characters")
    if _WILD in glob or _LITERAL_STAR in glob:
        raise InvalidInput(f"glob {glob!r} holds a Unicode noncharacter")
    if _BACKSLASH_DRIVE.match(glob):
        raise _backslash_error(glob)
    if not _DRIVE.match(glob) and _SCHEME.match(glob):
        raise InvalidInput(f"glob {glob!r}: a URL scheme is not a source id (write /…)")
    if not glob.startswith("/") and not _DRIVE.match(glob):
        raise InvalidInput(f"glob {glob!r} must be absolute: start with '/' or a drive 'C:/'")
    if ".." in glob.replace("\\", "/").split("/"):
        raise InvalidInput(f"glob {glob!r} may not hold a '..' segment")


def _backslash_error(glob: str) -> InvalidInput:
    return InvalidInput(
        f"glob {glob!r}: use forward slashes (C:/secrets/**); a backslash only escapes"
        " a literal '*' (\\*)"
    )


def _compile(canonical: str) -> CompiledGlob:
    split = split_id(canonical)
    assert split is not None  # canonical globs are absolute
    lead, raw_segments = split
    flags = re.IGNORECASE if lead != "/" else 0
    tokens = [_tokens(segment) for segment in raw_segments]
    literal = [t for segment in tokens for t in segment if t is not None]  # one char each
    return CompiledGlob(
        glob=canonical,
        lead=lead.upper(),
        segments=tuple(_segment_pattern(t, flags) for t in tokens),
        literal_prefix=len(lead) + _literal_prefix(tokens),
        literal_chars=len(lead) + max(len(raw_segments) - 1, 0) + len(literal),
        globstars=sum(1 for t in tokens if tuple(t) == (None, None)),
        stars=sum(1 for t in tokens if tuple(t) != (None, None) and None in t),
    )


def _tokens(segment: str) -> list[_Token]:
    """A canonical segment as literal characters and wildcards (None)."""
    tokens: list[_Token] = []
    index = 0
    while index < len(segment):
        if segment.startswith("\\*", index):
            tokens.append("*")
            index += 2
        else:
            tokens.append(None if segment[index] == "*" else segment[index])
            index += 1
    return tokens


def _segment_pattern(tokens: list[_Token], flags: int) -> re.Pattern[str] | None:
    if tokens == [None, None]:
        return None
    body = "".join("[^/]*" if t is None else re.escape(t) for t in tokens)
    return re.compile(body, flags | re.DOTALL)


def _literal_prefix(tokens: list[list[_Token]]) -> int:
    """Literal characters (separators included) before the first wildcard."""
    count = 0
    for position, segment in enumerate(tokens):
        if position:
            count += 1  # the "/" before this segment
        for token in segment:
            if token is None:
                return count
            count += 1
    return count


def _match_segments(pattern: tuple[re.Pattern[str] | None, ...], segments: list[str]) -> bool:
    """Whether the segment patterns match all of ``segments`` (``None`` = ``**``)."""
    reachable = {0}  # how many id segments the pattern so far can have consumed
    for part in pattern:
        if part is None:
            reachable = set(range(min(reachable), len(segments) + 1))
        else:
            reachable = {
                k + 1 for k in reachable if k < len(segments) and part.fullmatch(segments[k])
            }
        if not reachable:
            return False
    return len(segments) in reachable
