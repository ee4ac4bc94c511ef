"""``local:/path`` (or a plain absolute path): a folder on this machine (0700, archives
0600). Archives arrive under a temporary name and are renamed into place, so a folder
listing never shows half an archive."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from datetime import UTC, datetime
from pathlib import Path

from autorag.backup.destinations.base import (
    StoredArchive,
    check_name,
    is_archive_name,
    oldest_first,
    receiving,
)
from autorag.backup.destinations.urls import DestinationUrl
from autorag.config import BackupSettings
from autorag.errors import InvalidInput, NotFound
from autorag.private_files import create_private, make_private_dir


class LocalDestination:
    def __init__(self, folder: Path) -> None:
        if not folder.is_absolute():
            raise InvalidInput(f"a local backup folder must be an absolute path, not {folder}")
        self.folder = folder
        self.label = f"local:{folder}"

    def put(self, local: Path, name: str) -> None:
        target = self._path(name)
        make_private_dir(self.folder, tighten_existing=False)
        temp = self._temp(name)
        try:
            with local.open("rb") as source, create_private(temp) as sink:
                shutil.copyfileobj(source, sink)
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)

    def adopt(self, local: Path, name: str) -> None:
        """Move ``local`` here as ``name``: a rename when it is on the same file system
        (a backup written in the backup folder costs no copy), else ``put`` and remove."""
        target = self._path(name)
        make_private_dir(self.folder, tighten_existing=False)
        try:
            os.replace(local, target)
        except OSError:  # another file system: EXDEV
            self.put(local, name)
            local.unlink()

    def list(self) -> list[StoredArchive]:
        if not self.folder.is_dir():
            return []
        archives = []
        for entry in os.scandir(self.folder):
            if not is_archive_name(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
            modified = datetime.fromtimestamp(info.st_mtime, UTC).replace(tzinfo=None)
            archives.append(StoredArchive(entry.name, info.st_size, modified))
        return oldest_first(archives)

    def get(self, name: str, local: Path) -> None:
        path = self._existing(name)
        with path.open("rb") as source, receiving(local) as sink:
            shutil.copyfileobj(source, sink)

    def delete(self, name: str) -> None:
        self._existing(name).unlink()

    def _path(self, name: str) -> Path:
        return self.folder / check_name(name)

    def _temp(self, name: str) -> Path:
        return self.folder / f".{check_name(name)}.{secrets.token_hex(4)}.part"

    def _existing(self, name: str) -> Path:
        """The archive's path; ``NotFound`` unless it is a regular file (a symlink could
        point anywhere: never followed)."""
        path = self._path(name)
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            raise NotFound(f"no backup {name!r} in {self.label}") from None
        if not stat.S_ISREG(mode):
            raise NotFound(f"{name!r} in {self.label} is not a regular file")
        return path


def open_local(
    url: DestinationUrl, settings: BackupSettings, default_dir: Path
) -> LocalDestination:
    """``local:`` alone is the default backup folder; ``~`` is the user's home."""
    folder = url.rest.strip()
    if not folder:
        return LocalDestination(default_dir)
    return LocalDestination(Path(folder).expanduser())
