"""Chat: answers streamed as server-sent events or returned whole; chats and messages.

SSE events, in order: ``plan`` (plan mode), ``status`` (skills running, fallbacks),
``wiki_edit`` (an archive page edit the agent proposed or made: {archiveId, archive, path,
action, diff, applied, title, body, baseVersion}; not applied, the client applies it with
a PUT of the page at that base version), ``token`` (answer text), ``citations``
({sources}), then ``done`` ({chatId, messageId, answer, cited, modelUsed, providerUsed,
abortReason, …}) or ``error`` ({code, message, status}). Sources are numbered 1..n in the
order the answer first cites them (the ``[n]`` in the tokens already are); those it does
not cite follow with ``cited: false``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from autorag.agent.events import (
    AgentEvent,
    CitationsEvent,
    PlanEvent,
    StatusEvent,
    TokenEvent,
    WikiEditEvent,
    ignore,
)
from autorag.api.auth import Principal, require
from autorag.api.deps import ChatServiceDep, WorkspaceDep
from autorag.api.redaction import workspace_dlp
from autorag.api.routes.documents import MAX_ID
from autorag.api.sse import HEADERS, MEDIA_TYPE, ThreadedStream, sse
from autorag.auth.service import custom_instructions
from autorag.chat import store
from autorag.chat.service import ChatOutcome, ChatTurn, ChatUser
from autorag.context import AppContext
from autorag.dlp.service import DlpSession
from autorag.errors import AutoragError
from autorag.mcp_tools.models import McpSource
from autorag.models import Citation
from autorag.retrieval.filters import build_filters
from autorag.retrieval.grounding import is_archive_page
from autorag.text import one_line
from autorag.wiki.skills import parse_page_source_id
from autorag.wiki.store import archive_names
from autorag.youtube.urls import citation_link

router = APIRouter(prefix="/api/workspaces/{workspace}", tags=["chat"])
ChatPrincipal = Annotated[Principal, Depends(require("chat:use"))]
ChatId = Annotated[int, Path(alias="chatId", ge=1, le=MAX_ID)]
SNIPPET_CHARS = 600


class ChatBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    message: str = Field(min_length=1, max_length=20_000)
    chat_id: int | None = Field(default=None, alias="chatId", ge=1, le=MAX_ID)
    model: str | None = Field(default=None, max_length=300, description="provider/model")
    document_types: list[str] = Field(default_factory=list, alias="documentTypes", max_length=8)
    date_from: str | None = Field(default=None, alias="dateFrom", max_length=40)
    date_to: str | None = Field(default=None, alias="dateTo", max_length=40)
    plan_mode: bool | None = Field(default=None, alias="planMode")


class SourceOut(BaseModel):
    number: int
    source: str
    sourceId: str
    title: str
    snippet: str
    page: int | None
    paragraph: int
    score: float
    match: str  # semantic+keyword | vector | fts
    documentId: int  # 0: no document of this workspace (an archive page, a peer's)
    chunkId: int
    url: str | None  # the document in this API, when it is a workspace document
    archive: str | None = None  # an archive page's archive (its name) …
    pagePath: str | None = None  # … and the page's path there
    peer: str | None = None  # the trusted peer it came from (peer_search)
    section: str | None = None  # the heading the passage sits under (Markdown)
    cited: bool = True  # the answer cites it; false: one of the "more sources"
    # Where the passage is outside AutoRAG: a YouTube video at the passage's second.
    link: str | None = None


class UsageOut(BaseModel):
    promptTokens: int
    completionTokens: int


class AnswerOut(BaseModel):
    chatId: int | None
    messageId: int | None
    answer: str
    sources: list[SourceOut]
    plan: str | None
    modelUsed: str
    providerUsed: str
    requestedModel: str | None
    fallbackReason: str | None
    abortReason: str
    usage: UsageOut
    dlp_warning: bool  # something was redacted (the seed's name, as in the SSE done event)


class ChatOut(BaseModel):
    id: int
    title: str
    model: str | None
    messages: int
    createdAt: datetime
    updatedAt: datetime


class MessageOut(BaseModel):
    id: int
    role: str
    content: str
    sources: list[SourceOut]
    plan: str | None
    modelUsed: str | None
    providerUsed: str | None
    abortReason: str | None
    usage: UsageOut
    createdAt: datetime


class ChatDetailOut(ChatOut):
    messageList: list[MessageOut]


class ModelPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(max_length=300, description="provider/model; null: defaults")


class TitlePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200)


ChatDlp = Annotated[DlpSession, Depends(workspace_dlp("chat"))]


# -- answering -----------------------------------------------------------------------------
@router.post(
    "/chat/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {MEDIA_TYPE: {}}, "description": "Server-sent events"}},
)
async def chat_stream(
    principal: ChatPrincipal,
    body: ChatBody,
    context: WorkspaceDep,
    service: ChatServiceDep,
    dlp: ChatDlp,
) -> StreamingResponse:
    """Answer with server-sent events. Closing the connection stops the answer."""
    turn, user = _turn(body), await run_in_threadpool(_user, context, principal)
    prepared = await run_in_threadpool(service.prepare, context, turn, user=user, dlp=dlp)
    stream: ThreadedStream[AgentEvent, ChatOutcome] = ThreadedStream(prepared.run)

    async def events() -> Any:
        async for event, outcome, error in stream.items():
            if event is not None:
                yield _event(context, event)
            elif error is not None:
                yield sse("error", _error(error))
            elif outcome is not None:
                yield sse("done", _done(outcome))

    return StreamingResponse(events(), media_type=MEDIA_TYPE, headers=HEADERS)


@router.post("/chat", response_model=AnswerOut)
async def chat(
    principal: ChatPrincipal,
    body: ChatBody,
    context: WorkspaceDep,
    service: ChatServiceDep,
    dlp: ChatDlp,
) -> AnswerOut:
    """Answer in one response (the same run as the stream, collected)."""
    turn = _turn(body, receives_events=False)  # a proposed page edit would be dropped
    user = await run_in_threadpool(_user, context, principal)
    prepared = await run_in_threadpool(service.prepare, context, turn, user=user, dlp=dlp)
    outcome = await run_in_threadpool(prepared.run, ignore)
    return answer_out(context, outcome)


def _turn(body: ChatBody, *, receives_events: bool = True) -> ChatTurn:
    filters = build_filters(body.document_types, body.date_from, body.date_to)
    return ChatTurn(
        body.message, body.chat_id, body.model, filters, body.plan_mode,
        receives_events=receives_events,
    )  # fmt: skip


def _user(context: AppContext, principal: Principal) -> ChatUser:
    return ChatUser(principal.user_id, custom_instructions(context.catalog, principal.user_id))


def _event(context: AppContext, event: AgentEvent) -> str:
    if isinstance(event, TokenEvent):
        return sse("token", {"text": event.text})
    if isinstance(event, StatusEvent):
        return sse("status", {"message": event.message, "skill": event.skill})
    if isinstance(event, PlanEvent):
        return sse("plan", {"plan": event.plan})
    if isinstance(event, WikiEditEvent):
        return sse("wiki_edit", wiki_edit_data(event))
    assert isinstance(event, CitationsEvent)
    sources = [s.model_dump() for s in sources_out(context, event.citations)]
    return sse("citations", {"sources": sources})


def wiki_edit_data(event: WikiEditEvent) -> dict[str, Any]:
    return {
        "archiveId": event.archive_id,
        "archive": event.archive,
        "path": event.path,
        "action": event.action,
        "diff": event.diff,
        "applied": event.applied,
        "title": event.title,
        "body": event.body,
        "baseVersion": event.base_version,
    }


def _done(outcome: ChatOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "chatId": outcome.chat_id,
        "messageId": outcome.message_id,
        "answer": result.text,  # as streamed, markers numbered as the sources are
        "cited": [c.number for c in result.citations if c.cited],
        "modelUsed": result.model_used,
        "providerUsed": result.provider_used,
        "requestedModel": result.requested_model,
        "fallbackReason": result.fallback_reason,
        "abortReason": result.abort_reason,
        "usage": _usage(result.usage.prompt_tokens, result.usage.completion_tokens).model_dump(),
        "dlp_warning": outcome.dlp_warning,  # the seed's name
        "mcpSources": [mcp_source_data(s) for s in outcome.mcp_sources],
    }


def mcp_source_data(source: McpSource) -> dict[str, Any]:
    """One source an installed MCP tool gave (the seed's ``done.mcpSources``)."""
    return {
        "server": source.server,
        "tool": source.tool,
        "uri": source.uri,
        "title": source.title,
        "number": source.number,
        "cited": source.cited,
    }


def _error(error: BaseException) -> dict[str, Any]:
    if isinstance(error, AutoragError):
        return {"code": error.code, "message": error.message, "status": error.status}
    return {"code": "internal_error", "message": "the answer failed", "status": 500}


def sources_out(context: AppContext, citations: Sequence[Citation]) -> list[SourceOut]:
    """``source_out`` of each, the archives' names read at once."""
    names = _archive_names(context, citations)
    return [source_out(context, c, names) for c in citations]


def source_out(
    context: AppContext, citation: Citation, archives: Mapping[int, str] | None = None
) -> SourceOut:
    """A source as sent. An archive page links to no document (its ids are those of the
    archive's hidden index) but names its archive and path, when the archive exists."""
    snippet = one_line(citation.text, SNIPPET_CHARS)
    url = None
    archive_page = is_archive_page(citation)
    if citation.document_id > 0 and not archive_page:  # not this workspace's
        url = f"/api/workspaces/{context.info.name}/documents/{citation.document_id}"
    page = parse_page_source_id(citation.source_id) if archive_page else None
    if page is not None and archives is None:
        archives = _archive_names(context, [citation])
    archive = archives.get(page[0]) if page is not None and archives is not None else None
    return SourceOut(
        number=citation.number,
        source=citation.source,
        sourceId=citation.source_id,
        title=citation.title,
        snippet=snippet,
        page=citation.page,
        paragraph=citation.paragraph,
        score=citation.score,
        match={"both": "semantic+keyword"}.get(citation.legs, citation.legs),
        documentId=0 if archive_page else citation.document_id,
        chunkId=0 if archive_page else citation.chunk_id,
        url=url,
        archive=archive,
        pagePath=page[1] if page is not None and archive is not None else None,
        peer=citation.peer,
        section=citation.section,
        cited=citation.cited,
        link=citation_link(citation.source_id, citation.text),
    )


def _archive_names(context: AppContext, citations: Sequence[Citation]) -> dict[int, str]:
    pages = [parse_page_source_id(c.source_id) for c in citations if is_archive_page(c)]
    ids = [page[0] for page in pages if page is not None]
    return archive_names(context.catalog.engine, context.info.id, ids) if ids else {}


def answer_out(context: AppContext, outcome: ChatOutcome) -> AnswerOut:
    result = outcome.result
    return AnswerOut(
        chatId=outcome.chat_id,
        messageId=outcome.message_id,
        answer=result.text,
        sources=sources_out(context, result.citations),
        plan=result.plan,
        modelUsed=result.model_used,
        providerUsed=result.provider_used,
        requestedModel=result.requested_model,
        fallbackReason=result.fallback_reason,
        abortReason=result.abort_reason,
        usage=_usage(result.usage.prompt_tokens, result.usage.completion_tokens),
        dlp_warning=outcome.dlp_warning,
    )


def _usage(prompt: int, completion: int) -> UsageOut:
    return UsageOut(promptTokens=prompt, completionTokens=completion)


# -- chats -----------------------------------------------------------------------------------
@router.get("/chats", response_model=list[ChatOut])
def list_chats(
    principal: ChatPrincipal,
    context: WorkspaceDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> list[ChatOut]:
    """Your chats in this workspace, most recent first."""
    chats = store.list_chats(
        context.catalog.engine, context.info.id, principal.user_id, limit=limit, offset=offset
    )
    return [_chat(c) for c in chats]


@router.get("/chats/{chatId}", response_model=ChatDetailOut)
def get_chat(principal: ChatPrincipal, chat_id: ChatId, context: WorkspaceDep) -> ChatDetailOut:
    chat = _own_chat(context, principal, chat_id)
    messages = store.list_messages(context.catalog.engine, chat.id)
    return ChatDetailOut(
        **_chat(chat).model_dump(), messageList=[_message(context, m) for m in messages]
    )


@router.patch("/chats/{chatId}/model", response_model=ChatOut)
def set_chat_model(
    principal: ChatPrincipal,
    chat_id: ChatId,
    body: ModelPatch,
    context: WorkspaceDep,
    service: ChatServiceDep,
) -> ChatOut:
    """The model this chat answers with (``null``: the workspace's and global defaults)."""
    chat = _own_chat(context, principal, chat_id)
    if body.model is not None:
        service.check_model(context, body.model)
    return _chat(store.set_chat_model(context.catalog.engine, chat, body.model))


@router.patch("/chats/{chatId}", response_model=ChatOut)
def rename_chat(
    principal: ChatPrincipal, chat_id: ChatId, body: TitlePatch, context: WorkspaceDep
) -> ChatOut:
    chat = _own_chat(context, principal, chat_id)
    return _chat(store.rename_chat(context.catalog.engine, chat, body.title))


@router.delete("/chats/{chatId}", status_code=204, response_class=Response)
def delete_chat(principal: ChatPrincipal, chat_id: ChatId, context: WorkspaceDep) -> None:
    store.delete_chat(context.catalog.engine, _own_chat(context, principal, chat_id))


def _own_chat(context: AppContext, principal: Principal, chat_id: int) -> store.ChatInfo:
    return store.get_chat(context.catalog.engine, context.info.id, chat_id, principal.user_id)


def _chat(chat: store.ChatInfo) -> ChatOut:
    return ChatOut(
        id=chat.id,
        title=chat.title,
        model=chat.model,
        messages=chat.messages,
        createdAt=chat.created_at,
        updatedAt=chat.updated_at,
    )


def _message(context: AppContext, message: store.MessageInfo) -> MessageOut:
    return MessageOut(
        id=message.id,
        role=message.role,
        content=message.content,
        sources=sources_out(context, [Citation(**c) for c in message.citations]),
        plan=message.plan,
        modelUsed=message.model_used,
        providerUsed=message.provider_used,
        abortReason=message.abort_reason,
        usage=_usage(message.prompt_tokens, message.completion_tokens),
        createdAt=message.created_at,
    )


@router.get("/usage")
def token_usage(
    principal: Annotated[Principal, Depends(require("documents:read"))], context: WorkspaceDep
) -> list[dict[str, Any]]:
    """Tokens spent by answers in this workspace, per day (UTC), newest first."""
    return store.usage_by_day(context.catalog.engine, context.info.id)
