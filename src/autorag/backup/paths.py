"""Where each part of a workspace goes in a backup, and the guard every name passes.

An archive's entries are named by ``/``-separated relative paths. A name that could
write outside the folder it is extracted into (absolute, ``..``, a backslash, a drive
letter, a control character) is refused, whether it is about to be written into an
archive or read out of one. Files are collected without following symbolic links:
only regular files inside the tree are read, opened so a link swapped in meanwhile is
refused too.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autorag.errors import InvalidInput
from autorag.keyring import KEY_FILE_NAME, SALT_FILE_NAME, SECRET_FILE_NAME
from autorag.workspace import Workspace

# The catalog, as one of these two entries (SQLite file or PostgreSQL plain dump).
SQLITE_ENTRY = "catalog/autorag.db"
POSTGRES_ENTRY = "catalog/catalog.sql"
MANIFEST_ENTRY = "manifest.json"
CONFIG_ENTRY = "config/autorag.toml"
VECTORS_AREA = "vectors"
# The largest entry name accepted: well past any path a workspace makes.
_MAX_NAME = 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnsafeEntry(InvalidInput):
    """An archive entry name that is not a plain relative path."""

    code = "unsafe_entry"


@dataclass(frozen=True)
class Area:
    """A part of the workspace kept in a backup: a folder (every regular file under it)
    or a single file, stored under ``entry`` in the archive."""

    entry: str
    place: Callable[[Workspace], Path]
    folder: bool
    # Names (relative to the folder) left out: logs, files still being received.
    skip: Callable[[Workspace], tuple[Path, ...]] = lambda _ws: ()


def _uploads_skipped(ws: Workspace) -> tuple[Path, ...]:
    return (ws.incoming_uploads_dir,)


def _p2p_skipped(ws: Workspace) -> tuple[Path, ...]:
    return (ws.simplex_log_file,)


# Every part but the catalog (dumped, not copied) and the vectors (optional, below).
FILE_AREAS: tuple[Area, ...] = (
    Area("files/uploads", lambda ws: ws.uploads_dir, True, _uploads_skipped),
    Area("files/p2p", lambda ws: ws.p2p_dir, True, _p2p_skipped),
    Area(CONFIG_ENTRY, lambda ws: ws.config_file, False),
    # In the encrypted archive the keys add no exposure; a restore on a new machine
    # needs them for sealed values (DLP originals, provider keys) and login tokens:
    # the server secret and salt the key is derived from, and the key file of earlier
    # versions (absent on a workspace made since).
    Area(f"keys/{KEY_FILE_NAME}", lambda ws: ws.data_dir / KEY_FILE_NAME, False),
    Area(f"keys/{SECRET_FILE_NAME}", lambda ws: ws.data_dir / SECRET_FILE_NAME, False),
    Area(f"keys/{SALT_FILE_NAME}", lambda ws: ws.data_dir / SALT_FILE_NAME, False),
)
LANCEDB_AREA = Area(VECTORS_AREA, lambda ws: ws.vectors_dir, True)
ALL_AREAS: tuple[Area, ...] = (LANCEDB_AREA, *FILE_AREAS)


def safe_entry_name(name: str) -> str:
    """``name`` when it is a plain relative ``/``-separated path; UnsafeEntry otherwise."""
    why = _unsafe_because(name)
    if why:
        raise UnsafeEntry(f"unsafe archive entry name {name[:200]!r}: {why}")
    return name


def _unsafe_because(name: str) -> str | None:
    if not name or len(name) > _MAX_NAME:
        return "empty or too long"
    if "\\" in name:
        return "it contains a backslash"
    if _CONTROL.search(name):
        return "it contains a control character"
    if name.startswith("/"):
        return "it is absolute"
    if _DRIVE.match(name):
        return "it starts with a drive letter"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "it has an empty, '.' or '..' part"
    return None


def area_of(name: str) -> Area | None:
    """The area an entry name belongs to (None: the catalog, the manifest, or unknown)."""
    for area in ALL_AREAS:
        if name == area.entry and not area.folder:
            return area
        if area.folder and name.startswith(area.entry + "/"):
            return area
    return None


def place_of(workspace_like: Workspace, area: Area, name: str) -> Path:
    """Where the entry ``name`` of ``area`` goes in a workspace laid out like
    ``workspace_like`` (a staging copy, say): always inside the area's place."""
    base = area.place(workspace_like)
    if not area.folder:
        return base
    relative = PurePosixPath(safe_entry_name(name).removeprefix(area.entry + "/"))
    return base.joinpath(*relative.parts)


@dataclass(frozen=True)
class Collected:
    path: Path  # on disk
    entry: str  # in the archive
    size: int  # when listed; the bytes read are what the manifest records


def collect(workspace: Workspace, area: Area) -> tuple[list[Collected], list[str]]:
    """The regular files of ``area`` as archive entries, and a sentence for each thing
    left out (a symbolic link, a socket…). Links are never followed."""
    base = area.place(workspace)
    if not area.folder:
        info = _lstat(base)
        if info is None:
            return [], []
        if not stat.S_ISREG(info.st_mode):
            return [], [f"{base}: not a regular file, left out"]
        return [Collected(base, area.entry, info.st_size)], []
    skipped = set(area.skip(workspace))
    found: list[Collected] = []
    notes: list[str] = []
    for path in _walk(base, skipped, notes):
        relative = path.relative_to(base).as_posix()
        entry = safe_entry_name(f"{area.entry}/{relative}")
        info = _lstat(path)
        if info is not None:
            found.append(Collected(path, entry, info.st_size))
    return found, notes


def _walk(base: Path, skipped: set[Path], notes: list[str]) -> Iterator[Path]:
    if base.is_symlink():
        notes.append(f"{base}: a symbolic link, left out (a backup follows no link)")
        return
    if not base.is_dir():
        return
    for folder, dirs, files in os.walk(base):  # followlinks=False: links stay links
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if _keep(here / d, skipped, notes, folder=True))
        for name in sorted(files):
            if _keep(here / name, skipped, notes, folder=False):
                yield here / name


def _keep(path: Path, skipped: set[Path], notes: list[str], *, folder: bool) -> bool:
    if path in skipped:
        return False
    info = _lstat(path)
    if info is None:  # removed while walking
        return False
    wanted = stat.S_ISDIR if folder else stat.S_ISREG
    if not wanted(info.st_mode):
        notes.append(f"{path}: a symbolic link or special file, left out")
        return False
    return True


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def open_regular(path: Path) -> int:
    """A read descriptor for ``path``, refused (OSError) when it is a symbolic link or
    not a regular file by the time it is opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd
