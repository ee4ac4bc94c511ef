"""Workspaces: create, list, get, rename, delete; per-workspace settings."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from autorag import workspace_settings
from autorag.api.auth import Principal, require, require_protection
from autorag.api.deps import AppDep, PoolDep, WorkspaceDep
from autorag.ops import workspaces as ws
from autorag.times import as_utc
from autorag.workspace_settings import WorkspaceSettings, read_settings

router = APIRouter(prefix="/api/workspaces", tags=["workspaces"])

WorkspaceName = Annotated[
    str,
    Field(
        pattern=ws.NAME_PATTERN,
        description="Lowercase letters, digits, '-' and '_'; up to 63 characters",
    ),
]


class WorkspaceCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: WorkspaceName


class WorkspaceRename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: WorkspaceName


class SettingsOut(BaseModel):
    defaultK: int
    redactOnIngest: bool


class SettingsPatch(BaseModel):
    """Only the keys given change."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    default_k: int | None = Field(default=None, alias="defaultK", ge=1, le=200)
    redact_on_ingest: bool | None = Field(default=None, alias="redactOnIngest")


class WorkspaceOut(BaseModel):
    name: str
    createdAt: datetime
    documents: int
    settings: SettingsOut


class WorkspaceListOut(BaseModel):
    workspaces: list[WorkspaceOut]


def _settings(settings: WorkspaceSettings) -> SettingsOut:
    return SettingsOut(defaultK=settings.default_k, redactOnIngest=settings.redact_on_ingest)


def _workspace(summary: ws.WorkspaceSummary) -> WorkspaceOut:
    return WorkspaceOut(
        name=summary.info.name,
        createdAt=as_utc(summary.created_at),
        documents=summary.documents,
        settings=_settings(summary.settings),
    )


@router.get("", response_model=WorkspaceListOut)
def list_workspaces(
    principal: Annotated[Principal, Depends(require("documents:read"))], context: AppDep
) -> WorkspaceListOut:
    """The workspaces the caller may read."""
    visible = [
        s
        for s in ws.list_workspaces(context.catalog)
        if principal.can("documents:read", s.info.name)
    ]
    return WorkspaceListOut(workspaces=[_workspace(s) for s in visible])


@router.post("", status_code=201, response_model=WorkspaceOut)
def create_workspace(
    principal: Annotated[Principal, Depends(require("workspaces:admin", every_workspace=True))],
    body: WorkspaceCreate,
    context: AppDep,
) -> WorkspaceOut:
    """Create an empty workspace (409 if the name is taken)."""
    info = ws.create_workspace(context.catalog, body.name)
    return _workspace(ws.describe_workspace(context.catalog, info.name))


@router.get("/{workspace}", response_model=WorkspaceOut)
def get_workspace(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
) -> WorkspaceOut:
    return _workspace(ws.describe_workspace(context.catalog, context.info.name))


@router.patch("/{workspace}", response_model=WorkspaceOut)
def rename_workspace(
    principal: Annotated[Principal, Depends(require("workspaces:admin"))],
    body: WorkspaceRename,
    root: AppDep,
    context: WorkspaceDep,
    pool: PoolDep,
) -> WorkspaceOut:
    """Rename a workspace; its documents, vectors and uploads follow. The workspace the
    server's configuration names cannot be renamed (409)."""
    with pool.locks(context.info.id).exclusive():
        info = ws.rename_workspace(
            context, body.name, protected=root.settings.workspace, this_process=pool.identity
        )
        pool.forget(info.id)
    return _workspace(ws.describe_workspace(root.catalog, info.name))


@router.delete("/{workspace}", status_code=204, response_class=Response)
def delete_workspace(
    principal: Annotated[Principal, Depends(require("workspaces:admin", protection=True))],
    root: AppDep,
    context: WorkspaceDep,
    pool: PoolDep,
) -> Response:
    """Delete a workspace with its documents, full-text rows, vectors and uploads (a
    password login, or an API key with the admin:protection scope)."""
    with pool.locks(context.info.id).exclusive():
        ws.delete_workspace(context, protected=root.settings.workspace, this_process=pool.identity)
        pool.forget(context.info.id)
    return Response(status_code=204)


@router.get("/{workspace}/settings", response_model=SettingsOut)
def get_settings(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
) -> SettingsOut:
    return _settings(read_settings(context.catalog, context.info))


@router.patch("/{workspace}/settings", response_model=SettingsOut)
def update_settings(
    principal: Annotated[Principal, Depends(require("workspaces:write"))],
    body: SettingsPatch,
    context: WorkspaceDep,
) -> SettingsOut:
    """Change some settings; the others keep their values. Turning redaction on ingest
    off needs a password login or an API key with the admin:protection scope."""
    if body.redact_on_ingest is False:
        require_protection(principal, "turning redactOnIngest off")
    changes = body.model_dump(exclude_unset=True, exclude_none=True)
    return _settings(workspace_settings.update_settings(context.catalog, context.info, changes))
