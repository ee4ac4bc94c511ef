"""Owner-only (0600) files for secrets, written so no reader ever sees a partial file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_MODE = 0o600


def write_private(path: Path, data: bytes, *, replace: bool) -> bool:
    """Write ``data`` to ``path`` readable by the owner only.

    With ``replace=False`` an existing file wins (two processes starting at once agree on
    one secret) and False is returned; otherwise the file is replaced atomically.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # The mode is set at creation: the secret is never readable by others, even briefly.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _MODE)
    try:
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
