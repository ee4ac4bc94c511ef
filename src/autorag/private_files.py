"""Owner-only paths: everything AutoRAG keeps at rest is the owner's alone.

Directories are 0700 and files 0600, set when they are created and checked (and
repaired, with a warning) when they are opened. Secrets are written so no reader ever
sees a partial file. This is the one module that knows those modes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

FILE_MODE = 0o600
DIR_MODE = 0o700
# Group and others get nothing from files a process creates under this umask.
OWNER_ONLY_UMASK = 0o077


def owner_only_umask() -> int:
    """Make every file this process creates from now on owner-only; the old umask."""
    old = os.umask(OWNER_ONLY_UMASK)
    os.umask(old | OWNER_ONLY_UMASK)
    return old


def write_private(path: Path, data: bytes, *, replace: bool) -> bool:
    """Write ``data`` to ``path`` readable by the owner only.

    With ``replace=False`` an existing file wins (two processes starting at once agree on
    one secret) and False is returned; otherwise the file is replaced atomically.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # The mode is set at creation: the secret is never readable by others, even briefly.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # whatever the umask
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)  # atomic and fails if the file exists
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def create_private(path: Path) -> BinaryIO:
    """A new file (it must not exist) opened for writing, 0600 from its creation."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def touch_private(path: Path) -> str | None:
    """Create ``path`` empty at 0600 unless it exists; an existing one is tightened
    (what was repaired, as ``tighten`` says)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return tighten(path)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return None


def make_private_dir(path: Path, *, tighten_existing: bool = True) -> Path:
    """``mkdir -p`` where each folder created is 0700; an existing ``path`` is tightened
    too unless ``tighten_existing`` is False (a folder the user chose, maybe shared)."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.mkdir(folder, DIR_MODE)
        tighten(folder)
    if tighten_existing or missing:
        tighten(path)
    return path


def tighten(path: Path) -> str | None:
    """Set an existing file to 0600 or folder to 0700; what was repaired, or None.

    Symbolic links are left alone (their target is not ours to change); a missing path
    is nothing to repair.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None
    wanted = DIR_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
    mode = stat.S_IMODE(info.st_mode)
    if mode == wanted:
        return None
    try:
        os.chmod(path, wanted)
    except FileNotFoundError:  # removed meanwhile
        return None
    except OSError as exc:  # not ours, or a read-only file system: said, not fatal
        return f"{path}: mode is {mode:04o} and could not be set to {wanted:04o}: {exc}"
    return f"{path}: mode was {mode:04o}, set to {wanted:04o}"


def tighten_all(paths: Iterable[Path]) -> list[str]:
    return [message for path in paths if (message := tighten(path)) is not None]


def tighten_tree(root: Path) -> list[str]:
    """``root`` and everything under it made owner-only (links are not followed)."""
    repaired = tighten_all([root])
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        repaired += tighten_all(base / name for name in (*dirs, *files))
    return repaired


def warn_repaired(repaired: Iterable[str], what: str) -> list[str]:
    """Log each repair (a loosened mode someone else may have read through)."""
    messages = list(repaired)
    for message in messages:
        log.warning("%s (%s is the owner's alone)", message, what)
    return messages
