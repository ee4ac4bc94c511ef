"""The on-disk layout of a workspace: ``<root>/autorag.toml`` and ``<root>/.autorag/``.

Every path AutoRAG writes inside a workspace is named here and nowhere else.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from autorag.config import CONFIG_FILE_NAME
from autorag.errors import InvalidInput, NotFound

DATA_DIR_NAME = ".autorag"
UPLOADS_DIR_NAME = "uploads"  # <data dir>/uploads/<workspace short id>/<sha256>.<type>
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
    def refresh_lock_file(self) -> Path:
        return self.data_dir / "refresh.lock"

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
        """Write the config atomically so an interrupted write never truncates it."""
        tmp = self.config_file.with_suffix(".toml.tmp")
        tmp.write_text(_CONFIG_HEADER + tomli_w.dumps(data), encoding="utf-8")
        os.replace(tmp, self.config_file)


def init_workspace(root: Path) -> Workspace:
    ws = Workspace(root.expanduser().resolve())
    ws.data_dir.mkdir(parents=True, exist_ok=True)
    if not ws.config_file.exists():
        ws.write_config({"workspace": "default", "search_paths": []})
    return ws


def find_workspace(explicit: Path | None = None, start: Path | None = None) -> Workspace:
    """The workspace named explicitly, by ``AUTORAG_WORKSPACE_DIR``, or found upwards."""
    if explicit is None and os.environ.get(WORKSPACE_ENV):
        explicit = Path(os.environ[WORKSPACE_ENV])
    if explicit is not None:
        ws = Workspace(explicit.expanduser().resolve())
        if not ws.is_initialized:
            raise NotFound(f"no AutoRAG workspace at {ws.root} (run `autorag init {ws.root}`)")
        return ws
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        ws = Workspace(candidate)
        if ws.is_initialized:
            return ws
    raise NotFound(
        f"no AutoRAG workspace in {here} or its parents "
        "(run `autorag init DIR`, pass --workspace DIR or set AUTORAG_WORKSPACE_DIR)"
    )
