"""Private files of the P2P layer: written atomically, readable by their owner only."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

PRIVATE_DIR_MODE = 0o700


def write_json_atomic(path: Path, document: Any) -> None:
    """Replace ``path`` with ``document`` as JSON, mode 0600: a temp file in the same
    folder, fsync, rename, fsync of the folder. A reader sees the old file or the new one,
    whatever kills the writer."""
    data = json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:  # mkstemp creates it 0600
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename itself survives a power cut
    finally:
        os.close(fd)


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can enter."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    return path
