"""An OpenAI-compatible API, so the ``openai`` SDK and tools built on it can chat with a
workspace: ``GET /v1/models[/{id}]``, ``POST /v1/chat/completions`` (streamed or not)
and ``POST /v1/embeddings``. Errors answer in OpenAI's shape (``api/openai/errors.py``).

A model id is a workspace name; ``<workspace>@<provider/model>`` also picks the LLM
that answers. The conversation is the request's ``messages`` (nothing is stored); the
client's system messages are added to the agent's instructions. What the request's
options ask of the model is in ``api/openai/schemas.py``; the completion's extra fields
in ``api/openai/completions.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from anyio import to_thread
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from autorag.agent.events import AgentEvent, TokenEvent, ignore
from autorag.api.auth import Principal, PrincipalDep
from autorag.api.deps import AppDep, ChatServiceDep, DlpServiceDep, SearchSlots
from autorag.api.openai.completions import DONE, Completion, data
from autorag.api.openai.embeddings import EmbeddingModel, embed
from autorag.api.openai.errors import InvalidParam, ModelNotFound, stream_error
from autorag.api.openai.schemas import CompletionBody, EmbeddingBody
from autorag.api.redaction import WidgetHeader, dlp_session
from autorag.api.routes.chat import source_out
from autorag.api.sse import HEADERS, MEDIA_TYPE, ThreadedStream
from autorag.auth.service import custom_instructions
from autorag.chat.service import ChatOutcome, ChatService, ChatTurn, ChatUser, PreparedAnswer
from autorag.context import AppContext
from autorag.errors import InvalidInput, NotFound
from autorag.llm.base import ChatMessage, GenerationOptions
from autorag.ops import workspaces as ws

# Its errors answer in OpenAI's shape: api.openai.errors.install_error_handlers.
router = APIRouter(prefix="/v1", tags=["openai-compatible"])
OWNER = "autorag"


@router.get("/models")
def list_models(principal: PrincipalDep, context: AppDep) -> dict[str, Any]:
    """One model per workspace the caller may chat in."""
    return {"object": "list", "data": _models(principal, context)}


@router.get("/models/{model:path}")
def get_model(
    model: str, principal: PrincipalDep, context: AppDep, service: ChatServiceDep
) -> dict[str, Any]:
    """One model: a workspace, or ``<workspace>@<provider/model>``."""
    app = _workspace(principal, context, model)
    _check_llm(service, app, model)
    listed = next(m for m in _models(principal, context) if m["id"] == app.info.name)
    return {**listed, "id": model}


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    principal: PrincipalDep,
    body: CompletionBody,
    context: AppDep,
    service: ChatServiceDep,
    dlp_service: DlpServiceDep,
    widget: WidgetHeader = None,
) -> dict[str, Any] | StreamingResponse:
    options = body.options()
    app = await run_in_threadpool(_workspace, principal, context, body.model)
    await run_in_threadpool(_check_llm, service, app, body.model)
    turn, user = await run_in_threadpool(_turn_and_user, app, principal, body, options)
    dlp = dlp_session(dlp_service, principal, app, "chat", widget)
    prepared = await run_in_threadpool(service.prepare, app, turn, user=user, dlp=dlp)
    _check_json(prepared, options)
    completion = Completion(body.model)
    if not body.stream:
        outcome = await run_in_threadpool(prepared.run, ignore)
        return completion.whole(outcome, _citations(app, outcome))
    stream: ThreadedStream[AgentEvent, ChatOutcome] = ThreadedStream(prepared.run)

    async def chunks() -> AsyncIterator[str]:
        yield completion.chunk({"role": "assistant", "content": ""})
        async for event, outcome, error in stream.items():
            if isinstance(event, TokenEvent):
                yield completion.chunk({"content": event.text})
            elif error is not None:
                yield data(stream_error(error))
            elif outcome is not None:
                cited = _citations(app, outcome)
                for chunk in completion.ending(outcome, cited, body.include_usage):
                    yield chunk
        yield DONE

    return StreamingResponse(chunks(), media_type=MEDIA_TYPE, headers=HEADERS)


@router.post("/embeddings")
async def embeddings(
    principal: PrincipalDep, body: EmbeddingBody, context: AppDep, slots: SearchSlots
) -> dict[str, Any]:
    """The installation's embedding model, as search uses it (at most as many requests
    at once as searches)."""
    texts = body.texts()
    model = EmbeddingModel.of(context)
    model.check(body.model, body.dimensions)
    return await to_thread.run_sync(embed, model, texts, body.encoding_format, limiter=slots)


def _citations(app: AppContext, outcome: ChatOutcome) -> list[dict[str, Any]]:
    return [source_out(app, c).model_dump() for c in outcome.result.citations]


def _models(principal: Principal, context: AppContext) -> list[dict[str, Any]]:
    return [
        {
            "id": s.info.name,
            "object": "model",
            "created": int(s.created_at.timestamp()),
            "owned_by": OWNER,
        }
        for s in ws.list_workspaces(context.catalog)
        if principal.can("chat:use", s.info.name)
    ]


def _workspace(principal: Principal, context: AppContext, model: str) -> AppContext:
    """The workspace a model id names; 404 listing the caller's models if none is."""
    name = model.partition("@")[0].strip()
    if name and principal.can("chat:use", name):
        try:
            return context.for_workspace(context.catalog.get_workspace(name))
        except NotFound:
            pass
    raise ModelNotFound(model, sorted(m["id"] for m in _models(principal, context)))


def _check_llm(service: ChatService, app: AppContext, model: str) -> None:
    """A model id's ``@provider/model`` part must name a configured provider (404 listing
    them if not); a workspace that allows local models only refuses others (403)."""
    llm = model.partition("@")[2].strip()
    if not llm:
        return
    try:
        service.check_model(app, llm)
    except InvalidInput as exc:
        ids = sorted({f"{app.info.name}@{m.id}" for m in service.router.models()})
        raise ModelNotFound(model, [app.info.name, *ids]) from exc


def _check_json(prepared: PreparedAnswer, options: GenerationOptions) -> None:
    """JSON output only from a model that can write it (not the extractive one)."""
    target = prepared.orchestrator.target
    if options.json is not None and not target.provider.writes_json:
        prepared.release()
        raise InvalidParam(
            "response_format",
            f"the model answering, {target.ref}, cannot write JSON: pick a model served by "
            "Ollama or an OpenAI-compatible server (<workspace>@<provider/model>)",
        )


def _turn_and_user(
    app: AppContext, principal: Principal, body: CompletionBody, options: GenerationOptions
) -> tuple[ChatTurn, ChatUser]:
    system = [m.text for m in body.messages if m.role in ("system", "developer") and m.text]
    talk = [m for m in body.messages if m.role in ("user", "assistant") and m.text]
    if not talk or talk[-1].role != "user":
        raise InvalidParam("messages", "the last message must be the user's question")
    history = [ChatMessage("user" if m.role == "user" else "assistant", m.text) for m in talk]
    instructions = "\n\n".join([custom_instructions(app.catalog, principal.user_id), *system])
    llm = body.model.partition("@")[2].strip() or None
    turn = ChatTurn(
        talk[-1].text, model=llm, store=False, history=history[:-1], options=options,
        receives_events=False,  # an OpenAI client never sees a proposed page edit
    )  # fmt: skip
    return turn, ChatUser(principal.user_id, instructions.strip())
