"""The ReAct orchestrator: decide, act, observe, until the model answers.

One streamed call per iteration is the decision: a tool call in the stream means "act",
plain text means "answer". Tokens are held while the decision is open and dropped when
the iteration turns out to be a tool call (buffered replay); once the text is clearly an
answer the held tokens are replayed and the rest streams live. Watchdogs (budget.py)
bound every run; ``AgentResult.abort_reason`` says how it ended.

A call a model wrote into its text instead of the tool API is recovered (toolcalls.py)
only from what that model wrote in this turn: never from a provider that does not write
calls as text (the extractive one, which quotes sources), and never when the "call"
repeats text the model was given as data (sources, tool results, the conversation).
Each skill then checks the asking user's permission for what it does (``Caller``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from autorag.agent.budget import (
    AbortReason,
    Budget,
    LoopDetector,
    UnknownToolBreaker,
    estimate_prompt_tokens,
    estimate_tokens,
    truncate_context_to_byte_budget,
    truncate_tool_output,
)
from autorag.agent.citations import Renumbering
from autorag.agent.events import CitationsEvent, Emit, PlanEvent, StatusEvent, TokenEvent
from autorag.agent.prompts import FINAL_ANSWER_NOW, reference_context, system_prompt
from autorag.agent.skills.base import (
    NOBODY,
    Caller,
    Skill,
    SkillContext,
    SkillResult,
    progress_words,
)
from autorag.agent.toolcalls import may_become_tool_call, resolve_implicit_tool_call
from autorag.config import AgentSettings
from autorag.context import AppContext
from autorag.errors import AutoragError, Unavailable
from autorag.llm.base import (
    DEFAULT_OPTIONS,
    PLAN_INSTRUCTION,
    ChatMessage,
    FinishReason,
    GenerationOptions,
    LLMDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from autorag.llm.extractive import NO_ANSWER
from autorag.llm.router import ModelRouter, Resolution, Target
from autorag.models import Citation, Diagnostic, SearchFilters
from autorag.retrieval.grounding import NO_EVIDENCE_DISCLAIMER, ground_citations, needs_disclaimer
from autorag.workspace_settings import AgentConfig

RAG_SEARCH = "rag_search"
# Held answer text streams once it is this long and cannot be turning into a tool call.
COMMIT_CHARS = 120
STOPPED = {
    "wallclock": "the time budget ran out",
    "token_budget": "the token budget ran out",
    "context_overflow": "the conversation no longer fits the model's context budget",
    "unknown_tool_breaker": "the model kept calling tools that do not exist",
    "aborted": "the answer was stopped",
}
# Told to the model when the question is asked about an archive (its name is a slug).
ARCHIVE_NOTE = (
    "The question is about the archive '{archive}': search its pages with wiki_query; "
    "rag_search also looks there when the documents have nothing."
)
# Skills run here so a slow one can be abandoned at its timeout; a shared pool (an
# explicit cache) keeps thread start-up out of every call.
_SKILL_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="skill")


@dataclass(frozen=True)
class AgentRequest:
    question: str
    history: Sequence[ChatMessage] = ()  # earlier turns of the chat, oldest first
    filters: SearchFilters = field(default_factory=SearchFilters)
    chat_id: int | None = None
    user_id: int | None = None
    custom_instructions: str = ""
    plan_mode: bool | None = None  # None: as the workspace's agent config says
    # Who asks, for the skills' permission checks (``ChatService`` always says). None:
    # nobody, holding no permission (a peer's remote session, say).
    caller: Caller | None = None
    # Sampling and limits for every model call (the OpenAI-compatible API's options).
    options: GenerationOptions = DEFAULT_OPTIONS
    # An archive of the workspace the question is about, by name: the archive skills'
    # default and rag_search's fallback (``autorag ask --archive``). None: none named.
    archive: str | None = None
    # The client receives the events (``wiki_edit``): offers wiki_write. False for a
    # caller that drops them (the OpenAI-compatible API, a peer's session).
    receives_events: bool = False
    # Reference text to answer from (a widget's ragContext), put in the system prompt as
    # data; the caller removed rag_search from the skills.
    rag_context: str | None = None


@dataclass
class AgentResult:
    text: str
    # Grounded: the sources sent with the answer, numbered 1..n in order of first use in
    # ``text`` (citations.py), then the uncited ones (``cited=False``).
    citations: list[Citation]
    abort_reason: AbortReason
    model_used: str  # provider/model
    provider_used: str
    usage: Usage
    plan: str | None = None
    requested_model: str | None = None  # set when a fallback answered instead
    fallback_reason: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    iterations: int = 0
    overhead_ms: float = 0.0  # orchestration time, model and skill time excluded
    finish: FinishReason | None = None  # "length": the options' max_tokens cut the answer


@dataclass
class _Decision:
    call: ToolCall | None
    text: str
    streamed: bool  # the text already went to the client
    stopped: AbortReason | None = None  # cut short by the watchdog or the client
    # The text is the model's own writing, where a call may hide (not extraction).
    may_hold_call: bool = True
    pieces: list[str] = field(default_factory=list)  # the text as the model streamed it
    finish: FinishReason | None = None  # a limit of the request's options ended it


class Orchestrator:
    """Runs one answer. Build one per request; not thread-safe."""

    def __init__(
        self,
        app: AppContext,
        resolution: Resolution,
        *,
        config: AgentConfig,
        limits: AgentSettings,
        skills: Mapping[str, Skill],
        router: ModelRouter | None = None,
    ) -> None:
        self.app = app
        self.config = config
        self.limits = limits
        self.router = router
        self.target = resolution.target
        self._fallbacks = list(resolution.fallbacks)
        self.requested = resolution.requested
        self.fallback_reason = resolution.reason
        self.skills = {n: skills[n] for n in config.enabled_skills if n in skills}
        self.diagnostics: list[Diagnostic] = []
        self.budget = Budget(limits.wallclock_s, limits.token_budget)
        self._external_s = 0.0  # time spent in models and skills

    @property
    def usage(self) -> Usage:
        """Tokens spent so far: readable after a run that raised, too."""
        return self.budget.usage

    # -- the run ---------------------------------------------------------------------------
    def run(
        self, request: AgentRequest, emit: Emit, cancel: threading.Event | None = None
    ) -> AgentResult:
        started = time.perf_counter()
        self.cancel = cancel or threading.Event()
        self.request = request
        self.finish: FinishReason | None = None
        self.citations: list[Citation] = []
        numbering = Renumbering(lambda: self.citations)
        self.emit = numbering.wrap(emit)
        self._offer_available_skills()
        plan = self._plan(request) if self._plan_mode(request) else None
        messages = [
            ChatMessage("system", self._system(request, plan)),
            *request.history,
            ChatMessage("user", request.question),
        ]
        text, reason, iterations = self._loop(messages)
        text = self._finish(text, reason)
        # An answer that says itself that nothing was found stands alone: no sources.
        found_nothing = text.strip() == NO_ANSWER
        grounded = ground_citations(text, self.citations) if text and not found_nothing else []
        if reason == "done" and request.options.json is None and self._disclaim(text, grounded):
            text = self._append(text, NO_EVIDENCE_DISCLAIMER)
        held = numbering.flush()  # a last "[" that never became a marker
        if held:
            emit(TokenEvent(held))
        text = numbering.rewrite(text)
        grounded = numbering.number(grounded)
        self.emit(CitationsEvent(tuple(grounded)))
        overhead = (time.perf_counter() - started - self._external_s) * 1000
        return AgentResult(
            text=text,
            citations=grounded,
            abort_reason=reason,
            model_used=self.target.ref,
            provider_used=self.target.provider.name,
            usage=self.budget.usage,
            plan=plan,
            requested_model=self.requested,
            fallback_reason=self.fallback_reason,
            diagnostics=self.diagnostics,
            iterations=iterations,
            overhead_ms=overhead,
            finish=self.finish,
        )

    def _offer_available_skills(self) -> None:
        context = self._skill_context()
        self.skills = {n: s for n, s in self.skills.items() if s.available(context)}
        self.tools: list[ToolSpec] = [s.spec for s in self.skills.values()]

    def _skill_context(self) -> SkillContext:
        return SkillContext(
            app=self.app,
            chat_id=self.request.chat_id,
            user_id=self.request.user_id,
            caller=self.request.caller or NOBODY,
            filters=self.request.filters,
            k=self.limits.search_k,
            first_citation_number=len(self.citations) + 1,
            emit=self.emit,
            archive=self.request.archive,
            local_model=all(t.provider.local for t in (self.target, *self._fallbacks)),
            receives_events=self.request.receives_events,
        )

    def _loop(self, messages: list[ChatMessage]) -> tuple[str, AbortReason, int]:
        """Decide and act until an answer; the answer's text (already streamed)."""
        breaker = UnknownToolBreaker()
        loops = LoopDetector(self.limits.loop_repeats)
        searched = False
        for iteration in range(1, self.limits.max_iterations + 1):
            stop = self._watchdog()
            if stop:
                return "", stop, iteration - 1
            prompt = truncate_context_to_byte_budget(
                messages, self.limits.context_bytes, self.limits.keep_last_messages
            )
            if prompt is None:
                return "", "context_overflow", iteration - 1
            hold = self._must_search(searched)
            decision = self._decide(prompt, self.tools, hold_all=hold)
            if decision.stopped:  # held text may be a tool call's preamble: not an answer
                return decision.text if decision.streamed else "", decision.stopped, iteration
            call = decision.call
            if call is None and not decision.streamed and decision.may_hold_call:
                call = resolve_implicit_tool_call(decision.text, self.skills, _data(messages))
            if call is None and hold:
                call = ToolCall(f"forced_{iteration}", RAG_SEARCH, {"query": self.request.question})
            if call is None:
                if not decision.streamed:
                    self._replay(decision.pieces)
                return decision.text, "done", iteration
            if call.name not in self.skills:
                if breaker.unknown():
                    return "", "unknown_tool_breaker", iteration
                messages += self._unknown_skill(call)
                continue
            breaker.known()
            if loops.record(call.name, call.arguments):
                self._note("loop_detected", f"{call.name} asked again with the same arguments")
                return self._final_answer(messages), "loop_detected", iteration
            searched = searched or call.name == RAG_SEARCH
            messages += self._act(call)
        return self._final_answer(messages), "done", self.limits.max_iterations

    def _must_search(self, searched: bool) -> bool:
        return self.config.hybrid_search_forced and not searched and RAG_SEARCH in self.skills

    def _watchdog(self) -> AbortReason | None:
        if self.cancel.is_set():
            return "aborted"
        return self.budget.exceeded()

    # -- one decision ------------------------------------------------------------------------
    def _decide(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec], *, hold_all: bool = False
    ) -> _Decision:
        """One streamed model call; falls back to the next model if this one is down
        before it said anything."""
        while True:
            try:
                return self._stream(self.target, messages, tools, hold_all=hold_all)
            except Unavailable as exc:
                if not self._fall_back(exc):
                    raise

    def _fall_back(self, error: Unavailable) -> bool:
        if not self._fallbacks:
            return False
        failed = self.target
        if self.router is not None:
            self.router.mark_down(failed.provider.name, error.message)
        self.target = self._fallbacks.pop(0)
        self.requested = self.requested or failed.ref
        self.fallback_reason = f"{failed.ref} is unavailable: {error.message}"
        self.emit(StatusEvent(f"{failed.ref} is unavailable; answering with {self.target.ref}"))
        return True

    def _stream(
        self,
        target: Target,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        *,
        hold_all: bool,
    ) -> _Decision:
        began = time.perf_counter()
        stream = target.provider.stream_chat(
            messages, tools=tools, model=target.model, options=self.request.options
        )
        held: list[str] = []
        decision = _Decision(None, "", streamed=not tools)
        decision.may_hold_call = writes_calls_as_text(target)
        usage: Usage | None = None
        try:
            for delta in stream:
                decision.stopped = self._watchdog()
                if decision.stopped:
                    break
                usage = delta.usage or usage
                decision.finish = delta.finish or decision.finish
                if delta.tool_call is not None:
                    if decision.streamed:
                        self._note("late_tool_call", f"ignored {delta.tool_call.name}: answered")
                        continue
                    decision.call = delta.tool_call
                    break
                if delta.text:
                    held.append(delta.text)
                    if decision.streamed:
                        self.emit(TokenEvent(delta.text))
                    elif not hold_all and self._can_commit(held, decision.may_hold_call):
                        decision.streamed = True
                        self._replay(held)
        finally:
            _close(stream)
            self._external_s += time.perf_counter() - began
        decision.text, decision.pieces = "".join(held), held
        self.finish = decision.finish  # the last call is the answer
        self._charge(messages, decision, usage)
        return decision

    def _can_commit(self, held: list[str], may_hold_call: bool) -> bool:
        text = "".join(held)
        if len(text) < COMMIT_CHARS:
            return False
        return not may_hold_call or not may_become_tool_call(text)

    def _replay(self, pieces: Sequence[str]) -> None:
        """Send held text as the model streamed it: a token event per piece."""
        for piece in pieces:
            if piece:
                self.emit(TokenEvent(piece))

    def _charge(self, messages: Sequence[ChatMessage], d: _Decision, usage: Usage | None) -> None:
        if usage is None:  # the server did not say: estimate
            spoken = d.text + (str(dict(d.call.arguments)) if d.call else "")
            usage = Usage(estimate_prompt_tokens(messages), estimate_tokens(spoken))
        self.budget.charge(usage)

    # -- acting ------------------------------------------------------------------------------
    def _act(self, call: ToolCall) -> list[ChatMessage]:
        skill = self.skills[call.name]
        self.emit(StatusEvent(progress_words(skill), skill=call.name))
        result = self._run_skill(skill, call)
        self.citations += result.citations
        if result.status:
            self.emit(StatusEvent(result.status, skill=call.name))
        content = truncate_tool_output(result.content, self.limits.tool_output_chars)
        return [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage("tool", content, tool_call_id=call.id, citations=tuple(result.citations)),
        ]

    def _run_skill(self, skill: Skill, call: ToolCall) -> SkillResult:
        """The skill's result, or an error the model can read and recover from."""
        context = self._skill_context()
        timeout = min(self.limits.skill_timeout_s, max(0.1, self.budget.remaining_s()))
        began = time.perf_counter()
        future = _SKILL_POOL.submit(skill.run, call.arguments, context)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            context.cancel.set()
            self._note("skill_timeout", f"{call.name} did not finish within {timeout:.0f} s")
            return SkillResult(f"error: {call.name} did not finish within {timeout:.0f} s")
        except AutoragError as exc:
            return SkillResult(f"error: {exc.message}")
        finally:
            self._external_s += time.perf_counter() - began

    def _unknown_skill(self, call: ToolCall) -> list[ChatMessage]:
        known = ", ".join(self.skills) or "none"
        self._note("unknown_skill", f"the model asked for {call.name!r}")
        return [
            ChatMessage("assistant", tool_calls=(call,)),
            ChatMessage(
                "tool",
                f"error: there is no tool named {call.name!r}. Available tools: {known}.",
                tool_call_id=call.id,
            ),
        ]

    # -- planning and endings -------------------------------------------------------------------
    def _plan_mode(self, request: AgentRequest) -> bool:
        return self.config.plan_mode if request.plan_mode is None else request.plan_mode

    def _plan(self, request: AgentRequest) -> str | None:
        messages = [
            ChatMessage("system", f"{PLAN_INSTRUCTION}\nTools: {', '.join(self.skills)}."),
            ChatMessage("user", request.question),
        ]
        decision = self._decide_silently(messages)
        plan = decision.text.strip()
        if plan:
            self.emit(PlanEvent(plan))
        return plan or None

    def _decide_silently(self, messages: Sequence[ChatMessage]) -> _Decision:
        """A call whose text is not part of the answer (the plan)."""
        emit = self.emit
        self.emit = _hold_tokens(emit)
        try:
            return self._decide(messages, ())
        finally:
            self.emit = emit

    def _system(self, request: AgentRequest, plan: str | None) -> str:
        prompt = system_prompt(
            self.config,
            workspace=self.app.info.name,
            skills=list(self.skills),
            custom_instructions=request.custom_instructions,
            plan=plan,
        )
        if request.archive:
            prompt += "\n\n" + ARCHIVE_NOTE.format(archive=request.archive)
        if request.rag_context:
            prompt += "\n\n" + reference_context(request.rag_context)
        return prompt

    def _final_answer(self, messages: list[ChatMessage]) -> str:
        """Tools off: answer from what was found."""
        if self._watchdog():
            return ""
        closing = [*messages, ChatMessage("system", FINAL_ANSWER_NOW)]
        prompt = truncate_context_to_byte_budget(
            closing, self.limits.context_bytes, self.limits.keep_last_messages
        )
        return self._decide(prompt or closing[-self.limits.keep_last_messages :], ()).text

    def _finish(self, text: str, reason: AbortReason) -> str:
        if reason in STOPPED:
            return self._append(text, f"(Stopped: {STOPPED[reason]}.)")
        return text

    def _disclaim(self, text: str, grounded: list[Citation]) -> bool:
        """An answer with no source gets the disclaimer, unless it says itself that
        nothing was found (one message, not two saying the same)."""
        if text.strip() == NO_ANSWER:
            return False
        return self.config.citation_required and needs_disclaimer(text, grounded)

    def _append(self, text: str, note: str) -> str:
        """Add a line to the answer, streaming it like the rest."""
        addition = f"\n\n{note}" if text else note
        self.emit(TokenEvent(addition))
        return text + addition

    def _note(self, code: str, message: str) -> None:
        self.diagnostics.append(Diagnostic(code, message, "warning"))


def writes_calls_as_text(target: Target) -> bool:
    """Whether the target's text may be a tool call written out (small local models do
    that); a provider says it never does with ``writes_tool_calls_as_text = False``."""
    return bool(getattr(target.provider, "writes_tool_calls_as_text", True))


def _data(messages: Sequence[ChatMessage]) -> list[str]:
    """What the model was given as material, not as instructions: every message but the
    system prompt (the conversation, tool results) and every source a tool returned."""
    texts = [m.content for m in messages if m.role != "system" and m.content]
    texts += [c.text for m in messages for c in m.citations if c.text]
    return texts


def _close(stream: Iterator[LLMDelta]) -> None:
    """Stop a generation: closing the generator closes the HTTP stream under it."""
    close = getattr(stream, "close", None)
    if close is not None:
        close()


def _hold_tokens(emit: Emit) -> Emit:
    def filtered(event: Any) -> None:
        if not isinstance(event, TokenEvent):
            emit(event)

    return filtered
