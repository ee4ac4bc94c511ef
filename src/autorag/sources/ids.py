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
from urllib.parse import unquote

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
# Compared case-insensitively: on macOS /users/me is the same directory as /Users/me.
_FILESYSTEM_ROOTS_FOLDED = frozenset(name.casefold() for name in FILESYSTEM_ROOTS)

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_UNC = re.compile(r"[\\/]{2}[^\\/]")
_NOT_PREFIX_CHAR = re.compile(r"[^A-Za-z0-9._-]")


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
    normalizing a result again returns it unchanged.
    """
    path = _canonical_path(source)
    if path is None:
        return None
    # Real-path containment is checked first: a root's real path is more specific than a
    # virtual namespace that happens to share its first segment.
    if _containing_root(path, source_roots) is None:
        # A virtual id goes through its real path, so that for nested roots it lands in
        # the longest root too and one file never has two ids (and two policies).
        path = _virtual_to_real(path, source_roots) or path
    root = _containing_root(path, source_roots)
    if root is None:
        # A datasource identity and an absolute path outside every root pass through as
        # their own canonical form.
        return path
    relative = path[len(root.path) :].lstrip("/")
    return f"/{root.prefix}/{relative}" if relative else f"/{root.prefix}"


def to_real_path(source_id: str, source_roots: Sequence[SourceRoot]) -> str | None:
    """The real path of a local file's id (``/docs/a.md`` -> ``/home/me/docs/a.md``).

    ``None`` when the id is invalid or not under a configured root.
    """
    virtual_id = normalize_source(source_id, source_roots)
    return None if virtual_id is None else _virtual_to_real(virtual_id, source_roots)


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
    # ".." however it is spelled: percent-encoded, or as compatibility characters that NFKC
    # folds to dots, since a consumer that decodes either would climb out of the root.
    decoded = unicodedata.normalize("NFKC", unquote(segment))
    return ".." in decoded.replace("\\", "/").split("/")


def _virtual_to_real(path: str, source_roots: Sequence[SourceRoot]) -> str | None:
    """The real path behind a canonical virtual id; ``None`` for any other form."""
    # Drive and UNC forms never match: no prefix holds a ':' or is empty.
    prefix, _, relative = path.removeprefix("/").partition("/")
    root = next((root for root in source_roots if root.prefix == prefix), None)
    if root is None:
        return None
    if not relative:
        return root.path
    return f"{root.path.rstrip('/')}/{relative}"


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
    if _is_filesystem_root(prefix) or any(root.prefix == prefix for root in earlier):
        return False
    if path == f"/{prefix}":
        return True  # its virtual ids are its real paths, so they cannot be misread
    # A virtual id /<prefix>/... must not also read as a real path under some root.
    return all(_first_segment(other) != prefix for other in (path, *(r.path for r in earlier)))
