"""Backup destinations by URL scheme: the one place that maps a destination URL to an
implementation (see ``base.Destination``).

Adding a destination is one module plus one line in ``DESTINATIONS``. Each opener takes
the parsed URL, the backup settings (credentials live there, never in URLs) and the
default backup folder (``local:`` alone).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autorag.backup.destinations.base import (
    Destination,
    DestinationError,
    DestinationRefused,
    DestinationUnsupported,
    StoredArchive,
    check_name,
)
from autorag.backup.destinations.dropbox import open_dropbox
from autorag.backup.destinations.email import open_email
from autorag.backup.destinations.ftp import open_ftp, open_ftps
from autorag.backup.destinations.gdrive import open_gdrive
from autorag.backup.destinations.local import open_local
from autorag.backup.destinations.retry import put_with_retry
from autorag.backup.destinations.s3 import open_s3
from autorag.backup.destinations.sftp import open_sftp
from autorag.backup.destinations.urls import DestinationUrl, parse_destination_url
from autorag.config import BackupSettings

Opener = Callable[[DestinationUrl, BackupSettings, Path], Destination]

DESTINATIONS: dict[str, Opener] = {
    "local": open_local,
    "s3": open_s3,
    "sftp": open_sftp,
    "ftp": open_ftp,
    "ftps": open_ftps,
    "email": open_email,
    "dropbox": open_dropbox,
    "gdrive": open_gdrive,
}

__all__ = [
    "DESTINATIONS",
    "Destination",
    "DestinationError",
    "DestinationRefused",
    "DestinationUnsupported",
    "StoredArchive",
    "check_name",
    "destination_label",
    "open_destination",
    "put_with_retry",
]


def open_destination(url: str, settings: BackupSettings, *, default_dir: Path) -> Destination:
    """The destination ``url`` names. ``InvalidInput`` for an unknown scheme (listing the
    known ones), a password in the URL, or parts a destination cannot use. Opening
    connects to nothing: the first call does."""
    parsed = parse_destination_url(url, DESTINATIONS)
    return DESTINATIONS[parsed.scheme](parsed, settings, default_dir)


def destination_label(url: str, settings: BackupSettings, *, default_dir: Path) -> str:
    """How ``url`` is shown and stored (checked as ``open_destination`` checks it)."""
    return open_destination(url, settings, default_dir=default_dir).label
