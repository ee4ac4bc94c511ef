"""System maintenance over HTTP: re-index every workspace after an embedding model
change (Settings → Maintenance; ``autorag.ops.reindex``).

Starting a run rebuilds the vectors of every workspace, so it needs an admin confined to
no workspace (``workspaces:admin`` in all of them, as the per-workspace re-embed needs
it in one) and, as heavy work over everything, a password login or an API key with the
``admin:protection`` scope. Its progress is read by the same admins, API keys included.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep, PoolDep
from autorag.ops import reindex

router = APIRouter(prefix="/api/system", tags=["system"])
StartDep = Annotated[
    Principal, Depends(require("workspaces:admin", every_workspace=True, protection=True))
]
ReadDep = Annotated[Principal, Depends(require("workspaces:admin", every_workspace=True))]


class WorkspaceProgressOut(BaseModel):
    workspace: str
    hidden: bool  # an archive's index rather than a workspace people use
    jobId: int
    status: str  # queued | running | done | failed | gone
    chunks: int
    error: str | None
    finishedAt: datetime | None


class ReindexRunOut(BaseModel):
    id: str
    status: str  # running | done | failed
    model: str  # the embedding model the vectors are rebuilt with
    startedAt: datetime
    startedBy: str | None
    done: int  # workspaces finished (or deleted meanwhile)
    failed: int
    total: int
    workspaces: list[WorkspaceProgressOut]


class ReindexStateOut(BaseModel):
    run: ReindexRunOut | None  # the last run started; null before the first


class ReindexStartedOut(BaseModel):
    id: str  # the run's id
    total: int  # workspaces queued


def _run(run: reindex.ReindexRun) -> ReindexRunOut:
    return ReindexRunOut(
        id=run.id,
        status=run.status,
        model=run.model,
        startedAt=run.started_at,
        startedBy=run.started_by,
        done=run.done,
        failed=run.failed,
        total=run.total,
        workspaces=[
            WorkspaceProgressOut(
                workspace=w.workspace,
                hidden=w.hidden,
                jobId=w.job_id,
                status=w.status,
                chunks=w.chunks,
                error=w.error,
                finishedAt=w.finished_at,
            )
            for w in run.workspaces
        ],
    )


@router.post("/reindex-documents", status_code=202, response_model=ReindexStartedOut)
def start_reindex(principal: StartDep, context: AppDep, pool: PoolDep) -> ReindexStartedOut:
    """Re-embed every workspace with the configured embedding model, in the background
    (search keeps answering from the old vectors until each workspace's swap). 409 while
    a re-index, or one workspace's re-embed, is under way."""
    embedding = context.settings.embedding
    run_id = reindex.start_reindex(
        context.catalog,
        model=f"{embedding.provider}:{embedding.model}",
        started_by=principal.username,
    )
    run = reindex.latest_run(context.catalog)
    total = run.total if run else 0
    pool.notify(max(total, 1))
    return ReindexStartedOut(id=run_id, total=total)


@router.get("/reindex-documents", response_model=ReindexStateOut)
def reindex_progress(_: ReadDep, context: AppDep) -> ReindexStateOut:
    """The last re-index: each workspace's job status, chunks and error."""
    run = reindex.latest_run(context.catalog)
    return ReindexStateOut(run=_run(run) if run else None)
