"""Check a backup without touching anything: its checksum, every encrypted segment, the
manifest, and every entry against it (name, size, SHA-256, nothing missing or extra).

``verify_archive`` reports (``VerifyReport.problems``, each a sentence); ``open_backup``
and ``entry_problems`` are what a restore reads the archive through, so it refuses the
same archives, and ``copy_entry`` checks each entry's bytes again as it extracts them.
"""

from __future__ import annotations

import hashlib
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from autorag.backup.archive import BLOCK, ProgressFn, parse_manifest
from autorag.backup.crypto import BackupDamaged, DecryptingReader
from autorag.backup.models import Manifest, ManifestFile, Progress, VerifyReport
from autorag.backup.paths import (
    MANIFEST_ENTRY,
    POSTGRES_ENTRY,
    SQLITE_ENTRY,
    UnsafeEntry,
    area_of,
)
from autorag.backup.paths import safe_entry_name as _safe
from autorag.errors import AutoragError, NotFound
from autorag.keyring import Keyring

_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
# The manifest is small; one far larger is not ours.
_MANIFEST_MAX = 64 * 1024 * 1024


def verify_archive(
    path: Path,
    keyring: Keyring,
    expected_sha256: str | None = None,
    *,
    progress: ProgressFn | None = None,
) -> VerifyReport:
    """Verify the backup at ``path`` with the keys of ``keyring`` (current first)."""
    if not path.is_file():
        raise NotFound(f"no backup at {path}")
    size, digest = file_sha256(path)
    matches = None if expected_sha256 is None else digest == expected_sha256.lower()
    problems: list[str] = []
    if matches is False:
        problems.append(
            f"the archive's SHA-256 is {digest}, not the {expected_sha256} recorded when it "
            "was made: it was altered or damaged"
        )
    manifest: Manifest | None = None
    decrypted = False
    checked = 0
    try:
        with open_backup(path, keyring, whole=True) as (archive, manifest):
            decrypted = True
            problems += entry_problems(archive, manifest)
            if not problems:
                checked = _check_contents(archive, manifest, problems, progress)
    except AutoragError as exc:
        problems.append(exc.message)
    return VerifyReport(
        ok=not problems,
        archive=path.name,
        size_bytes=size,
        sha256=digest,
        checksum_matches=matches,
        decrypted=decrypted,
        manifest=manifest,
        files_checked=checked,
        problems=tuple(problems),
    )


def file_sha256(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as source:
        while block := source.read(BLOCK):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


@contextmanager
def open_backup(
    path: Path, keyring: Keyring, *, whole: bool = False
) -> Iterator[tuple[zipfile.ZipFile, Manifest]]:
    """The archive at ``path`` decrypted, as a zip, and its manifest. BackupKeyError when
    no key of ``keyring`` opens it, BackupDamaged when it is not a backup or is
    truncated or altered; ``whole`` authenticates every segment first."""
    with path.open("rb") as raw:
        reader = DecryptingReader(raw, keyring.candidates())
        if whole:
            reader.verify_all()
        try:
            archive = zipfile.ZipFile(reader)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise BackupDamaged(f"the decrypted backup is not a readable archive: {exc}") from None
        with archive:
            yield archive, read_manifest(archive)


def read_manifest(archive: zipfile.ZipFile) -> Manifest:
    infos = archive.infolist()
    if not infos or infos[-1].filename != MANIFEST_ENTRY:
        raise BackupDamaged(f"the backup's last entry is not {MANIFEST_ENTRY}")
    info = infos[-1]
    if info.file_size > _MANIFEST_MAX:
        raise BackupDamaged(f"{MANIFEST_ENTRY} is implausibly large ({info.file_size} bytes)")
    chunks: list[bytes] = []
    copy_entry(archive, info, None, chunks.append, limit=_MANIFEST_MAX)
    return parse_manifest(b"".join(chunks))


def entry_problems(archive: zipfile.ZipFile, manifest: Manifest) -> list[str]:
    """What is wrong with the archive's entries as listed (no byte read): unsafe names,
    links, unknown compression, duplicates, files missing or not in the manifest."""
    problems: list[str] = []
    seen: set[str] = set()
    for info in archive.infolist():
        problem = _entry_problem(info, seen)
        if problem:
            problems.append(problem)
        seen.add(info.filename)
    listed = {f.path for f in manifest.files}
    problems += [
        f"{name}: in the manifest, missing from the archive" for name in sorted(listed - seen)
    ]
    extra = seen - listed - {MANIFEST_ENTRY}
    problems += [f"{name}: in the archive, not in the manifest" for name in sorted(extra)]
    catalog = SQLITE_ENTRY if manifest.catalog_kind == "sqlite" else POSTGRES_ENTRY
    if catalog not in listed:
        problems.append(f"the {manifest.catalog_kind} catalog ({catalog}) is not in the backup")
    unknown = sorted(n for n in listed - {catalog} if area_of(n) is None)
    problems += [f"{name}: not a part of a workspace this AutoRAG restores" for name in unknown]
    return problems


def _entry_problem(info: zipfile.ZipInfo, seen: set[str]) -> str | None:
    try:
        _safe(info.filename)
    except UnsafeEntry as exc:
        return exc.message
    if info.filename in seen:
        return f"{info.filename}: in the archive twice"
    mode = info.external_attr >> 16
    if info.is_dir() or (mode and not stat.S_ISREG(mode)):
        return f"{info.filename}: not a regular file (a link or a folder entry)"
    if info.compress_type not in _COMPRESSIONS:
        return f"{info.filename}: compressed with an unknown method ({info.compress_type})"
    if info.flag_bits & 0x1:
        return f"{info.filename}: zip-encrypted, which a backup never is"
    return None


def _check_contents(
    archive: zipfile.ZipFile,
    manifest: Manifest,
    problems: list[str],
    progress: ProgressFn | None,
) -> int:
    infos = {i.filename: i for i in archive.infolist()}
    total = sum(f.size for f in manifest.files)
    done = 0
    for expected in manifest.files:
        try:
            copy_entry(archive, infos[expected.path], expected, _discard)
        except BackupDamaged as exc:
            problems.append(exc.message)
        done += expected.size
        if progress:
            progress(Progress("verify", done, total))
    return len(manifest.files)


def _discard(_block: bytes) -> None:
    return None


def copy_entry(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    expected: ManifestFile | None,
    write: Callable[[bytes], object],
    *,
    limit: int | None = None,
) -> None:
    """Stream entry ``info`` into ``write``, checking its size and SHA-256 against
    ``expected`` (never reading past the size it claims); BackupDamaged on a mismatch."""
    cap = expected.size if expected is not None else (limit or info.file_size)
    digest = hashlib.sha256()
    size = 0
    try:
        with archive.open(info) as source:
            while block := _read(source, min(BLOCK, cap + 1 - size)):
                size += len(block)
                if size > cap:
                    raise BackupDamaged(f"{info.filename}: larger than the manifest says")
                digest.update(block)
                write(block)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:  # CRC, inflate
        raise BackupDamaged(f"{info.filename}: unreadable: {exc}") from None
    if expected is None:
        return
    if size != expected.size or digest.hexdigest() != expected.sha256:
        raise BackupDamaged(
            f"{info.filename}: {size} bytes with SHA-256 {digest.hexdigest()[:16]}…, "
            f"the manifest says {expected.size} bytes, {expected.sha256[:16]}…"
        )


def _read(source: IO[bytes], count: int) -> bytes:
    return source.read(count) if count > 0 else b""
