"""Who has a workspace open: servers and workers say so, a restore asks.

``autorag serve`` and ``autorag worker`` hold a *shared* lock on ``server.lock`` in the
workspace's data folder for their lifetime (any number of them at once) and write their
pid beside it. A restore from the command line takes the lock *exclusively*: it cannot
while a server holds the workspace (and says which), and no server starts while a restore
runs. The operating system drops a lock when its process ends, even by ``kill -9``.

A restore killed half-way is taken back (``recover_interrupted``) by the next process
that opens the workspace while nobody else holds it: a server, a worker, a command.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from autorag.errors import Conflict
from autorag.private_files import FILE_MODE, write_private
from autorag.workspace import Workspace

log = logging.getLogger(__name__)


def _pid_file(workspace: Workspace) -> Path:
    lock = workspace.server_lock_file
    return lock.with_name(lock.name + ".pid")


class WorkspaceHold:
    """A server's or worker's shared hold of a workspace, until ``release``."""

    def __init__(self, workspace: Workspace, fd: int) -> None:
        self.workspace = workspace
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is None:
            return
        pid_file = _pid_file(self.workspace)
        with contextlib.suppress(OSError):
            if pid_file.read_text(encoding="ascii").strip() == str(os.getpid()):
                pid_file.unlink()
        os.close(self._fd)  # closing drops the lock
        self._fd = None

    def __enter__(self) -> WorkspaceHold:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def recover_interrupted(workspace: Workspace) -> list[str]:
    """Take back what a restore killed half-way had replaced, before the catalog is
    opened; one sentence (also logged) for each. Nothing while another process holds the
    workspace: a restore under way, or a server (which took back any at its start)."""
    if not workspace.restore_staging_dirs():
        return []
    # Deferred: restoring imports the context and the stores, which most commands'
    # start-up would otherwise pay for nothing.
    from autorag.backup.restore import recover_interrupted_restores
    from autorag.config import load_settings

    with _exclusive(workspace) as free:
        if not free:
            return []
        said = recover_interrupted_restores(workspace, load_settings(workspace.config_file))
    for sentence in said:
        log.warning("%s", sentence)
    return said


def hold_workspace(workspace: Workspace) -> WorkspaceHold:
    """Hold ``workspace`` (shared) for a server or worker's lifetime, after taking back
    a restore killed half-way; ``Conflict`` while a restore holds it."""
    recover_interrupted(workspace)
    fd = _open_lock(workspace)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Conflict(
            "a backup is being restored into this workspace: start the server when it is done",
            code="restoring",
        ) from None
    write_private(_pid_file(workspace), str(os.getpid()).encode("ascii"), replace=True)
    return WorkspaceHold(workspace, fd)


def workspace_holder(workspace: Workspace) -> str | None:
    """Who holds the workspace (``"pid 1234"``), for a refusal; None when nobody does."""
    if not workspace.server_lock_file.exists():
        return None
    with _exclusive(workspace) as free:
        if free:
            return None
    try:
        pid = _pid_file(workspace).read_text(encoding="ascii").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "pid unknown"


@contextlib.contextmanager
def exclusive_workspace(workspace: Workspace) -> Iterator[None]:
    """The workspace held exclusively (for a restore from the command line); ``Conflict``
    naming the server that holds it otherwise."""
    with _exclusive(workspace) as free:
        if not free:
            holder = workspace_holder(workspace) or "pid unknown"
            raise Conflict(
                f"a server ({holder}) is running on this workspace: stop it, or restore "
                "from its web UI / API",
                code="workspace_in_use",
            )
        yield


@contextlib.contextmanager
def _exclusive(workspace: Workspace) -> Iterator[bool]:
    fd = _open_lock(workspace)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _open_lock(workspace: Workspace) -> int:
    fd = os.open(workspace.server_lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd
