"""Backups' plain data: what the service returns to commands, routes and the web UI.

A *run* makes one backup (or fails to): an encrypted archive of the workspace put at a
*destination* (a local folder, S3, SFTP…). A *job* runs on a cron schedule and keeps its
backups for ``retention_days``. A restore reads a backup back, after a *safety* backup
of what it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

# running → succeeded | failed. At most one run is `running` in a catalog at a time
# (a unique partial index: the database-level mutex of seed 003).
RunStatus = Literal["running", "succeeded", "failed"]
# manual: `backup run` or the API's trigger; scheduled: a job's cron; safety: made by a
# restore before it replaces anything.
Trigger = Literal["manual", "scheduled", "safety"]

FORMAT_VERSION = 1  # the archive's layout (manifest.json's "format")
ARCHIVE_SUFFIX = ".autorag-backup"  # autorag-<UTC stamp>-<8 hex>.autorag-backup


@dataclass(frozen=True)
class BackupRun:
    id: int
    status: RunStatus
    trigger: Trigger
    job: str | None  # the job's name, for scheduled runs
    destination: str  # as the user wrote it, credentials never included
    archive: str | None  # the archive's name at the destination, once written
    size_bytes: int | None
    sha256: str | None  # of the encrypted archive, as stored
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    log: tuple[str, ...] = ()  # one line per step, for people


@dataclass(frozen=True)
class BackupJob:
    name: str
    cron: str  # five fields, e.g. "0 3 * * *", in the server's local time zone
    destination: str
    retention_days: int
    include_vectors: bool
    enabled: bool
    created_at: datetime
    last_run: BackupRun | None = None
    next_run_at: datetime | None = None  # None: disabled, or no scheduler in this process


@dataclass(frozen=True)
class ManifestFile:
    path: str  # inside the archive, '/'-separated, never absolute, never '..'
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format: int
    product_version: str
    created_at: datetime
    catalog_kind: Literal["sqlite", "postgresql"]
    catalog_revision: str | None  # the Alembic revision the catalog was at
    table_counts: dict[str, int]
    vectors_included: bool
    vector_store: str  # lancedb | pgvector | qdrant
    files: tuple[ManifestFile, ...] = ()


@dataclass(frozen=True)
class Progress:
    """One step of a backup or a restore, for a progress bar."""

    step: str  # "dump", "collect", "archive", "upload", "verify", "safety", "restore"…
    done: int  # bytes (or items) done in this step
    total: int | None  # None: unknown
    message: str = ""


@dataclass(frozen=True)
class VerifyReport:
    ok: bool
    archive: str
    size_bytes: int
    sha256: str
    checksum_matches: bool | None  # None: no recorded checksum to compare with
    decrypted: bool
    manifest: Manifest | None
    files_checked: int
    problems: tuple[str, ...] = ()  # each a sentence; empty when ok


@dataclass(frozen=True)
class RestoreReport:
    archive: str
    safety_run: BackupRun | None  # the backup of what the restore replaced
    manifest: Manifest
    vectors: Literal["restored", "rebuilt", "none"]
    documents_reindexed: int = 0
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RetentionReport:
    job: str
    deleted: tuple[str, ...] = ()  # archive names removed
    failed: tuple[str, ...] = ()  # "name: why" for each that could not be removed


@dataclass(frozen=True)
class RekeyReport:
    resealed: dict[str, int] = field(default_factory=dict)  # purpose → values resealed
    failed: dict[str, int] = field(default_factory=dict)  # purpose → values no key opens
