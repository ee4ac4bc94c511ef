"""Canonical source identifiers (seed 000, "normalizeSource").

A source is named in three forms: a local file's virtual id ``/<root-prefix>/<relative>``,
its OS-absolute real path (what retrieval returns) and a datasource identity
``/<kind>/<instance>/...``. :func:`normalize_source` is the single point that maps any of
them to the canonical id that policy globs and the P2P wire use. Whatever it cannot map
unambiguously it rejects with ``None`` so that callers fail closed.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, unquote_to_bytes

from autorag.errors import InvalidInput

# First segments that mean "a real absolute path", never a datasource kind. data, work and
# workspace are not POSIX standard but are common mount points on servers and in containers.
FILESYSTEM_ROOTS: frozenset[str] = frozenset(
    {
        "home", "Users", "etc", "var", "tmp", "usr", "opt", "root", "mnt", "media", "srv",
        "private", "Volumes", "bin", "sbin", "lib", "lib64", "proc", "sys", "dev", "run",
        "boot", "System", "Library", "Applications", "nix", "snap", "workspace", "work",
        "data",
    }
)  # fmt: skip
# Datasource kinds own /<kind>/...: no search path may live under one (uploads:
# /uploads/<workspace>/...; kakao: KakaoTalk imports; youtube: videos added by URL).
# Uploads exist in every workspace, so no search path is given their prefix; an imported
# kind's prefix is refused when the second of the folder and the import arrives (the
# CLI's add, the import's own check).
DATASOURCE_KINDS: frozenset[str] = frozenset({"uploads", "kakao", "youtube"})
_RESERVED_PREFIXES: frozenset[str] = frozenset({"uploads"})
# Compared case-insensitively: on macOS /users/me is the same directory as /Users/me.
_FILESYSTEM_ROOTS_FOLDED = frozenset(name.casefold() for name in FILESYSTEM_ROOTS)

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_UNC = re.compile(r"[\\/]{2}[^\\/]")
_NOT_PREFIX_CHAR = re.compile(r"[^A-Za-z0-9._-]")
_ESCAPED = frozenset("%\\/")


@dataclass(frozen=True)
class SourceRoot:
    """One search path: its virtual namespace name and its resolved real path."""

    prefix: str  # the virtual namespace name, e.g. "docs" -> ids look like /docs/...
    path: str  # the OS-absolute real path of the search path (posix string, resolved)


def plan_source_roots(search_paths: Sequence[str | os.PathLike[str]]) -> list[SourceRoot]:
    """Give each search path a unique virtual prefix, stable when paths are appended.

    Raises ``InvalidInput`` for a search path that cannot carry source ids (the
    filesystem root, control characters, a backslash in a POSIX name) or whose real
    path would make an earlier root's virtual ids ambiguous.
    """
    roots: list[SourceRoot] = []
    for search_path in search_paths:
        path = _resolve(search_path)
        if any(root.path == path for root in roots):
            continue
        _reject_shadowing(path, roots)
        roots.append(SourceRoot(_plan_prefix(path, roots), path))
    return roots


def normalize_source(source: str, source_roots: Sequence[SourceRoot]) -> str | None:
    """The canonical id of ``source``, or ``None`` when it is not a valid source.

    ``source_roots`` come from :func:`plan_source_roots`. Canonical ids are fixed points:
    normalizing a result again returns it unchanged. Under a root, a file name is data:
    characters that would read as syntax (``%``, a backslash, control and compatibility
    characters) are percent-escaped, reversibly, never turned into separators.
    """
    located = _locate(source, source_roots)
    if isinstance(located, _Refused):
        return None
    if located is not None:
        root, names = located
        return _virtual_id(root, names)
    # A datasource identity and an absolute path outside every root pass through as
    # their own canonical form.
    return _canonical_path(source)


def to_real_path(source_id: str, source_roots: Sequence[SourceRoot]) -> str | None:
    """The real path of a local file's id (``/docs/a.md`` -> ``/home/me/docs/a.md``).

    ``None`` when the id is invalid or not under a configured root.
    """
    located = _locate(source_id, source_roots)
    if located is None or isinstance(located, _Refused):
        return None
    root, names = located
    return _join(root.path, names)


def local_source_id(real_path: str, source_roots: Sequence[SourceRoot]) -> str | None:
    """The id of a file the walk found at ``real_path`` (a name the OS gave us).

    Under a root: its virtual id. Outside every root (a link an operator allowed to be
    followed): its real path, names escaped, so that it is its own canonical id and
    absolute-path globs match it. ``None`` for a path that is not absolute.
    """
    located = _locate_real(real_path, source_roots)
    if isinstance(located, _Refused):
        return None
    if located is not None:
        root, names = located
        return _virtual_id(root, names)
    if not real_path.startswith("/") or real_path.startswith("//"):
        return None
    names = [name for name in real_path.split("/") if name not in ("", ".")]
    if ".." in names:
        return None
    return "/" + "/".join(escape_name(name) for name in names)


def escape_name(name: str) -> str:
    """A file name as one id segment: ``%``, ``\\``, ``/``, control, format and
    compatibility characters are percent-escaped (UTF-8, or the raw byte of a name the
    file system gave as undecodable bytes); everything else, ``#`` and ``?`` included,
    stays as it is."""
    return "".join(_escape_char(char) for char in name)


def unescape_name(segment: str) -> str | None:
    """The file name behind an id segment; ``None`` when the segment is not in the
    escaped form :func:`escape_name` gives (so each file has exactly one id)."""
    name = os.fsdecode(unquote_to_bytes(segment))
    if not name or "/" in name or "\x00" in name or escape_name(name) != segment:
        return None
    return name


def _escape_char(char: str) -> str:
    if char in _ESCAPED or _needs_escape(char):
        return "".join(f"%{byte:02X}" for byte in os.fsencode(char))
    return char


def _needs_escape(char: str) -> bool:
    category = unicodedata.category(char)
    if category in ("Cc", "Cs", "Cf", "Zl", "Zp"):
        return True
    # A compatibility character (fullwidth dot, ligature...) would fold into another name.
    return unicodedata.normalize("NFKC", char) != char


class _Refused:
    """A source that looks local but cannot be one (traversal, a bad escape)."""


_INVALID = _Refused()
_Located = tuple[SourceRoot, list[str]]


def _locate(source: str, source_roots: Sequence[SourceRoot]) -> _Located | _Refused | None:
    """The root and real file names a source denotes; ``None`` when it lies under no
    root (a datasource id or an outside path), ``_INVALID`` when it is refused."""
    located = _locate_real(source, source_roots)
    if located is not None:
        return located
    path = _canonical_path(source)
    if path is None:
        return _INVALID
    return _locate_real(path, source_roots) or _locate_virtual(path, source_roots)


def _locate_real(path: str, source_roots: Sequence[SourceRoot]) -> _Located | _Refused | None:
    """A real path under a root: its root (the longest) and the names below it."""
    if not path.startswith("/") or path.startswith("//") or "\x00" in path:
        return None
    root = _containing_root(path, source_roots)
    if root is None:
        return None
    names = [name for name in path[len(root.path) :].split("/") if name not in ("", ".")]
    return _INVALID if ".." in names else (root, names)


def _locate_virtual(path: str, source_roots: Sequence[SourceRoot]) -> _Located | _Refused | None:
    """A virtual id ``/<prefix>/<escaped names>``: its names unescaped, then placed by
    their real path, so that for nested roots the longest root wins."""
    prefix, _, relative = path.removeprefix("/").partition("/")
    root = next((root for root in source_roots if root.prefix == prefix), None)
    if root is None or _first_segment(path) is None:
        return None
    names = [unescape_name(segment) for segment in relative.split("/")] if relative else []
    if any(name is None for name in names):
        return _INVALID
    return _locate_real(_join(root.path, [n for n in names if n is not None]), source_roots)


def _virtual_id(root: SourceRoot, names: Sequence[str]) -> str:
    escaped = "/".join(escape_name(name) for name in names)
    return f"/{root.prefix}/{escaped}" if escaped else f"/{root.prefix}"


def _join(base: str, names: Sequence[str]) -> str:
    return "/".join([base.rstrip("/"), *names]) if names else base


def is_datasource_id(source_id: str) -> bool:
    """Whether ``source_id`` is a slash identity whose first segment is no filesystem root.

    Without the source roots this cannot tell a virtual id (``/docs/...``) from a
    datasource identity; callers that must tell them apart check the roots first.
    """
    path = _canonical_path(source_id)
    first = _first_segment(path) if path is not None else None
    if not first:
        return False  # invalid, a drive or UNC path, or the bare root "/"
    return not _is_filesystem_root(first)


def _canonical_path(source: str) -> str | None:
    """Slash-separated canonical form of an absolute source; ``None`` if it is not one.

    Backslashes become slashes so Windows drive and UNC paths canonicalize identically on
    every host; duplicate slashes, ``.`` segments and a trailing slash are dropped.
    """
    if any(_is_forbidden_char(char) for char in source):
        return None
    split = _split_lead(source)
    if split is None:
        return None
    lead, rest = split
    segments = rest.replace("\\", "/").split("/")
    if any(_is_traversal(segment) for segment in segments):
        return None
    kept = [segment for segment in segments if segment not in ("", ".")]
    if lead == "//" and not kept:
        return None  # a UNC lead without a server name
    return lead + "/".join(kept)


def _split_lead(source: str) -> tuple[str, str] | None:
    """Split off the absolute lead: ``C:/``, a UNC ``//`` or a POSIX ``/``.

    Everything else has no lead and is rejected: relative paths, empty or whitespace
    input, URL schemes (``file:``, ``http://``, the retired ``kakao:`` scheme), a bare or
    drive-relative ``C:`` and a lone leading backslash (relative to the current drive).
    """
    if _DRIVE.match(source):
        return f"{source[0].upper()}:/", source[3:]
    if _UNC.match(source):
        return "//", source[2:]
    if source.startswith("/"):
        return "/", source[1:]
    return None


def _is_forbidden_char(char: str) -> bool:
    # Control characters (NUL included) and lone surrogates, which no store can encode.
    return unicodedata.category(char) in ("Cc", "Cs")


def _is_traversal(segment: str) -> bool:
    # ".." however it is spelled: as compatibility characters that NFKC folds to dots, or
    # percent-encoded, since a consumer that decodes either would climb out of the root.
    # A decoded name is not split on backslashes: on POSIX a name may hold one (escaped
    # ids carry it as %5C), and it is a name, not a separator.
    folded = unicodedata.normalize("NFKC", segment)
    return ".." in folded.split("/") or ".." in unquote(segment).split("/")


def _containing_root(path: str, source_roots: Sequence[SourceRoot]) -> SourceRoot | None:
    """The root whose real path contains ``path``; the longest wins for nested roots."""
    containing = [root for root in source_roots if _is_within(path, root.path)]
    return max(containing, key=lambda root: len(root.path), default=None)


def _is_within(path: str, base: str) -> bool:
    return path == base or path.startswith(base if base.endswith("/") else f"{base}/")


def _first_segment(path: str) -> str | None:
    """First segment of a POSIX-form canonical path; ``None`` for drive and UNC forms."""
    if not path.startswith("/") or path.startswith("//"):
        return None
    return path[1:].partition("/")[0]


def _is_filesystem_root(segment: str) -> bool:
    return segment.casefold() in _FILESYSTEM_ROOTS_FOLDED


def _is_reserved(segment: str) -> bool:
    """A filesystem root or the uploads' kind: never a search path's prefix."""
    return _is_filesystem_root(segment) or segment.casefold() in _RESERVED_PREFIXES


def _resolve(search_path: str | os.PathLike[str]) -> str:
    raw = os.fspath(search_path)
    try:
        real = os.path.realpath(raw)
    except ValueError as exc:  # an embedded NUL or an unencodable character
        raise InvalidInput(f"search path {raw!r} is not a valid path") from exc
    path = _canonical_path(real)
    # On POSIX a backslash is part of a name; turning it into a separator, as source ids
    # do, would point the root somewhere else.
    if path is None or (os.sep == "/" and "\\" in real):
        raise InvalidInput(f"search path {raw!r} cannot carry source ids")
    if path == "/":
        # Every absolute path, datasource ids included, would fall under it.
        raise InvalidInput("the filesystem root cannot be a search path")
    first = _first_segment(path) or ""
    if first.casefold() in DATASOURCE_KINDS:
        # /kakao/... would be both this folder's files and the KakaoTalk import's records.
        raise InvalidInput(
            f"search path {raw!r} lies under /{first}, the namespace of the {first!r}"
            " datasource; source ids would be ambiguous"
        )
    return path


def _reject_shadowing(path: str, earlier: Sequence[SourceRoot]) -> None:
    """Refuse a root under ``/<p>`` when ``p`` is an earlier root's prefix.

    The earlier root's virtual ids ``/<p>/...`` would then also read as real paths under
    the new root; renaming the earlier prefix instead would break its stability.
    """
    first = _first_segment(path)
    for root in earlier:
        if root.prefix == first and root.path != f"/{first}":
            raise InvalidInput(
                f"search path {path} lies under /{first}, which is already the virtual"
                f" namespace of {root.path}; source ids would be ambiguous"
            )


def _plan_prefix(path: str, earlier: Sequence[SourceRoot]) -> str:
    """The basename, or ``<basename>-<sha256[:6]>`` when the plain name is not usable."""
    name = _NOT_PREFIX_CHAR.sub("-", path.rpartition("/")[2]) or "root"
    if _is_usable_prefix(name, path, earlier):
        return name
    digest = hashlib.sha256(path.encode()).hexdigest()[:6]
    candidate = f"{name}-{digest}"
    counter = 2
    while not _is_usable_prefix(candidate, path, earlier):
        candidate = f"{name}-{digest}-{counter}"
        counter += 1
    return candidate


def _is_usable_prefix(prefix: str, path: str, earlier: Sequence[SourceRoot]) -> bool:
    """Unique, not a filesystem root, and no virtual id under it reads as a real path."""
    if _is_reserved(prefix) or any(root.prefix == prefix for root in earlier):
        return False
    # A virtual id /<prefix>/... must not also read as a real path under some root, this
    # one included: escaped names would then read two ways.
    return all(_first_segment(other) != prefix for other in (path, *(r.path for r in earlier)))
