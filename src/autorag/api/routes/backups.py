"""Backups over HTTP (issue 20): the runs (newest first; one alone with its log), a backup
made now, an archive downloaded or verified, a restore, the scheduled jobs, and
re-keying the stored secrets.

Backups are the installation's: every route needs ``backup:admin`` (admins) in every
workspace, so an API key confined to some workspaces is refused. Restoring and re-keying
need ``backup:restore``, which only a password login carries: a leaked API key may
download an archive (it is encrypted) but never replace the installation with one.

A backup made here runs in the background (202 with the run, followed at
``/api/backups/{id}``); a restore answers when it is done, the server in maintenance
meanwhile (``autorag.api.maintenance``: every other request answers 503, and
``/api/backups/restore/status`` says how far it is). The service
(``autorag.backup.service``) does the work; these routes only translate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Response
from fastapi.responses import FileResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError
from starlette.background import BackgroundTask

from autorag.api.auth import Principal, current_principal, require
from autorag.api.deps import AppDep, AuthDep, MaintenanceDep, ServerDep
from autorag.api.maintenance import RESTORE_STATUS_PATH, RESTORING, Maintenance, RestoreStatus
from autorag.api.routes.archives import CamelIn
from autorag.api.routes.documents import attachment
from autorag.api.state import restore_backup
from autorag.auth.keys import looks_like_key
from autorag.auth.permissions import BACKUP_ADMIN, BACKUP_RESTORE, EVERY_WORKSPACE
from autorag.backup.models import (
    BackupJob,
    BackupRun,
    Manifest,
    RekeyReport,
    RestoreReport,
    VerifyReport,
)
from autorag.backup.scheduler import check_cron
from autorag.backup.service import JOB_NAME, BackupService
from autorag.errors import Forbidden, InvalidInput, Unauthorized, Unavailable
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(prefix="/api/backups", tags=["backups"])

MAX_ID = 2**62
RunId = Annotated[int, Path(ge=1, le=MAX_ID, description="The run's id")]
JobName = Annotated[str, Path(min_length=1, max_length=64, pattern=JOB_NAME)]
Destination = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2000,
        description="local:/path (or a plain path), s3://bucket/prefix, sftp://user@host/path, "
        "ftp:// or ftps://, email:address, dropbox:/folder, gdrive:<folder id>",
    ),
]
Admin = Annotated[Principal, Depends(require(BACKUP_ADMIN, every_workspace=True))]
Restorer = Annotated[Principal, Depends(require(BACKUP_RESTORE, every_workspace=True))]


def _service(server: ServerDep) -> BackupService:
    return server.backups.service()


Backups = Annotated[BackupService, Depends(_service)]


# -- answers ----------------------------------------------------------------------------
class Out(BaseModel):
    """camelCase on the wire, read from the service's dataclasses' attributes."""

    model_config = ConfigDict(**CAMEL_CASE, from_attributes=True)


class RunOut(Out):
    id: int
    status: Literal["running", "succeeded", "failed"]
    trigger: Literal["manual", "scheduled", "safety"]
    job: str | None
    destination: str  # credentials never included
    archive: str | None
    size_bytes: int | None
    sha256: str | None
    started_at: datetime
    finished_at: datetime | None
    error: str | None


class RunDetailOut(RunOut):
    log: list[str]  # one line per step, for people


class RunListOut(Out):
    runs: list[RunOut]  # newest first


class JobOut(Out):
    name: str
    cron: str
    destination: str
    retention_days: int
    include_vectors: bool
    enabled: bool
    created_at: datetime
    last_run: RunOut | None
    next_run_at: datetime | None  # None: disabled, or not scheduled in this server


class JobListOut(Out):
    jobs: list[JobOut]


class ManifestOut(Out):
    format: int
    product_version: str
    created_at: datetime
    catalog_kind: str
    catalog_revision: str | None
    table_counts: dict[str, int]
    vectors_included: bool
    vector_store: str
    file_count: int

    @classmethod
    def of(cls, manifest: Manifest) -> ManifestOut:
        return cls.model_validate(
            {**manifest.__dict__, "file_count": len(manifest.files)}, from_attributes=False
        )


class VerifyOut(Out):
    ok: bool
    archive: str
    size_bytes: int
    sha256: str
    checksum_matches: bool | None  # None: no recorded checksum to compare with
    decrypted: bool
    manifest: ManifestOut | None
    files_checked: int
    problems: list[str]

    @classmethod
    def of(cls, report: VerifyReport) -> VerifyOut:
        manifest = ManifestOut.of(report.manifest) if report.manifest else None
        return cls.model_validate({**report.__dict__, "manifest": manifest})


class RestoreOut(Out):
    archive: str
    safety_run: RunOut | None  # the backup of what the restore replaced
    manifest: ManifestOut
    vectors: Literal["restored", "rebuilt", "none"]
    documents_reindexed: int
    warnings: list[str]

    @classmethod
    def of(cls, report: RestoreReport) -> RestoreOut:
        return cls.model_validate({**report.__dict__, "manifest": ManifestOut.of(report.manifest)})


class RekeyOut(Out):
    resealed: dict[str, int]  # purpose → values resealed under the current key
    failed: dict[str, int]  # purpose → values no key opens (left as they were)


class RestoreStatusOut(Out):
    restoring: bool
    started_at: datetime | None
    finished_at: datetime | None
    step: str | None
    done: int
    total: int | None
    message: str
    error: str | None


def _run(run: BackupRun) -> RunOut:
    return RunOut.model_validate(run)


def _job(job: BackupJob) -> JobOut:
    return JobOut.model_validate(job)


# -- bodies -----------------------------------------------------------------------------
class TriggerIn(CamelIn):
    destination: Destination | None = Field(
        default=None, description="Where to put it; default: the job's, or [backup] destination"
    )
    job: str | None = Field(
        default=None, min_length=1, max_length=64, description="Run as this job (its settings)"
    )
    include_vectors: bool | None = Field(
        default=None, description="false: vectors are rebuilt from the catalog on restore"
    )


class RestoreIn(CamelIn):
    confirm: bool = Field(
        default=False, description="true: replace the catalog, files and vectors with the backup"
    )


def _cron(value: str) -> str:
    """The cron expression, or a 422 saying what is wrong with it (APScheduler's words)."""
    try:
        check_cron(value)
    except ValueError as exc:
        raise PydanticCustomError(
            "bad_cron", "not a valid schedule: {reason}", {"reason": str(exc)}
        ) from None
    return value


class JobIn(CamelIn):
    name: str = Field(min_length=1, max_length=64, pattern=JOB_NAME)
    cron: str = Field(
        min_length=1, max_length=200, description="Five fields, in the server's time zone"
    )
    destination: Destination
    retention_days: int = Field(default=30, ge=1, le=36500)
    include_vectors: bool = True
    enabled: bool = True

    _check = field_validator("cron")(_cron)


class JobPatch(CamelIn):
    """Only the keys given change."""

    cron: str | None = Field(default=None, min_length=1, max_length=200)
    destination: Destination | None = None
    retention_days: int | None = Field(default=None, ge=1, le=36500)
    include_vectors: bool | None = None
    enabled: bool | None = None

    @field_validator("cron")
    @classmethod
    def _check(cls, value: str | None) -> str | None:
        return None if value is None else _cron(value)


# -- runs -------------------------------------------------------------------------------
@router.get("", response_model=RunListOut)
def list_runs(
    principal: Admin, backups: Backups, limit: Annotated[int, Query(ge=1, le=500)] = 100
) -> RunListOut:
    """The backups made (and tried), newest first: manual, scheduled and safety ones."""
    return RunListOut(runs=[_run(run) for run in backups.runs(limit)])


@router.post("/trigger", status_code=202, response_model=RunDetailOut)
def trigger(
    principal: Admin,
    server: ServerDep,
    body: Annotated[TriggerIn | None, Body()] = None,
) -> RunDetailOut:
    """Make a backup now (202: it runs in the background; follow it at
    ``/api/backups/{id}``). 409 while another backup runs, in this or another process."""
    given = body or TriggerIn()
    run = server.backups.trigger(
        destination=given.destination,
        job=given.job,
        include_vectors=given.include_vectors,
    )
    return RunDetailOut.model_validate(run)


# Before /{run}: these paths are not run ids.
@router.get("/jobs", response_model=JobListOut)
def list_jobs(principal: Admin, backups: Backups) -> JobListOut:
    """The scheduled jobs, each with its last run and, when enabled, its next one."""
    return JobListOut(jobs=[_job(job) for job in backups.jobs()])


@router.post("/jobs", status_code=201, response_model=JobOut)
def add_job(principal: Admin, server: ServerDep, backups: Backups, body: JobIn) -> JobOut:
    """A job making a backup on a cron schedule, and keeping ``retentionDays`` of them.
    422 for a cron expression that is not five valid fields; 409 for a name taken."""
    backups.add_job(
        body.name,
        cron=body.cron,
        destination=body.destination,
        retention_days=body.retention_days,
        include_vectors=body.include_vectors,
        enabled=body.enabled,
    )
    server.backups.reload()
    return _job(backups.job(body.name))


@router.patch("/jobs/{name}", response_model=JobOut)
def update_job(
    principal: Admin, server: ServerDep, backups: Backups, name: JobName, body: JobPatch
) -> JobOut:
    """Change a job (only the keys given); ``enabled: false`` pauses it."""
    changes = body.model_dump(exclude_unset=True)
    if any(value is None for value in changes.values()):
        raise InvalidInput("a job's settings cannot be null: leave out what does not change")
    backups.update_job(name, **changes)
    server.backups.reload()
    return _job(backups.job(name))


@router.delete("/jobs/{name}", status_code=204, response_class=Response)
def remove_job(principal: Admin, server: ServerDep, backups: Backups, name: JobName) -> Response:
    """Remove a job: it runs no more. Its backups and their history stay."""
    backups.remove_job(name)
    server.backups.reload()
    return Response(status_code=204)


# -- a restore's status, answered also while the server restores ------------------------
_bearer = HTTPBearer(auto_error=False, description="A login token")


def status_reader(
    context: AppDep,
    auth: AuthDep,
    maintenance: MaintenanceDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """An admin (``backup:admin``); while a restore runs, any valid login token: the
    catalog is being replaced, so only the token's signature can be checked (and the
    restore's steps are all it learns)."""
    if not maintenance.active:
        principal = current_principal(context, auth, credentials)
        if not principal.can(BACKUP_ADMIN, EVERY_WORKSPACE):
            raise Forbidden(f"not allowed: {BACKUP_ADMIN} (role {principal.role}, {principal.via})")
        return
    if credentials is None:
        raise Unauthorized("authentication required: send Authorization: Bearer <token>")
    if looks_like_key(credentials.credentials):
        raise Unavailable(RESTORING)  # an API key is checked in the catalog
    auth.signer.verify(credentials.credentials)


@router.get(
    RESTORE_STATUS_PATH.removeprefix("/api/backups"),
    response_model=RestoreStatusOut,
    dependencies=[Depends(status_reader)],
)
async def restore_status(maintenance: MaintenanceDep) -> RestoreStatusOut:
    """Whether a restore runs, its step and progress; or how the last one ended."""
    return _status(maintenance)


def _status(maintenance: Maintenance) -> RestoreStatusOut:
    status: RestoreStatus = maintenance.status
    return RestoreStatusOut.model_validate(status)


# -- one run ------------------------------------------------------------------------------
@router.post("/rekey", response_model=RekeyOut)
def rekey(principal: Restorer, backups: Backups) -> RekeyOut:
    """Reseal every stored secret (DLP originals, model API keys, …) under the current
    key (``AUTORAG_ENCRYPTION_KEY``); a value no key opens is counted in ``failed`` and
    left as it is. Needs a password login."""
    report: RekeyReport = backups.rekey()
    return RekeyOut.model_validate(report)


@router.get("/{run}", response_model=RunDetailOut)
def get_run(principal: Admin, backups: Backups, run: RunId) -> RunDetailOut:
    """A run: its status, its archive's size and checksum, and its log."""
    return RunDetailOut.model_validate(backups.get_run(run))


@router.get(
    "/{run}/download",
    response_class=FileResponse,
    responses={200: {"content": {"application/octet-stream": {}}, "description": "The archive"}},
)
def download(principal: Admin, backups: Backups, run: RunId) -> FileResponse:
    """The run's archive as stored (encrypted): fetched from its destination first when
    that is not this machine. 404 when the run made none, or it is gone."""
    fetched = backups.fetch(run)
    return FileResponse(
        fetched.path,
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": attachment(fetched.name),
            "Cache-Control": "private, no-store",
        },
        background=BackgroundTask(fetched.release),
    )


@router.post("/{run}/verify", response_model=VerifyOut)
def verify(principal: Admin, backups: Backups, run: RunId) -> VerifyOut:
    """Check the run's archive without restoring it: its checksum, every encrypted
    segment, the manifest, and every file's hash. ``ok`` false lists the problems."""
    return VerifyOut.of(backups.verify(run))


@router.post("/{run}/restore", response_model=RestoreOut)
def restore(
    principal: Restorer,
    server: ServerDep,
    run: RunId,
    body: Annotated[RestoreIn | None, Body()] = None,
) -> RestoreOut:
    """Replace the catalog, files and vectors with the run's backup, after verifying it
    and making a safety backup of what it replaces; all or nothing. The server answers
    nothing else meanwhile (503; ``/api/backups/restore/status`` says how far it is).
    400 unless ``confirm`` is true. Needs a password login."""
    if body is None or not body.confirm:
        raise InvalidInput(
            "a restore replaces every document, chat, user and setting with the backup's: "
            'send {"confirm": true} to go ahead',
            code="confirm_required",
        )
    return RestoreOut.of(restore_backup(server, run))
