"""The agent around a chat: the workspace's agent config and skills, the workspace's
memory, files attached to one chat, and each user's own instructions."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, PrincipalDep, require
from autorag.api.deps import AppDep, ChatServiceDep, PoolDep, WorkspaceDep
from autorag.api.multipart import receive_upload
from autorag.api.routes.chat import ChatId
from autorag.api.routes.documents import MAX_ID
from autorag.auth.service import custom_instructions, set_custom_instructions
from autorag.chat import attachments, memory, store
from autorag.context import AppContext
from autorag.errors import InvalidInput, NotFound
from autorag.workspace_settings import AgentConfig, read_settings, update_settings

router = APIRouter(tags=["agent"])
WS = "/api/workspaces/{workspace}"
ChatUse = Annotated[Principal, Depends(require("chat:use"))]
WorkspaceWrite = Annotated[Principal, Depends(require("workspaces:write"))]
MemoryKey = Annotated[str, Path(min_length=1, max_length=200)]


class AgentConfigIO(BaseModel):
    """The workspace's agent configuration; in a PATCH only the keys given change."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    enabled_skills: list[str] | None = Field(default=None, alias="enabledSkills", max_length=50)
    system_prompt: str | None = Field(default=None, alias="systemPrompt", max_length=20_000)
    plan_mode: bool | None = Field(default=None, alias="planMode")
    default_model: str | None = Field(default=None, alias="defaultModel", max_length=300)
    local_llm_only: bool | None = Field(default=None, alias="localLLMOnly")
    hybrid_search_forced: bool | None = Field(default=None, alias="hybridSearchForced")
    citation_required: bool | None = Field(default=None, alias="citationRequired")


class SkillOut(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]
    enabled: bool


class MemoryOut(BaseModel):
    key: str
    value: str
    updatedAt: datetime


class MemoryPut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: str = Field(max_length=8192)


class AttachmentOut(BaseModel):
    id: int
    name: str
    type: str
    size: int
    status: str  # processing (being read) | ready (searchable in its chat) | failed
    reason: str | None  # stable code when failed: corrupt, needs_ocr, payload_too_large, …
    message: str | None  # why it failed, in words
    chunks: int
    createdAt: datetime


class InstructionsIO(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instructions: str = Field(max_length=4000)


# -- agent config and skills -----------------------------------------------------------------
@router.get(WS + "/agent", response_model=AgentConfigIO, response_model_by_alias=True)
def get_agent_config(
    principal: Annotated[Principal, Depends(require("documents:read"))], context: WorkspaceDep
) -> AgentConfigIO:
    return _config_out(read_settings(context.catalog, context.info).agent)


@router.patch(WS + "/agent", response_model=AgentConfigIO, response_model_by_alias=True)
def patch_agent_config(
    principal: WorkspaceWrite, body: AgentConfigIO, context: WorkspaceDep, service: ChatServiceDep
) -> AgentConfigIO:
    """Enabled skills, system prompt template ({workspace}, {date}, {skills}), plan mode,
    default model and the constraints localLLMOnly, hybridSearchForced, citationRequired."""
    current = read_settings(context.catalog, context.info).agent
    # null clears the default model; for the other keys it means "unchanged".
    changes = {
        key: value
        for key, value in body.model_dump(exclude_unset=True).items()
        if value is not None or key == "default_model"
    }
    merged = AgentConfig.model_validate({**current.model_dump(), **changes})
    unknown = sorted(set(merged.enabled_skills) - set(service.skills))
    if unknown:
        known = ", ".join(sorted(service.skills))
        raise InvalidInput(f"unknown skill {', '.join(unknown)} (known: {known})")
    if merged.default_model:
        service.router.check_choice(merged.default_model, local_only=merged.local_llm_only)
    saved = update_settings(context.catalog, context.info, {"agent": merged.model_dump()})
    return _config_out(saved.agent)


def _config_out(config: AgentConfig) -> AgentConfigIO:
    return AgentConfigIO.model_validate(config.model_dump())


@router.get(WS + "/skills", response_model=list[SkillOut])
def list_skills(
    principal: ChatUse, context: WorkspaceDep, service: ChatServiceDep
) -> list[SkillOut]:
    """Every skill with its JSON schema, and whether this workspace enables it."""
    enabled = set(read_settings(context.catalog, context.info).agent.enabled_skills)
    return [
        SkillOut(
            name=name,
            description=skill.spec.description,
            parameters=dict(skill.spec.parameters),
            enabled=name in enabled,
        )
        for name, skill in sorted(service.skills.items())
    ]


# -- workspace memory --------------------------------------------------------------------------
@router.get(WS + "/memory", response_model=list[MemoryOut])
def list_memory(principal: ChatUse, context: WorkspaceDep) -> list[MemoryOut]:
    """What the agent remembers in this workspace (skill ``workspace_memory``)."""
    return [_memory(e) for e in memory.list_memory(context.catalog, context.info.id)]


@router.put(WS + "/memory/{key}", response_model=MemoryOut)
def put_memory(
    principal: WorkspaceWrite, key: MemoryKey, body: MemoryPut, context: WorkspaceDep
) -> MemoryOut:
    return _memory(memory.set_memory(context.catalog, context.info.id, key, body.value))


@router.delete(WS + "/memory/{key}", status_code=204, response_class=Response)
def delete_memory(principal: WorkspaceWrite, key: MemoryKey, context: WorkspaceDep) -> None:
    if not memory.delete_memory(context.catalog, context.info.id, key):
        raise NotFound(f"no memory {key!r}")


def _memory(entry: memory.MemoryEntry) -> MemoryOut:
    return MemoryOut(key=entry.key, value=entry.value, updatedAt=entry.updated_at)


# -- chat attachments ----------------------------------------------------------------------------
@router.post(WS + "/chats/{chatId}/attachments", status_code=202, response_model=AttachmentOut)
async def attach(
    principal: ChatUse, chat_id: ChatId, request: Request, context: WorkspaceDep, pool: PoolDep
) -> AttachmentOut:
    """Attach a file (``multipart/form-data``, field ``file``) to this chat only, never
    indexed. 202 with the attachment ``processing``: a background job reads it, then it
    is ``ready`` (searchable by the agent here, skill ``document_temp_process``) or
    ``failed`` with the reason; poll ``GET …/attachments/{attachmentId}``."""
    await run_in_threadpool(_own_chat, context, principal, chat_id)
    limit = int(context.settings.server.max_upload_mb * 1024**2)
    received = await receive_upload(request, context.workspace.incoming_uploads_dir, limit)
    info = await run_in_threadpool(
        attachments.receive_attachment, context, chat_id, received.filename, received.path
    )
    pool.notify()
    return _attachment(info)


@router.get(WS + "/chats/{chatId}/attachments", response_model=list[AttachmentOut])
def list_attachments(
    principal: ChatUse, chat_id: ChatId, context: WorkspaceDep
) -> list[AttachmentOut]:
    _own_chat(context, principal, chat_id)
    return [_attachment(a) for a in attachments.list_attachments(context, chat_id)]


AttachmentId = Annotated[int, Path(alias="attachmentId", ge=1, le=MAX_ID)]


@router.get(WS + "/chats/{chatId}/attachments/{attachmentId}", response_model=AttachmentOut)
def get_attachment(
    principal: ChatUse, chat_id: ChatId, attachment_id: AttachmentId, context: WorkspaceDep
) -> AttachmentOut:
    """One attachment: its status (``processing``, ``ready`` or ``failed``) and size."""
    _own_chat(context, principal, chat_id)
    return _attachment(attachments.get_attachment(context, chat_id, attachment_id))


@router.delete(
    WS + "/chats/{chatId}/attachments/{attachmentId}", status_code=204, response_class=Response
)
def delete_attachment(
    principal: ChatUse,
    chat_id: ChatId,
    attachment_id: AttachmentId,
    context: WorkspaceDep,
) -> None:
    _own_chat(context, principal, chat_id)
    attachments.delete_attachment(context, chat_id, attachment_id)


def _own_chat(context: AppContext, principal: Principal, chat_id: int) -> None:
    store.get_chat(context.catalog.engine, context.info.id, chat_id, principal.user_id)


def _attachment(info: attachments.AttachmentInfo) -> AttachmentOut:
    return AttachmentOut(
        id=info.id,
        name=info.name,
        type=info.doc_type,
        size=info.size,
        status=info.status,
        reason=info.error_code,
        message=info.error,
        chunks=info.chunks,
        createdAt=info.created_at,
    )


# -- the user's own instructions -----------------------------------------------------------------
@router.get("/api/auth/me/instructions", response_model=InstructionsIO)
def get_instructions(principal: PrincipalDep, context: AppDep) -> InstructionsIO:
    """Instructions the agent follows in all of your chats."""
    return InstructionsIO(instructions=custom_instructions(context.catalog, principal.user_id))


@router.put("/api/auth/me/instructions", response_model=InstructionsIO)
def put_instructions(
    principal: PrincipalDep, body: InstructionsIO, context: AppDep
) -> InstructionsIO:
    text = set_custom_instructions(context.catalog, principal.user_id, body.instructions)
    return InstructionsIO(instructions=text)
