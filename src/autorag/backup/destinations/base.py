"""What every backup destination is: four calls on archives named at the destination,
the errors they raise, and the checks every one of them makes.

Errors: a destination that cannot be reached, fails or times out raises
``DestinationError`` (``Unavailable``: asking again later may work, and
``put_with_retry`` does); one that refuses our credentials, our permission or the
place we name raises ``DestinationRefused`` (asking again will not help); an archive
that is not there raises ``NotFound``; a request no destination could serve (a bad
name, a URL with a password) raises ``InvalidInput``. Messages quote the destination's
own words with every credential masked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol

from autorag.backup.models import ARCHIVE_SUFFIX
from autorag.errors import InvalidInput, Unavailable
from autorag.http_client import snippet
from autorag.private_files import create_private
from autorag.times import as_utc

# Reads and writes of archives go through buffers this big: memory stays flat whatever
# the archive's size.
COPY_BUFFER = 1024 * 1024
# Archive names are made by the service (autorag-<stamp>-<hex>.autorag-backup); a name
# longer than this is not one of ours.
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class StoredArchive:
    name: str
    size: int
    modified: datetime  # naive UTC, as every stored timestamp (autorag.times)


class Destination(Protocol):
    """A place archives are put, listed, fetched and deleted, by name."""

    label: str  # the URL with credentials removed, fit for logs and the catalog

    def put(self, local: Path, name: str) -> None:
        """Store the file ``local`` as ``name``, replacing one of that name; streamed."""
        ...

    def list(self) -> list[StoredArchive]:
        """The archives here (only names ending with ``ARCHIVE_SUFFIX``), oldest first."""
        ...

    def get(self, name: str, local: Path) -> None:
        """Fetch ``name`` into the file ``local`` (0600; complete, or not there at all)."""
        ...

    def delete(self, name: str) -> None:
        """Remove ``name``; ``NotFound`` when it is not there."""
        ...


class DestinationError(Unavailable):
    """The destination could not do what was asked: unreachable, failing, timing out."""

    code = "backup_destination_failed"


class DestinationRefused(DestinationError):
    """The destination refused us: credentials, permission, an unknown host key, a
    bucket or folder that does not exist. Not retried: it will refuse again."""

    code = "backup_destination_refused"


class DestinationUnsupported(InvalidInput):
    """This kind of destination cannot do that at all (the e-mail one cannot list)."""

    code = "backup_destination_unsupported"


def check_name(name: str) -> str:
    """``name`` when it is a plain archive name; ``InvalidInput`` otherwise.

    Every call checks, so that no name reaches a path, a key or a query that could
    step out of the destination's folder (``..``, separators) or forge a header or a
    protocol line (control characters).
    """
    problem = _name_problem(name)
    if problem:
        raise InvalidInput(f"bad archive name {name[:MAX_NAME_CHARS]!r}: {problem}")
    return name


def _name_problem(name: str) -> str | None:
    if not name or name in (".", ".."):
        return "it is empty or a dot"
    if len(name) > MAX_NAME_CHARS:
        return f"longer than {MAX_NAME_CHARS} characters"
    if "/" in name or "\\" in name:
        return "it holds a path separator"
    if ".." in name:
        return "it holds '..'"
    if any(unicodedata.category(char).startswith("C") for char in name):
        return "it holds a control character"
    if name != name.strip():
        return "it starts or ends with a space"
    return None


def is_archive_name(name: str) -> bool:
    """Whether ``name`` is an archive ``list()`` should show (a safe name, our suffix)."""
    return name.endswith(ARCHIVE_SUFFIX) and _name_problem(name) is None


def oldest_first(archives: Iterable[StoredArchive]) -> list[StoredArchive]:
    return sorted(archives, key=lambda archive: (archive.modified, archive.name))


def naive_utc(moment: datetime) -> datetime:
    """``moment`` as the catalog keeps times: UTC without a zone (a naive one is UTC)."""
    return as_utc(moment).astimezone(UTC).replace(tzinfo=None)


def scrub(text: str, secret_values: Iterable[str | None]) -> str:
    """``text`` on one short line, every secret value in it masked."""
    for value in secret_values:
        if value:
            text = text.replace(value, "***")
    return snippet(text)


@contextlib.contextmanager
def receiving(local: Path) -> Iterator[BinaryIO]:
    """A file to write a fetched archive into: it becomes ``local`` (0600) only when
    the block ends without error, so a failed fetch leaves nothing half-written."""
    if not local.parent.is_dir():  # said here, not mistaken for the destination's fault
        raise InvalidInput(f"no folder {local.parent} to fetch a backup into")
    temp = local.with_name(f".{local.name}.{secrets.token_hex(4)}.part")
    try:
        with create_private(temp) as handle:
            yield handle
        os.replace(temp, local)
    finally:
        temp.unlink(missing_ok=True)
