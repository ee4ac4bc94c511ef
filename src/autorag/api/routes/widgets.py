"""The embeddable chat widget over HTTP (issue 22): admins' routes under a workspace, and
the routes a visitor's browser calls on a site that embeds the widget.

Admins (``widgets:admin``, in the widget's workspace) list, create, read, change and
remove widgets: ``/api/workspaces/{workspace}/widgets[/{widgetId}]``.

Visitors are anonymous: ``GET /api/widget/{widgetId}/config`` (greeting, colours) and
``POST /api/widget/{widgetId}/chat/stream`` (server-sent events, the chat's shapes:
``status``, ``token``, ``citations``, then ``done`` with ``dlp_warning`` or ``error``).
An unknown or disabled widget is 404. A visitor's request carries ``X-Widget-Id``; no
chat id is accepted and nothing is stored: the widget keeps the conversation in the page
and sends its last ``MAX_HISTORY`` turns, so a visitor can never reach anyone's chat.
Answers are limited per visitor (address) and per widget (429 with Retry-After), and
redacted by DLP with the source ``widget``.

CORS for ``/api/widget/…`` is per widget (``WidgetCors``, outermost middleware): the
preflight and the request of an Origin the widget allows get that origin back, no
credentials; any other Origin gets 403 and no CORS header. ``GET /widget.js`` is the
script a site embeds (public, cacheable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autorag.agent.events import AgentEvent, CitationsEvent, StatusEvent, TokenEvent
from autorag.agent.skills.base import Caller
from autorag.api.auth import Principal, client_address, require
from autorag.api.deps import AuthDep, ChatServiceDep, DlpServiceDep, ServerDep, WorkspaceDep
from autorag.api.errors import problem
from autorag.api.routes.archives import CamelIn
from autorag.api.routes.chat import SourceOut, sources_out
from autorag.api.sse import HEADERS, MEDIA_TYPE, ThreadedStream, sse
from autorag.auth.permissions import WIDGETS_ADMIN
from autorag.chat.service import ChatOutcome, ChatTurn, ChatUser
from autorag.context import AppContext
from autorag.dlp.service import DlpContext, source_from_widget
from autorag.errors import AutoragError, InvalidInput
from autorag.llm.base import ChatMessage
from autorag.web import ASSETS_DIR
from autorag.widget.models import VISITOR_SKILLS, Widget, embed_snippet
from autorag.widget.service import (
    COLOUR_PATTERN,
    MAX_GREETING,
    MAX_ORIGIN_CHARS,
    MAX_ORIGINS,
    MAX_PER_MINUTE,
    MAX_RAG_CONTEXT,
    NAME_PATTERN,
    PUBLIC_ID_PATTERN,
    WidgetLimiter,
    WidgetService,
)
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(tags=["widgets"])
ADMIN_PATH = "/api/workspaces/{workspace}/widgets"
VISITOR_PATH = "/api/widget/{widgetId}"
EMBED_SCRIPT = ASSETS_DIR / "widget_embed.js"
MAX_HISTORY = 6  # earlier messages a visitor's widget may send (3 questions, 3 answers)
MAX_HISTORY_CHARS = 4_000  # each
MAX_QUESTION = 2_000
PREFLIGHT_MAX_AGE = "600"

Admin = Annotated[Principal, Depends(require(WIDGETS_ADMIN))]
WidgetId = Annotated[str, Path(alias="widgetId", pattern=PUBLIC_ID_PATTERN, max_length=64)]
WidgetHeader = Annotated[
    str | None, Header(alias="X-Widget-Id", max_length=64, description="The widget's id")
]
Colour = Annotated[str, Field(pattern=COLOUR_PATTERN)]
Origin = Annotated[str, Field(min_length=1, max_length=MAX_ORIGIN_CHARS)]
Rate = Annotated[int, Field(ge=1, le=MAX_PER_MINUTE)]


def _service(server: ServerDep) -> WidgetService:
    return WidgetService.for_context(server.context)


Widgets = Annotated[WidgetService, Depends(_service)]


# -- shapes --------------------------------------------------------------------------------
class Theme(BaseModel):
    model_config = ConfigDict(extra="forbid")

    primary: Colour | None = None
    background: Colour | None = None
    text: Colour | None = None


class WidgetOut(BaseModel):
    model_config = ConfigDict(**CAMEL_CASE, from_attributes=True)

    public_id: str
    workspace: str
    name: str
    enabled: bool
    allowed_origins: list[str]
    model: str | None
    greeting: str
    theme: dict[str, str]
    visitor_per_minute: int
    widget_per_minute: int
    rag_context: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    snippet: str = ""  # the script tag to put on a page (this server's address)


class WidgetListOut(BaseModel):
    widgets: list[WidgetOut]


class WidgetIn(CamelIn):
    name: str = Field(min_length=1, max_length=64, pattern=NAME_PATTERN)
    allowed_origins: list[Origin] = Field(default_factory=list, max_length=MAX_ORIGINS)
    model: str | None = Field(default=None, max_length=300, description="provider/model")
    greeting: str = Field(default="", max_length=MAX_GREETING)
    theme: Theme = Field(default_factory=Theme)
    visitor_per_minute: Rate = 10
    widget_per_minute: Rate = 120
    rag_context: str | None = Field(default=None, max_length=MAX_RAG_CONTEXT)
    enabled: bool = True


class WidgetPatch(CamelIn):
    """Only the keys given change; ``model`` and ``ragContext`` may be null (cleared)."""

    name: str | None = Field(default=None, min_length=1, max_length=64, pattern=NAME_PATTERN)
    allowed_origins: list[Origin] | None = Field(default=None, max_length=MAX_ORIGINS)
    model: str | None = Field(default=None, max_length=300)
    greeting: str | None = Field(default=None, max_length=MAX_GREETING)
    theme: Theme | None = None
    visitor_per_minute: Rate | None = None
    widget_per_minute: Rate | None = None
    rag_context: str | None = Field(default=None, max_length=MAX_RAG_CONTEXT)
    enabled: bool | None = None


class ConfigOut(BaseModel):
    widgetId: str
    name: str
    greeting: str
    theme: dict[str, str]


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_HISTORY_CHARS)


class VisitorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MAX_QUESTION)
    history: list[Turn] = Field(default_factory=list, max_length=MAX_HISTORY)


def _out(widget: Widget, request: Request) -> WidgetOut:
    out = WidgetOut.model_validate(widget)
    out.snippet = embed_snippet(str(request.base_url), widget.public_id)
    return out


# -- an admin's routes -----------------------------------------------------------------------
@router.get(ADMIN_PATH, response_model=WidgetListOut)
def list_widgets(
    principal: Admin, context: WorkspaceDep, widgets: Widgets, request: Request
) -> WidgetListOut:
    """The workspace's widgets, by name."""
    found = widgets.list(context.info.id)
    return WidgetListOut(widgets=[_out(w, request) for w in found])


@router.post(ADMIN_PATH, status_code=201, response_model=WidgetOut)
def create_widget(
    principal: Admin,
    context: WorkspaceDep,
    widgets: Widgets,
    chat: ChatServiceDep,
    body: WidgetIn,
    request: Request,
) -> WidgetOut:
    """A new widget; its ``snippet`` is the tag to put on the site. 409 for a name
    taken in the workspace; 400 for a bad origin or a model this workspace cannot use."""
    values = body.model_dump(exclude={"theme"})
    values["theme"] = body.theme.model_dump(exclude_none=True)
    if body.model:
        chat.check_model(context, body.model)
    widget = widgets.create(context.info.id, actor=principal.username, **values)
    return _out(widget, request)


@router.get(ADMIN_PATH + "/{widgetId}", response_model=WidgetOut)
def get_widget(
    principal: Admin, context: WorkspaceDep, widgets: Widgets, widget_id: WidgetId, request: Request
) -> WidgetOut:
    return _out(widgets.get(context.info.id, widget_id), request)


@router.patch(ADMIN_PATH + "/{widgetId}", response_model=WidgetOut)
def update_widget(
    principal: Admin,
    context: WorkspaceDep,
    widgets: Widgets,
    chat: ChatServiceDep,
    widget_id: WidgetId,
    body: WidgetPatch,
    request: Request,
) -> WidgetOut:
    """Change what is given; ``enabled: false`` turns the widget off for visitors."""
    given = body.model_dump(exclude_unset=True)
    nullable = {"model", "rag_context"}
    if any(value is None for key, value in given.items() if key not in nullable):
        raise InvalidInput("only model and ragContext may be null: leave out what does not change")
    if body.theme is not None:
        given["theme"] = body.theme.model_dump(exclude_none=True)
    if body.model:
        chat.check_model(context, body.model)
    return _out(widgets.update(context.info.id, widget_id, given), request)


@router.delete(ADMIN_PATH + "/{widgetId}", status_code=204, response_class=Response)
def delete_widget(
    principal: Admin, context: WorkspaceDep, widgets: Widgets, widget_id: WidgetId
) -> Response:
    widgets.delete(context.info.id, widget_id)
    return Response(status_code=204)


# -- a visitor's routes ----------------------------------------------------------------------
@router.get(VISITOR_PATH + "/config", response_model=ConfigOut)
def widget_config(widgets: Widgets, widget_id: WidgetId) -> ConfigOut:
    """What the bubble shows before a question: its greeting and colours. 404 for an
    unknown or disabled widget."""
    widget = widgets.public(widget_id)
    return ConfigOut(
        widgetId=widget.public_id,
        name=widget.name,
        greeting=widget.greeting,
        theme=dict(widget.theme),
    )


@router.post(
    VISITOR_PATH + "/chat/stream",
    response_class=StreamingResponse,
    responses={200: {"content": {MEDIA_TYPE: {}}, "description": "Server-sent events"}},
)
async def widget_chat_stream(
    request: Request,
    widgets: Widgets,
    widget_id: WidgetId,
    body: VisitorBody,
    server: ServerDep,
    auth: AuthDep,
    chat: ChatServiceDep,
    dlp_service: DlpServiceDep,
    header: WidgetHeader = None,
) -> StreamingResponse:
    """An anonymous visitor's question, answered as server-sent events (see the module)."""
    if header != widget_id:
        raise InvalidInput("send the widget's id in X-Widget-Id", code="widget_id_mismatch")
    widget = await run_in_threadpool(widgets.public, widget_id)
    limiter(request).hit(widget, client_address(request, auth))
    context = await run_in_threadpool(_workspace, server.context, widget)
    dlp = dlp_service.session(
        DlpContext(source_from_widget(widget_id), "chat", None, None, context.info.id)
    )
    turn = visitor_turn(widget, body)
    user = visitor(widget, context)
    prepared = await run_in_threadpool(chat.prepare, context, turn, user=user, dlp=dlp)
    stream: ThreadedStream[AgentEvent, ChatOutcome] = ThreadedStream(prepared.run)

    async def events() -> Any:
        async for event, outcome, error in stream.items():
            if event is not None:
                sent = _event(context, event)
                if sent:
                    yield sent
            elif error is not None:
                yield sse("error", _error(error))
            elif outcome is not None:
                yield sse("done", _done(outcome))

    return StreamingResponse(events(), media_type=MEDIA_TYPE, headers=HEADERS)


def limiter(request: Request) -> WidgetLimiter:
    """The app's one limiter (made on first use): limits hold across requests."""
    state = request.app.state
    if getattr(state, "widget_limiter", None) is None:
        state.widget_limiter = WidgetLimiter()
    found: WidgetLimiter = state.widget_limiter
    return found


def _workspace(context: AppContext, widget: Widget) -> AppContext:
    return context.for_workspace(context.catalog.get_workspace(widget.workspace))


def visitor_turn(widget: Widget, body: VisitorBody) -> ChatTurn:
    """Nothing stored, no chat id; the page's last turns; reading skills only."""
    history = [ChatMessage(t.role, t.content) for t in body.history[-MAX_HISTORY:]]
    return ChatTurn(
        body.message,
        model=widget.model,
        store=False,
        history=history,
        receives_events=False,
        rag_context=widget.rag_context,
        only_skills=VISITOR_SKILLS,
    )


def visitor(widget: Widget, context: AppContext) -> ChatUser:
    """An anonymous visitor: a member's reading rights in the widget's workspace only."""
    caller = Caller("member", "api_key", frozenset({context.info.name}))
    return VisitorUser(None, "", caller, widget=widget.public_id)


@dataclass(frozen=True)
class VisitorUser(ChatUser):
    """A visitor's concurrency slot is the widget's, not the command line's (user None)."""

    widget: str = ""

    @property
    def key(self) -> str:
        return f"widget:{self.widget}"


def _event(context: AppContext, event: AgentEvent) -> str | None:
    if isinstance(event, TokenEvent):
        return sse("token", {"text": event.text})
    if isinstance(event, StatusEvent):
        return sse("status", {"message": event.message, "skill": event.skill})
    if isinstance(event, CitationsEvent):
        sources = [_public_source(s) for s in sources_out(context, event.citations)]
        return sse("citations", {"sources": sources})
    return None  # a plan or page edit: not for visitors


def _public_source(source: SourceOut) -> dict[str, Any]:
    """A source as a visitor sees it: named by its canonical id, never by the server's
    own path to the file (``source`` is an OS-absolute path for local files), and no
    link into the API (they cannot follow it)."""
    return source.model_copy(update={"source": source.sourceId, "url": None}).model_dump()


def _done(outcome: ChatOutcome) -> dict[str, Any]:
    result = outcome.result
    return {
        "chatId": None,  # nothing is stored for a visitor
        "messageId": None,
        "answer": result.text,
        "cited": [c.number for c in result.citations if c.cited],
        "modelUsed": result.model_used,
        "providerUsed": result.provider_used,
        "abortReason": result.abort_reason,
        "dlp_warning": outcome.dlp_warning,
        "mcpSources": [],  # the chat's shape; a visitor's answer uses no installed tools
    }


def _error(error: BaseException) -> dict[str, Any]:
    if isinstance(error, AutoragError):
        return {"code": error.code, "message": error.message, "status": error.status}
    return {"code": "internal_error", "message": "the answer failed", "status": 500}


# -- the embed script ------------------------------------------------------------------------
@router.get("/widget.js", include_in_schema=False)
def embed_script() -> Response:
    """The script a site embeds: public, cached an hour, revalidated after."""
    headers = {
        "Cache-Control": "public, max-age=3600",
        "Access-Control-Allow-Origin": "*",  # code, no data: any page may load it
        "Cross-Origin-Resource-Policy": "cross-origin",
    }
    return Response(
        EMBED_SCRIPT.read_bytes(), media_type="text/javascript; charset=utf-8", headers=headers
    )


# -- per-widget CORS -------------------------------------------------------------------------
_VISITOR_PATH = re.compile(r"^/api/widget/([^/]+)/")
ALLOWED_METHODS = "GET, POST"
ALLOWED_HEADERS = "Content-Type, X-Widget-Id"


class WidgetCors:
    """CORS for the visitor routes, per widget (see the module docstring). Outermost, so
    the server-wide CORS setting never answers these paths' preflights."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _VISITOR_PATH.match(scope["path"]) if scope["type"] == "http" else None
        origin = _header(scope, b"origin")
        if match is None or origin is None:
            await self.app(scope, receive, send)  # not a browser's cross-origin call
            return
        widget = await run_in_threadpool(_lookup, scope, match.group(1))
        preflight = scope["method"] == "OPTIONS"
        if widget is None and preflight:
            await problem(404, "widget_not_found", "no such widget, or it is turned off")(
                scope, receive, send
            )
            return
        if widget is not None and not widget.admits(origin):
            detail = "this site is not allowed to use this chat widget"
            await problem(403, "origin_not_allowed", detail)(scope, receive, send)
            return
        if preflight:
            await Response(status_code=204, headers=_cors(origin, preflight=True))(
                scope, receive, send
            )
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start" and widget is not None:
                headers = MutableHeaders(scope=message)
                for key, value in _cors(origin, preflight=False).items():
                    headers[key] = value
            await send(message)

        await self.app(scope, receive, with_cors)


def _lookup(scope: Scope, public_id: str) -> Widget | None:
    if not re.match(PUBLIC_ID_PATTERN, public_id):
        return None
    server = getattr(scope["app"].state, "server", None)
    if server is None:
        return None
    try:
        return WidgetService.for_context(server.context).public(public_id)
    except AutoragError:
        return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _cors(origin: str, *, preflight: bool) -> dict[str, str]:
    headers = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
    if preflight:
        headers |= {
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Allow-Headers": ALLOWED_HEADERS,
            "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
        }
    else:
        headers["Access-Control-Expose-Headers"] = "Retry-After"
    return headers
