"""Answering in a chat: the model chosen, the agent run, the turn stored, tokens counted.

Every interface (the HTTP chat API, the OpenAI-compatible API, ``autorag ask`` and
``autorag chat``) answers through ``ChatService.answer``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from autorag.agent.budget import ConcurrencyLimiter
from autorag.agent.events import Emit, StatusEvent
from autorag.agent.orchestrator import RAG_SEARCH, AgentRequest, AgentResult, Orchestrator
from autorag.agent.skills.base import LOCAL_OPERATOR, UNKNOWN_VIA, Caller, Skill
from autorag.auth.permissions import effective_scope
from autorag.auth.service import get_active_user
from autorag.chat import store
from autorag.chat.redaction import RedactingEmitter
from autorag.chat.skills import builtin_skills
from autorag.config import Settings
from autorag.context import AppContext, build_model_router
from autorag.dlp.service import DlpSession
from autorag.errors import InvalidInput
from autorag.llm.base import DEFAULT_OPTIONS, ChatMessage, GenerationOptions
from autorag.llm.router import ModelRouter, Resolution
from autorag.mcp_tools.models import McpSource
from autorag.mcp_tools.skill import mcp_sources, workspace_skills
from autorag.models import SearchFilters
from autorag.system_config import GLOBAL_DEFAULT_MODEL, get_value
from autorag.wiki.service import WikiService
from autorag.workspace_settings import AgentConfig, read_settings

MAX_QUESTION_CHARS = 20_000
HISTORY_MESSAGES = 20  # earlier messages of a chat given to the model


@dataclass(frozen=True)
class ChatUser:
    """Who asks. ``id`` None: the command line, or a caller without a user."""

    id: int | None
    custom_instructions: str = ""
    # Role, login or API key, and workspaces, as the API authenticated them: the skills
    # may do for this user only what the user may do through the API. None: looked up
    # from the user's account (role and memberships; treated as an API key, the
    # stricter), or the local operator when there is no user.
    caller: Caller | None = None

    @property
    def key(self) -> str:
        return f"user:{self.id}" if self.id is not None else "local"


LOCAL_USER = ChatUser(None)


@dataclass(frozen=True)
class ChatTurn:
    question: str
    chat_id: int | None = None  # None: a new chat (when stored)
    model: str | None = None  # this turn's choice; else the chat's, then the defaults
    filters: SearchFilters = field(default_factory=SearchFilters)
    plan_mode: bool | None = None
    store: bool = True  # keep the chat and its messages
    # The conversation so far, when the caller holds it (OpenAI clients send it).
    history: Sequence[ChatMessage] | None = None
    options: GenerationOptions = DEFAULT_OPTIONS  # sampling and limits (OpenAI clients)
    archive: str | None = None  # an archive the question is about (ask --archive), by name
    # The client receives the events (a proposed page edit): the web chat's stream and
    # the command line do; False where they are dropped (wiki_write is not offered).
    receives_events: bool = True
    # A fixed reference text to answer from (a widget's ragContext): it goes into the
    # system prompt and rag_search is not offered (the seed's orchestrator, step 4).
    rag_context: str | None = None
    # The only skills this turn may use (an anonymous widget visitor's); None: all.
    only_skills: frozenset[str] | None = None


@dataclass(frozen=True)
class ChatOutcome:
    result: AgentResult  # as sent: redacted where DLP applies
    chat_id: int | None
    message_id: int | None
    dlp_warning: bool = False  # something in the question or the answer was redacted
    # The sources the workspace's MCP tools gave that the answer kept (done.mcpSources).
    mcp_sources: tuple[McpSource, ...] = ()


class ChatService:
    """One per process: the model router, the skills and the concurrency limit."""

    def __init__(
        self, settings: Settings, router: ModelRouter, skills: Mapping[str, Skill]
    ) -> None:
        self.settings = settings
        self.router = router
        self._skills = dict(skills)
        self.limiter = ConcurrencyLimiter(settings.agent.max_concurrent_per_user)

    @classmethod
    def for_context(cls, app: AppContext) -> ChatService:
        return cls(app.settings, build_router(app), builtin_skills())

    @property
    def skills(self) -> Mapping[str, Skill]:
        """Every skill the agent may call, by name (read-only: see ``register_skill``)."""
        return MappingProxyType(self._skills)

    def register_skill(self, skill: Skill) -> None:
        """Offer ``skill`` to the agent under its own name, from the next answer on.

        For skills that exist only while something runs (``peer_search`` with P2P up);
        a name already taken is a wiring mistake and raises ``ValueError``.
        """
        name = skill.spec.name
        if name in self._skills:
            raise ValueError(f"a skill named {name!r} is registered already")
        self._skills[name] = skill

    def answer(
        self,
        app: AppContext,
        turn: ChatTurn,
        *,
        user: ChatUser = LOCAL_USER,
        emit: Emit,
        cancel: threading.Event | None = None,
    ) -> ChatOutcome:
        """Answer ``turn`` in ``app``'s workspace; events go to ``emit`` as they happen."""
        return self.prepare(app, turn, user=user).run(emit, cancel)

    def prepare(
        self,
        app: AppContext,
        turn: ChatTurn,
        *,
        user: ChatUser,
        dlp: DlpSession | None = None,
    ) -> PreparedAnswer:
        """Everything that can refuse the question, done before any answer streams: the
        question checked (and redacted with ``dlp``), a concurrency slot taken, the chat
        found, the model chosen."""
        original = _checked(turn.question)
        archive = self.check_archive(app, turn.archive) if turn.archive else None
        scanned = dlp.scan(original, channel="chat_input") if dlp else None
        question = scanned.redacted_text if scanned else original
        release = self.limiter.acquire(user.key)
        try:
            config = read_settings(app.catalog, app.info).agent
            chat = self._chat(app, turn, user, title=question)
            resolution = self.resolve(app, config, turn.model or (chat.model if chat else None))
            config, skills = _with_mcp_tools(app, config, self.skills)
            config = _skills_for_turn(config, turn)
            orchestrator = Orchestrator(
                app,
                resolution,
                config=config,
                limits=self.settings.agent,
                skills=skills,
                router=self.router,
            )
            request = AgentRequest(
                question,
                self._history(app, turn, chat, dlp),
                turn.filters,
                chat.id if chat else None,
                user.id,
                user.custom_instructions,
                turn.plan_mode,
                caller_of(app, user),
                turn.options,
                archive,
                turn.receives_events,
                rag_context=turn.rag_context,
            )
        except BaseException:
            release()
            raise
        inbound = Inbound(original, scanned.types if scanned else [])
        return PreparedAnswer(app, orchestrator, request, chat, turn.store, release, dlp, inbound)

    def resolve(self, app: AppContext, config: AgentConfig, choice: str | None) -> Resolution:
        """The model for an answer: per-chat → workspace → global → environment."""
        global_default = get_value(app.catalog.engine, GLOBAL_DEFAULT_MODEL)
        return self.router.resolve(
            [choice, config.default_model, global_default], local_only=config.local_llm_only
        )

    def check_model(self, app: AppContext, model: str) -> None:
        """Refuse a chat model this workspace cannot use (unknown, or not local)."""
        config = read_settings(app.catalog, app.info).agent
        self.router.check_choice(model, local_only=config.local_llm_only)

    def check_archive(self, app: AppContext, archive: str) -> str:
        """The name of the workspace's archive ``archive`` (a name or an id) that
        questions may be asked about; NotFound when there is none."""
        return WikiService(app).archive(archive).name

    def _chat(
        self, app: AppContext, turn: ChatTurn, user: ChatUser, *, title: str
    ) -> store.ChatInfo | None:
        """The turn's chat; a new one is titled with the (redacted) question."""
        engine, workspace = app.catalog.engine, app.info.id
        if turn.chat_id is not None:
            chat = store.get_chat(engine, workspace, turn.chat_id, user.id)
            if turn.model is not None and turn.model != chat.model:
                chat = store.set_chat_model(engine, chat, turn.model)
            return chat
        if not turn.store:
            return None
        chat = store.create_chat(engine, workspace, user.id, title)
        return store.set_chat_model(engine, chat, turn.model) if turn.model else chat

    def _history(
        self,
        app: AppContext,
        turn: ChatTurn,
        chat: store.ChatInfo | None,
        dlp: DlpSession | None,
    ) -> list[ChatMessage]:
        """The conversation so far. A stored chat was stored redacted; a conversation the
        client sends (OpenAI clients send all of it) is redacted here."""
        if turn.history is not None:
            return _redacted_history(list(turn.history), dlp)
        if chat is None or turn.chat_id is None:
            return []
        return store.history(app.catalog.engine, chat.id, turns=HISTORY_MESSAGES)


@dataclass
class PreparedAnswer:
    """An accepted question, holding its concurrency slot until ``run`` ends (or
    ``release`` is called, when it will never run)."""

    app: AppContext
    orchestrator: Orchestrator
    request: AgentRequest
    chat: store.ChatInfo | None
    keep: bool
    release: Callable[[], None]
    dlp: DlpSession | None = None
    inbound: Inbound | None = None

    @property
    def chat_id(self) -> int | None:
        return self.chat.id if self.chat else None

    def run(self, emit: Emit, cancel: threading.Event | None = None) -> ChatOutcome:
        engine, chat = self.app.catalog.engine, self.chat
        redactor = RedactingEmitter(emit, self.dlp) if self.dlp else None
        failed = True
        try:
            chosen = self.orchestrator
            if chosen.requested:  # the chosen model is down: say so before answering
                emit(StatusEvent(f"{chosen.fallback_reason}; answering with {chosen.target.ref}"))
            if chat and self.keep:
                asked = store.add_user_message(engine, chat.id, self.request.question)
                self._record(self.inbound.text if self.inbound else "", self.request.question,
                             self.inbound.types if self.inbound else [], asked)  # fmt: skip
            result = self.orchestrator.run(self.request, redactor or emit, cancel)
            failed = False
        finally:
            # Every exit path counts its tokens, errors included.
            store.record_usage(engine, self.app.info.id, self.orchestrator.usage, failed=failed)
            self.release()
        raw = result.text
        if redactor is not None:
            redactor.flush()
            result.text = redactor.text
            result.citations = redactor.citations or []
        message_id = None
        if chat and self.keep:
            message_id = store.add_assistant_message(engine, chat.id, _stored(result))
            if redactor is not None:
                self._record(raw, result.text, redactor.types, message_id)
        warning = bool(self.inbound and self.inbound.types) or bool(redactor and redactor.redacted)
        found = tuple(mcp_sources(result.citations))
        return ChatOutcome(result, self.chat_id, message_id, warning, mcp_sources=found)

    def _record(self, original: str, sent: str, types: list[str], message_id: int) -> None:
        """Keep a redacted message's original for an admin's reveal."""
        if self.dlp is not None:
            self.dlp.record(original, sent, types, ref=f"message:{message_id}")


@dataclass(frozen=True)
class Inbound:
    """The question as asked, before redaction, and what was found in it."""

    text: str
    types: list[str]


def _redacted_history(history: list[ChatMessage], dlp: DlpSession | None) -> list[ChatMessage]:
    if dlp is None or not history:
        return history
    scanned = dlp.scan_many([m.content for m in history], channel="chat_input")
    return [replace(m, content=r.redacted_text) for m, r in zip(history, scanned, strict=True)]


def _with_mcp_tools(
    app: AppContext, config: AgentConfig, skills: Mapping[str, Skill]
) -> tuple[AgentConfig, Mapping[str, Skill]]:
    """The workspace's installed MCP tools added to the skills and enabled: an admin
    installed them for this workspace and allowed each (``autorag.mcp_tools``)."""
    installed = workspace_skills(app)
    if not installed:
        return config, skills
    enabled = [*config.enabled_skills, *installed]
    return config.model_copy(update={"enabled_skills": enabled}), {**skills, **installed}


def _skills_for_turn(config: AgentConfig, turn: ChatTurn) -> AgentConfig:
    """The skills ``turn`` may use: with a fixed context there is nothing to search; an
    anonymous visitor keeps only the reading ones its widget allows."""
    enabled = list(config.enabled_skills)
    if turn.rag_context:
        enabled = [name for name in enabled if name != RAG_SEARCH]
    if turn.only_skills is not None:
        enabled = [name for name in enabled if name in turn.only_skills]
    if enabled == config.enabled_skills:
        return config
    return config.model_copy(update={"enabled_skills": enabled})


def caller_of(app: AppContext, user: ChatUser) -> Caller:
    """Who the skills act for: as the API described the user, else as the catalog does."""
    if user.caller is not None:
        return user.caller
    if user.id is None:
        return LOCAL_OPERATOR
    account = get_active_user(app.catalog, user.id)
    scope = effective_scope(account.role, account.workspaces, None)
    return Caller(account.role, UNKNOWN_VIA, scope)


def build_router(app: AppContext) -> ModelRouter:
    """The model router of ``app``'s settings and stored connections
    (``autorag.context.build_model_router``, which the llm reranker shares)."""
    return build_model_router(app)


def _checked(question: str) -> str:
    question = question.strip()
    if not question:
        raise InvalidInput("the question is empty")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(f"the question is longer than {MAX_QUESTION_CHARS} characters")
    return question


def _stored(result: AgentResult) -> store.AssistantMessage:
    return store.AssistantMessage(
        content=result.text,
        citations=result.citations,
        plan=result.plan,
        model_used=result.model_used,
        provider_used=result.provider_used,
        abort_reason=result.abort_reason,
        usage=result.usage,
    )
