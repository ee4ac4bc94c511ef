"""A workspace as one encrypted archive: the catalog dump, the vectors, the stored files,
the configuration and the keys, then ``manifest.json`` (the last entry).

Everything is streamed: each file is read a block at a time into a zip entry (deflate
level 9), the zip into ``EncryptingWriter``, the sealed bytes into the output file and
through SHA-256 on their way, so memory stays flat whatever the workspace weighs. The
manifest records the size and SHA-256 of the bytes actually read, which are the bytes
stored. Layout (``paths``): ``catalog/autorag.db`` or ``catalog/catalog.sql``,
``vectors/…``, ``files/uploads/…``, ``files/p2p/…``, ``config/autorag.toml``,
``keys/secret.key``, ``keys/encryption.salt`` (``keys/secrets.key`` from earlier
versions), ``manifest.json``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, cast

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import Engine

from autorag import __version__
from autorag.backup.crypto import BackupDamaged, EncryptingWriter
from autorag.backup.dump import dump_catalog
from autorag.backup.models import FORMAT_VERSION, Manifest, ManifestFile, Progress
from autorag.backup.paths import (
    FILE_AREAS,
    LANCEDB_AREA,
    MANIFEST_ENTRY,
    Area,
    Collected,
    collect,
    open_regular,
    safe_entry_name,
)
from autorag.config import Settings
from autorag.private_files import create_private, make_private_dir
from autorag.store.catalog.models import utcnow
from autorag.workspace import Workspace

ProgressFn = Callable[[Progress], None]
BLOCK = 1 << 20  # bytes read (and hashed) at a time
COMPRESS_LEVEL = 9
# A progress report at least this often while a large file is archived.
_PROGRESS_EVERY = 64 * BLOCK
_ZIP_EPOCH = time.mktime((1980, 1, 1, 0, 0, 0, 0, 0, -1))  # zip dates start in 1980
_MANIFEST = TypeAdapter(Manifest)


def write_archive(
    workspace: Workspace,
    settings: Settings,
    engine: Engine,
    sink_key: bytes,
    out: Path,
    *,
    include_vectors: bool,
    progress: ProgressFn | None = None,
) -> tuple[Manifest, int, str]:
    """Back ``workspace`` (its catalog at ``engine``) up into ``out`` (a new file, 0600)
    sealed with ``sink_key``; the manifest, the archive's size and its SHA-256.

    ``include_vectors`` false leaves LanceDB's folder out (a restore rebuilds it from the
    catalog). pgvector's tables are in the catalog's dump whatever it says; a Qdrant
    server's collection is never collected (a restore rebuilds it)."""
    report = progress or _ignore
    parts = make_private_dir(parts_dir(out))
    try:
        report(Progress("dump", 0, 1, "dumping the catalog"))
        dump = dump_catalog(engine, settings.backup, parts)
        report(Progress("dump", 1, 1, f"catalog dumped ({_size(dump.path.stat().st_size)})"))
        vectors = _vectors_area(settings, include_vectors)
        files, notes = _collect_all(workspace, (*vectors, *FILE_AREAS))
        for note in notes:
            report(Progress("collect", len(files), len(files), note))
        entries = [Collected(dump.path, dump.entry, dump.path.stat().st_size), *files]
        manifest = Manifest(
            format=FORMAT_VERSION,
            product_version=__version__,
            created_at=utcnow(),
            catalog_kind=dump.kind,
            catalog_revision=dump.revision,
            table_counts=dump.table_counts,
            vectors_included=bool(vectors) or settings.vector_store == "pgvector",
            vector_store=settings.vector_store,
        )
        size, digest, manifest = _seal(entries, manifest, sink_key, out, report)
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    return manifest, size, digest


def parts_dir(out: Path) -> Path:
    """Where the catalog's dump waits to be archived: a hidden folder beside ``out``
    named after it (``.run-7.partial`` → ``.run-7.partial.parts``), removed when done."""
    hidden = out.name if out.name.startswith(".") else f".{out.name}"
    return out.with_name(f"{hidden}.parts")


def _ignore(_progress: Progress) -> None:
    return None


def _vectors_area(settings: Settings, include_vectors: bool) -> tuple[Area, ...]:
    return (LANCEDB_AREA,) if include_vectors and settings.vector_store == "lancedb" else ()


def _collect_all(
    workspace: Workspace, areas: tuple[Area, ...]
) -> tuple[list[Collected], list[str]]:
    files: list[Collected] = []
    notes: list[str] = []
    for area in areas:
        found, said = collect(workspace, area)
        files += found
        notes += said
    return files, notes


class _HashingSink:
    """The output file, with the SHA-256 and size of every byte written through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self._raw.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        self._raw.flush()


def _seal(
    entries: list[Collected],
    manifest: Manifest,
    key: bytes,
    out: Path,
    report: ProgressFn,
) -> tuple[int, str, Manifest]:
    meter = _Meter(sum(e.size for e in entries), report)
    raw = create_private(out)  # refuses an existing file: never one of someone else's
    try:
        with raw:
            sink = _HashingSink(raw)
            manifest = _write_zip(sink, entries, manifest, key, meter)
            raw.flush()
            os.fsync(raw.fileno())
    except BaseException:
        out.unlink(missing_ok=True)  # half an archive is no backup
        raise
    report(Progress("archive", meter.done, meter.total, f"archive written ({_size(sink.size)})"))
    return sink.size, sink.sha256.hexdigest(), manifest


def _write_zip(
    sink: _HashingSink, entries: list[Collected], manifest: Manifest, key: bytes, meter: _Meter
) -> Manifest:
    """The entries, then the manifest naming what was stored, zipped and sealed into
    ``sink``; the manifest."""
    recorded: list[ManifestFile] = []
    sealed = EncryptingWriter(cast(BinaryIO, sink), key)
    # The zip closes (its central directory written) before the last segment is sealed;
    # a failure on the way leaves the archive unsealed, refused as truncated.
    with sealed, zipfile.ZipFile(cast(BinaryIO, sealed), "w", allowZip64=True) as archive:
        for entry in entries:
            stored = _add_file(archive, entry, meter)
            if stored is not None:
                recorded.append(stored)
        manifest = replace(manifest, files=tuple(recorded))
        archive.writestr(_zip_info(MANIFEST_ENTRY, time.time(), 0), manifest_json(manifest))
    return manifest


class _Meter:
    """Bytes archived so far, reported every ``_PROGRESS_EVERY`` bytes and per file."""

    def __init__(self, total: int, report: ProgressFn) -> None:
        self.total = total
        self.done = 0
        self._report = report
        self._last = 0

    def add(self, count: int, *, file_done: bool = False) -> None:
        self.done += count
        if file_done or self.done - self._last >= _PROGRESS_EVERY:
            self._last = self.done
            self._report(Progress("archive", self.done, self.total))


def _add_file(archive: zipfile.ZipFile, entry: Collected, meter: _Meter) -> ManifestFile | None:
    """Stream one file into the archive; None when it vanished since it was listed (a
    file LanceDB compacted away meanwhile, say)."""
    try:
        fd = open_regular(entry.path)
    except FileNotFoundError:
        return None
    digest = hashlib.sha256()
    size = 0
    with os.fdopen(fd, "rb") as source:
        info = _zip_info(entry.entry, os.fstat(fd).st_mtime, entry.size)
        with archive.open(info, "w") as target:
            while block := source.read(BLOCK):
                target.write(block)
                digest.update(block)
                size += len(block)
                meter.add(len(block))
    meter.add(0, file_done=True)
    return ManifestFile(entry.entry, size, digest.hexdigest())


def _zip_info(name: str, mtime: float, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(safe_entry_name(name), time.localtime(max(mtime, _ZIP_EPOCH))[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info._compresslevel = COMPRESS_LEVEL  # type: ignore[attr-defined]  # (zipfile's own way)
    info.external_attr = 0o100600 << 16  # a regular file, the owner's alone
    info.file_size = size  # tells zipfile when a large entry needs ZIP64
    return info


def manifest_json(manifest: Manifest) -> bytes:
    return _MANIFEST.dump_json(manifest, indent=2)


def parse_manifest(data: bytes) -> Manifest:
    """The manifest in ``data``; BackupDamaged when it is not a valid one of a format
    this AutoRAG reads, or names a file unsafely or twice."""
    try:
        manifest = _MANIFEST.validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the document"
        raise BackupDamaged(
            f"{MANIFEST_ENTRY} is not a valid manifest: {where}: {first['msg']}"
        ) from None
    if manifest.format != FORMAT_VERSION:
        raise BackupDamaged(
            f"the backup's layout is format {manifest.format}; this AutoRAG reads format "
            f"{FORMAT_VERSION} (a newer AutoRAG made it?)"
        )
    names = [safe_entry_name(f.path) for f in manifest.files]
    if len(set(names)) != len(names) or MANIFEST_ENTRY in names:
        raise BackupDamaged(f"{MANIFEST_ENTRY} names a file twice")
    if any(f.size < 0 for f in manifest.files):
        raise BackupDamaged(f"{MANIFEST_ENTRY} gives a file a negative size")
    return manifest


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return f"{count} B"
