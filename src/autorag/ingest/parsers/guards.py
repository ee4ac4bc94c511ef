"""Cheap checks on a file before any parser opens it: readable, not too big, no zip bomb."""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from autorag.ingest.parsers.base import ParseError

OFFICE_EXTENSIONS = frozenset({".docx", ".pptx", ".xlsx"})

# Under this many unpacked bytes a high ratio is harmless, and small repetitive XML parts
# (blank styled cells, empty slides) legitimately compress past any sane ratio limit.
_RATIO_FLOOR_BYTES = 10 * 1024**2

# Every OLE compound file starts with this; Office writes password-protected .docx/.xlsx/.pptx
# as OLE files, and so were the old .doc/.xls/.ppt formats.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


@dataclass(frozen=True)
class IngestLimits:
    """Upper bounds on what one file may cost to open."""

    max_file_bytes: int = 100 * 1024**2
    max_unzipped_bytes: int = 500 * 1024**2
    max_zip_ratio: float = 200.0
    max_zip_entries: int = 10_000


def check_file(path: Path, limits: IngestLimits) -> None:
    """Raise ``ParseError`` unless ``path`` is a readable regular file within ``limits``."""
    size = _regular_file_size(path)
    _check_readable(path)
    if size > limits.max_file_bytes:
        raise ParseError(
            f"{path.name} is {human_size(size)}, over the "
            f"{human_size(limits.max_file_bytes)} limit",
            reason="too_large",
        )
    if path.suffix.lower() in OFFICE_EXTENSIONS:
        _check_zip_container(path, limits)


def human_size(size: float) -> str:
    """``1536`` -> ``'1.5 KiB'``: binary units, one decimal past bytes."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def _regular_file_size(path: Path) -> int:
    # lstat: a file swapped for a link after the walk is not followed to the link's target.
    try:
        info = path.lstat()
    except FileNotFoundError as exc:
        raise ParseError(f"file not found: {path}", reason="unreadable") from exc
    except OSError as exc:
        raise ParseError(f"cannot access {path}: {exc.strerror}", reason="unreadable") from exc
    if stat.S_ISLNK(info.st_mode):
        raise ParseError(f"became a symbolic link after the walk: {path}", reason="unreadable")
    if not stat.S_ISREG(info.st_mode):
        raise ParseError(f"not a regular file: {path}", reason="unreadable")
    return info.st_size


def _check_readable(path: Path) -> None:
    # Opening is the only honest test: permission bits, ACLs and mounts all have a say.
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise ParseError(f"cannot read {path}: {exc.strerror}", reason="unreadable") from exc


def _check_zip_container(path: Path, limits: IngestLimits) -> None:
    # ZipFile reads only the central directory here; nothing is decompressed. zipfile also
    # stops reading a member at its declared size, so the declared sizes are binding.
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise ParseError(_not_a_container_message(path), reason="corrupt") from exc
    check_zip_entries(path.name, entries, limits)


def _not_a_container_message(path: Path) -> str:
    message = f"{path.name} is not a valid {path.suffix.lower()} (zip) container"
    with path.open("rb") as file:
        if file.read(len(_OLE_MAGIC)) == _OLE_MAGIC:
            message += (
                "; it is an OLE file: password-protected, or an old Office format "
                "(.doc, .xls, .ppt) renamed"
            )
    return message


def check_zip_entries(name: str, entries: list[zipfile.ZipInfo], limits: IngestLimits) -> None:
    """Raise ``ParseError`` (reason ``zip_bomb``) when a zip's central directory promises
    too many entries, too many unpacked bytes, or too high a ratio; nothing is unpacked."""
    if len(entries) > limits.max_zip_entries:
        raise ParseError(
            f"{name} holds {len(entries)} zip entries, over the limit of {limits.max_zip_entries}",
            reason="zip_bomb",
        )
    unpacked = sum(entry.file_size for entry in entries)
    if unpacked > limits.max_unzipped_bytes:
        raise ParseError(
            f"{name} would unpack to {human_size(unpacked)}, over the "
            f"{human_size(limits.max_unzipped_bytes)} limit",
            reason="zip_bomb",
        )
    packed = max(sum(entry.compress_size for entry in entries), 1)
    ratio = unpacked / packed
    if unpacked > _RATIO_FLOOR_BYTES and ratio > limits.max_zip_ratio:
        raise ParseError(
            f"{name} compresses {ratio:.0f}:1, over the {limits.max_zip_ratio:.0f}:1 limit",
            reason="zip_bomb",
        )
