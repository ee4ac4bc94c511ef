"""The on-disk layout of a workspace: ``<root>/autorag.toml`` and ``<root>/.autorag/``.

Every path AutoRAG writes inside a workspace is named here and nowhere else. What it
holds is the owner's alone: ``.autorag/`` and every folder in it are 0700, every file
in it and ``autorag.toml`` 0600, made so at creation and repaired whenever the workspace
is opened (``init_workspace``, ``find_workspace``, ``Workspace.secure``).
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from autorag.config import CONFIG_FILE_NAME
from autorag.errors import InvalidInput, NotFound
from autorag.private_files import (
    make_private_dir,
    tighten,
    tighten_tree,
    touch_private,
    warn_repaired,
    write_private,
)

DATA_DIR_NAME = ".autorag"
UPLOADS_DIR_NAME = "uploads"  # <data dir>/uploads/<workspace short id>/<sha256>.<type>
# A restore stages what it puts back in <root>/.autorag-restore-<hex>/ (autorag.backup).
RESTORE_STAGING_PREFIX = ".autorag-restore-"
WORKSPACE_ENV = "AUTORAG_WORKSPACE_DIR"

_CONFIG_HEADER = """\
# AutoRAG workspace configuration. Every key can also be set with an AUTORAG_* variable
# (nested keys with a double underscore, e.g. AUTORAG_SEARCH__RRF_K=60).
"""


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def config_file(self) -> Path:
        return self.root / CONFIG_FILE_NAME

    @property
    def data_dir(self) -> Path:
        return self.root / DATA_DIR_NAME

    @property
    def database_file(self) -> Path:
        return self.data_dir / "autorag.db"

    @property
    def vectors_dir(self) -> Path:
        return self.data_dir / "vectors" / "lancedb"

    @property
    def uploads_dir(self) -> Path:
        """Uploaded files, one folder per catalog workspace (``<short id>/``)."""
        return self.data_dir / UPLOADS_DIR_NAME

    @property
    def incoming_uploads_dir(self) -> Path:
        """Uploads still being received; swept at start-up."""
        return self.uploads_dir / ".incoming"

    @property
    def attachments_dir(self) -> Path:
        """Chat attachments waiting for their job to read them (removed once read)."""
        return self.data_dir / "attachments"

    @property
    def refresh_lock_file(self) -> Path:
        return self.data_dir / "refresh.lock"

    @property
    def backups_dir(self) -> Path:
        """Backups written here (unless ``backup.dir`` says elsewhere), safety backups too."""
        return self.data_dir / "backups"

    @property
    def server_lock_file(self) -> Path:
        """Held (shared) by a running server or worker, exclusively by a restore."""
        return self.data_dir / "server.lock"

    def restore_staging_dirs(self) -> list[Path]:
        """The staging folders of restores under way, or killed half-way."""
        return sorted(self.root.glob(f"{RESTORE_STAGING_PREFIX}*"))

    @property
    def p2p_dir(self) -> Path:
        return self.data_dir / "p2p"

    @property
    def simplex_peers_file(self) -> Path:
        """The trusted peer registry (seed 000), mode 0600."""
        return self.p2p_dir / "simplex-peers.json"

    @property
    def simplex_db_prefix(self) -> Path:
        """simplex-chat's database prefix (``<prefix>_chat.db``); AutoRAG never reads them."""
        return self.p2p_dir / "simplex"

    @property
    def simplex_log_file(self) -> Path:
        """The simplex-chat child's stdout and stderr (it logs every command)."""
        return self.p2p_dir / "simplex-chat.log"

    @property
    def is_initialized(self) -> bool:
        return self.config_file.is_file() and self.data_dir.is_dir()

    def read_config(self) -> dict[str, Any]:
        if not self.config_file.is_file():
            return {}
        try:
            return tomllib.loads(self.config_file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InvalidInput(f"{self.config_file}: invalid TOML: {exc}") from exc

    def write_config(self, data: dict[str, Any]) -> None:
        """Write the config atomically (0600) so an interrupted write never truncates it."""
        text = _CONFIG_HEADER + tomli_w.dumps(data)
        write_private(self.config_file, text.encode("utf-8"), replace=True)

    def secure(self) -> list[str]:
        """Make ``.autorag/`` (all of it) and ``autorag.toml`` the owner's alone again;
        each repair made is logged as a warning and returned."""
        repaired = [m for m in (tighten(self.config_file),) if m]
        if self.data_dir.is_dir():
            with contextlib.suppress(OSError):  # a read-only workspace still opens
                touch_private(self.refresh_lock_file)  # 0600 before anyone locks it
            repaired += tighten_tree(self.data_dir)
        return warn_repaired(repaired, "workspace data")


def init_workspace(root: Path) -> Workspace:
    ws = Workspace(root.expanduser().resolve())
    make_private_dir(ws.data_dir)
    if not ws.config_file.exists():
        ws.write_config({"workspace": "default", "search_paths": []})
    ws.secure()
    _opened(ws)
    return ws


_last_opened: Workspace | None = None


def _opened(ws: Workspace) -> Workspace:
    global _last_opened
    _last_opened = ws
    return ws


def last_opened_workspace() -> Workspace | None:
    """The workspace this process opened last (``init_workspace``, ``find_workspace``)."""
    return _last_opened


def find_workspace(explicit: Path | None = None, start: Path | None = None) -> Workspace:
    """The workspace named explicitly, by ``AUTORAG_WORKSPACE_DIR``, or found upwards."""
    if explicit is None and os.environ.get(WORKSPACE_ENV):
        explicit = Path(os.environ[WORKSPACE_ENV])
    if explicit is not None:
        ws = Workspace(explicit.expanduser().resolve())
        if not ws.is_initialized:
            raise NotFound(f"no AutoRAG workspace at {ws.root} (run `autorag init {ws.root}`)")
        return _open(ws)
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        ws = Workspace(candidate)
        if ws.is_initialized:
            return _open(ws)
    raise NotFound(
        f"no AutoRAG workspace in {here} or its parents "
        "(run `autorag init DIR`, pass --workspace DIR or set AUTORAG_WORKSPACE_DIR)"
    )


def _open(ws: Workspace) -> Workspace:
    ws.secure()
    return _opened(ws)
