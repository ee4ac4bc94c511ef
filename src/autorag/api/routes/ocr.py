"""OCR over HTTP: a workspace's OCR jobs with their per-page results, the review of
results below the quality bar, and the vision prompt's custom instructions.

Reading needs ``documents:read``; approving, rejecting and changing the instructions
need ``workspaces:write`` (managers and admins). Approving indexes the text at once.
The workspace's OCR settings (engine or off, languages, vision model) are read as the
instructions are, and changed as they are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import PoolDep, WorkspaceDep
from autorag.config import OcrSettings
from autorag.context import AppContext
from autorag.ocr import options, service, store
from autorag.workspace_settings import read_settings, update_settings

router = APIRouter(prefix="/api/workspaces/{workspace}/ocr", tags=["ocr"])
ReadDep = Annotated[Principal, Depends(require("documents:read"))]
ReviewDep = Annotated[Principal, Depends(require("workspaces:write"))]
MAX_ID = 2**62
JobId = Annotated[int, Path(ge=1, le=MAX_ID, description="OCR job id")]


class OcrPageOut(BaseModel):
    page: int
    status: str  # queued | done | low | blank | failed | skipped
    engine: str | None
    confidence: float | None
    credibility: float | None
    chars: int
    rotation: int  # degrees the page was turned to be read
    reason: str | None
    text: str


class OcrJobOut(BaseModel):
    id: int
    documentId: int
    title: str
    sourceId: str
    mode: str  # auto | vision
    status: store.JobStatus
    engine: str | None
    pagesDone: int
    pagesTotal: int
    quality: float | None  # engine confidence, 0..1
    credibility: float | None  # word-likeness of the text, 0..1
    reason: str | None
    reviewedBy: str | None
    reviewedAt: datetime | None
    createdAt: datetime
    updatedAt: datetime


class OcrJobDetailOut(OcrJobOut):
    pages: list[OcrPageOut]


class OcrJobListOut(BaseModel):
    items: list[OcrJobOut]
    total: int
    limit: int
    offset: int


class InstructionsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: str = Field(max_length=4000, description="Added to the vision OCR prompt")


class InstructionsOut(BaseModel):
    instructions: str


class OcrSettingsIn(BaseModel):
    """Each key given replaces the workspace's choice; null: the server's setting."""

    model_config = ConfigDict(extra="forbid")

    engine: str | None = Field(
        default=None, max_length=20, description="auto, rapidocr, tesseract, vision or off"
    )
    languages: list[Annotated[str, Field(max_length=20)]] | None = Field(
        default=None, max_length=options.MAX_LANGUAGES, description="Tesseract codes: eng, deu"
    )
    visionModel: str | None = Field(
        default=None, max_length=300, description="provider/model of a configured provider"
    )


class OcrServerOut(BaseModel):
    """The server's own ``[ocr]`` settings, which the workspace's choices override."""

    enabled: bool
    engine: str
    languages: list[str]
    visionModel: str | None
    visionAllowHosted: bool


class OcrSettingsOut(BaseModel):
    engine: str | None  # the workspace's choice; null: the server's
    languages: list[str] | None
    visionModel: str | None
    effective: OcrServerOut  # what the workspace's scans are read with
    server: OcrServerOut
    engines: list[str]  # the choices for engine
    installedLanguages: list[str]  # Tesseract's, on this server


def _job(job: store.OcrJob) -> OcrJobOut:
    return OcrJobOut(
        id=job.id,
        documentId=job.document_id,
        title=job.title,
        sourceId=job.source_id,
        mode=job.mode,
        status=job.status,
        engine=job.engine,
        pagesDone=job.pages_done,
        pagesTotal=job.pages_total,
        quality=job.quality,
        credibility=job.credibility,
        reason=job.reason,
        reviewedBy=job.reviewed_by,
        reviewedAt=job.reviewed_at,
        createdAt=job.created_at,
        updatedAt=job.updated_at,
    )


def _detail(context: AppContext, job: store.OcrJob) -> OcrJobDetailOut:
    pages = [
        OcrPageOut(
            page=p.page,
            status=p.status,
            engine=p.engine,
            confidence=p.confidence,
            credibility=p.credibility,
            chars=p.chars,
            rotation=p.rotation,
            reason=p.reason,
            text=p.text,
        )
        for p in store.pages(context.catalog.engine, job.id)
    ]
    return OcrJobDetailOut(**_job(job).model_dump(), pages=pages)


@router.get("/jobs", response_model=OcrJobListOut)
def list_jobs(
    _: ReadDep,
    context: WorkspaceDep,
    status: Annotated[store.JobStatus | None, Query(description="Only this status")] = None,
    document_id: Annotated[
        int | None, Query(alias="documentId", ge=1, le=MAX_ID, description="Only this document")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> OcrJobListOut:
    """The workspace's OCR jobs, newest first; ``status=review`` lists those waiting for
    an approval."""
    jobs, total = store.list_jobs(
        context.catalog.engine,
        context.info.id,
        status=status,
        document_id=document_id,
        limit=limit,
        offset=offset,
    )
    return OcrJobListOut(items=[_job(j) for j in jobs], total=total, limit=limit, offset=offset)


@router.get("/jobs/{job_id}", response_model=OcrJobDetailOut)
def get_job(_: ReadDep, context: WorkspaceDep, job_id: JobId) -> OcrJobDetailOut:
    """One OCR job: progress, scores and every page's status, scores and text."""
    return _detail(
        context, store.get_job(context.catalog.engine, job_id, workspace_id=context.info.id)
    )


@router.post("/jobs/{job_id}/approve", response_model=OcrJobDetailOut)
def approve_job(
    principal: ReviewDep, pool: PoolDep, context: WorkspaceDep, job_id: JobId
) -> OcrJobDetailOut:
    """Index the text of a job waiting for review (409 unless it waits)."""
    job = service.approve(
        context,
        job_id,
        reviewer=principal.username,
        user_id=principal.user_id,
        indexer=context.indexer,
        # Exclusive: the pool's workers write this workspace's vectors through their own
        # handle, as a delete does.
        guard=pool.locks(context.info.id).exclusive,
    )
    return _detail(context, job)


@router.post("/jobs/{job_id}/reject", response_model=OcrJobDetailOut)
def reject_job(principal: ReviewDep, context: WorkspaceDep, job_id: JobId) -> OcrJobDetailOut:
    """Drop the text of a job waiting for review: it is never indexed (409 unless it
    waits)."""
    job = service.reject(context, job_id, reviewer=principal.username, user_id=principal.user_id)
    return _detail(context, job)


@router.get("/instructions", response_model=InstructionsOut)
def get_instructions(_: ReadDep, context: WorkspaceDep) -> InstructionsOut:
    """The workspace's custom instructions for the vision OCR prompt."""
    return InstructionsOut(
        instructions=read_settings(context.catalog, context.info).ocr_instructions
    )


@router.put("/instructions", response_model=InstructionsOut)
def set_instructions(_: ReviewDep, context: WorkspaceDep, body: InstructionsIn) -> InstructionsOut:
    """Replace the custom instructions added to the vision OCR prompt."""
    changes = {"ocr_instructions": body.instructions}
    settings = update_settings(context.catalog, context.info, changes)
    return InstructionsOut(instructions=settings.ocr_instructions)


def _ocr_out(settings: OcrSettings) -> OcrServerOut:
    vision = None
    if settings.vision_provider and settings.vision_model:
        vision = f"{settings.vision_provider}/{settings.vision_model}"
    return OcrServerOut(
        enabled=settings.enabled,
        engine=settings.engine,
        languages=list(settings.languages),
        visionModel=vision,
        visionAllowHosted=settings.vision_allow_hosted,
    )


def _settings_out(context: AppContext, choice: options.OcrChoice) -> OcrSettingsOut:
    server = context.settings.ocr
    return OcrSettingsOut(
        engine=choice.engine,
        languages=choice.languages,
        visionModel=choice.vision_model,
        effective=_ocr_out(options.effective(server, choice)),
        server=_ocr_out(server),
        engines=list(options.ENGINE_CHOICES),
        installedLanguages=list(options.installed_languages()),
    )


@router.get("/settings", response_model=OcrSettingsOut)
def get_ocr_settings(_: ReadDep, context: WorkspaceDep) -> OcrSettingsOut:
    """The workspace's OCR engine, languages and vision model, and what they override."""
    choice = options.choice_of(read_settings(context.catalog, context.info))
    return _settings_out(context, choice)


@router.patch("/settings", response_model=OcrSettingsOut)
def set_ocr_settings(_: ReviewDep, context: WorkspaceDep, body: OcrSettingsIn) -> OcrSettingsOut:
    """Change the workspace's OCR choices (the keys given; null: back to the server's).
    An unknown engine or language code, or a vision model no configured provider serves,
    is refused (400); so is a hosted one unless the server allows page images out."""
    current = options.choice_of(read_settings(context.catalog, context.info))
    given = body.model_fields_set
    choice = options.check_choice(
        options.OcrChoice(
            body.engine if "engine" in given else current.engine,
            body.languages if "languages" in given else current.languages,
            body.visionModel if "visionModel" in given else current.vision_model,
        ),
        context.settings.ocr,
        context.settings.llm,
    )
    changes = {
        "ocr_engine": choice.engine,
        "ocr_languages": choice.languages,
        "ocr_vision_model": choice.vision_model,
    }
    settings = update_settings(context.catalog, context.info, changes)
    return _settings_out(context, options.choice_of(settings))
