"""An OpenAI-compatible API, so the ``openai`` SDK and tools built on it can chat with a
workspace: ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed or not).

A model id is a workspace name; ``<workspace>@<provider/model>`` also picks the LLM
that answers. The conversation is the request's ``messages`` (nothing is stored); the
client's system messages are added to the agent's instructions. Besides the standard
fields, the completion carries ``citations``: the sources the answer's ``[n]`` refer
to (in streaming, on the last chunk before the usage chunk).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from autorag.agent.events import AgentEvent, TokenEvent, ignore
from autorag.api.auth import Principal, PrincipalDep
from autorag.api.deps import AppDep, ChatServiceDep, DlpServiceDep
from autorag.api.redaction import WidgetHeader, dlp_session
from autorag.api.routes.chat import source_out
from autorag.api.sse import HEADERS, MEDIA_TYPE, ThreadedStream
from autorag.auth.service import custom_instructions
from autorag.chat.service import ChatOutcome, ChatTurn, ChatUser
from autorag.context import AppContext
from autorag.errors import AutoragError, InvalidInput, NotFound
from autorag.llm.base import ChatMessage
from autorag.ops import workspaces as ws

router = APIRouter(prefix="/v1", tags=["openai-compatible"])
OWNER = "autorag"


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None


class InMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class CompletionBody(BaseModel):
    # Sampling options (temperature, top_p…) are accepted and left to the agent.
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=500)
    messages: list[InMessage] = Field(min_length=1, max_length=500)
    stream: bool = False
    stream_options: StreamOptions | None = None


@router.get("/models")
def list_models(principal: PrincipalDep, context: AppDep) -> dict[str, Any]:
    """One model per workspace the caller may chat in."""
    data = [
        {
            "id": s.info.name,
            "object": "model",
            "created": int(s.created_at.timestamp()),
            "owned_by": OWNER,
        }
        for s in ws.list_workspaces(context.catalog)
        if principal.can("chat:use", s.info.name)
    ]
    return {"object": "list", "data": data}


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    principal: PrincipalDep,
    body: CompletionBody,
    context: AppDep,
    service: ChatServiceDep,
    dlp_service: DlpServiceDep,
    widget: WidgetHeader = None,
) -> dict[str, Any] | StreamingResponse:
    workspace, llm = _split_model(body.model)
    if not principal.can("chat:use", workspace):
        raise NotFound(f"no model {workspace!r}", code="model_not_found")
    app = context.for_workspace(context.catalog.get_workspace(workspace))
    turn, user = await run_in_threadpool(_turn_and_user, app, principal, body, llm)
    dlp = dlp_session(dlp_service, principal, app, "chat", widget)
    prepared = await run_in_threadpool(service.prepare, app, turn, user=user, dlp=dlp)
    completion = _Completion(body.model)
    if not body.stream:
        outcome = await run_in_threadpool(prepared.run, ignore)
        return completion.whole(app, outcome)
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    stream: ThreadedStream[AgentEvent, ChatOutcome] = ThreadedStream(prepared.run)

    async def chunks() -> Any:
        yield completion.chunk({"role": "assistant", "content": ""})
        async for event, outcome, error in stream.items():
            if isinstance(event, TokenEvent):
                yield completion.chunk({"content": event.text})
            elif error is not None:
                yield _data(_error(error))
            elif outcome is not None:
                for chunk in completion.ending(app, outcome, include_usage):
                    yield chunk
        yield "data: [DONE]\n\n"

    return StreamingResponse(chunks(), media_type=MEDIA_TYPE, headers=HEADERS)


def _split_model(model: str) -> tuple[str, str | None]:
    workspace, _, llm = model.partition("@")
    return workspace.strip(), (llm.strip() or None)


def _turn_and_user(
    app: AppContext, principal: Principal, body: CompletionBody, llm: str | None
) -> tuple[ChatTurn, ChatUser]:
    system = [m.text for m in body.messages if m.role in ("system", "developer") and m.text]
    talk = [m for m in body.messages if m.role in ("user", "assistant") and m.text]
    if not talk or talk[-1].role != "user":
        raise InvalidInput("the last message must be the user's question")
    history = [ChatMessage("user" if m.role == "user" else "assistant", m.text) for m in talk]
    instructions = "\n\n".join([custom_instructions(app.catalog, principal.user_id), *system])
    turn = ChatTurn(talk[-1].text, model=llm, store=False, history=history[:-1])
    return turn, ChatUser(principal.user_id, instructions.strip())


class _Completion:
    """The ids and timestamps one completion's chunks share."""

    def __init__(self, model: str) -> None:
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model

    def _base(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def whole(self, app: AppContext, outcome: ChatOutcome) -> dict[str, Any]:
        result = outcome.result
        message = {"role": "assistant", "content": result.text}
        return {
            **self._base("chat.completion"),
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(outcome)}],
            "usage": _usage(outcome),
            "citations": _citations(app, outcome),
            "dlp_warning": outcome.dlp_warning,
            "system_fingerprint": result.model_used,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _data({**self._base("chat.completion.chunk"), "choices": [choice], **extra})

    def ending(self, app: AppContext, outcome: ChatOutcome, include_usage: bool) -> Any:
        yield self.chunk({}, _finish(outcome), citations=_citations(app, outcome))
        if include_usage:
            yield _data(
                {**self._base("chat.completion.chunk"), "choices": [], "usage": _usage(outcome)}
            )


def _finish(outcome: ChatOutcome) -> str:
    reason = outcome.result.abort_reason
    return "length" if reason in ("token_budget", "context_overflow") else "stop"


def _usage(outcome: ChatOutcome) -> dict[str, int]:
    usage = outcome.result.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total,
    }


def _citations(app: AppContext, outcome: ChatOutcome) -> list[dict[str, Any]]:
    return [source_out(app, c).model_dump() for c in outcome.result.citations]


def _error(error: BaseException) -> dict[str, Any]:
    if isinstance(error, AutoragError):
        return {"error": {"message": error.message, "type": error.code, "code": error.status}}
    return {"error": {"message": "the answer failed", "type": "internal_error", "code": 500}}


def _data(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
