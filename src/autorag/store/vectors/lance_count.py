"""A LanceDB table's row count without opening LanceDB, whose import alone takes seconds
(`autorag status` would pay them to print one number).

The store records the count beside the table after each of its writes, with the table
version it counted. The record is believed only while that version is still the table's
newest: its manifest exists and the next version's does not (Lance names manifests
``{version}.manifest``, or ``{2**64 - 1 - version:020}.manifest`` in its newer scheme;
both are looked for). Anything else (no record, another dimension, a newer version, a
scheme this code does not know) answers None and the caller opens the table. A table
that was never written (neither its folder nor a record exists) holds no vectors: the
first ``status`` of a new workspace need not import LanceDB to say 0.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from autorag.private_files import FILE_MODE

_U64_MAX = 2**64 - 1


def table_dir(directory: Path, table: str) -> Path:
    """Where LanceDB keeps ``table`` of the database at ``directory``."""
    return directory / f"{table}.lance"


def _count_file(directory: Path, table: str) -> Path:
    return directory / f"{table}.lance.count.json"


def record_count(directory: Path, table: str, version: int, rows: int, dim: int) -> None:
    """Note that ``version`` of ``table`` holds ``rows`` vectors of ``dim`` numbers.

    Written to a new owner-only file and renamed over the old one: a reader sees one or
    the other, whole. Not synced to disk: a record lost in a crash costs the next
    ``status`` the slow way, never a wrong count (the version check refuses it).
    """
    target = _count_file(directory, table)
    staged = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)  # whatever the umask
        json.dump({"version": version, "rows": rows, "dim": dim}, handle)
    os.replace(staged, target)


def recorded_count(directory: Path, table: str, dim: int) -> int | None:
    """The recorded row count if it is the newest version's and of ``dim``, 0 when the
    table was never written; else None."""
    count_file = _count_file(directory, table)
    if not count_file.exists() and not table_dir(directory, table).exists():
        return 0
    try:
        record = json.loads(count_file.read_text("utf-8"))
        version, rows = int(record["version"]), int(record["rows"])
        if int(record["dim"]) != dim:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    versions = table_dir(directory, table) / "_versions"
    if _manifest(versions, version) and not _manifest(versions, version + 1):
        return rows
    return None


def _manifest(versions: Path, version: int) -> bool:
    names = (f"{version}.manifest", f"{_U64_MAX - version:020}.manifest")
    return any((versions / name).is_file() for name in names)
