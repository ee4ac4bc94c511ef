"""``autorag eval chat``: the agent chat with the extractive provider, in-process and over SSE.

A BEIR corpus is indexed into a throwaway workspace exactly as ``autorag eval api`` does
it, and the same N test-split questions are answered one at a time twice:

* in-process, through ``ChatService.answer`` (the default extractive provider, nothing
  stored): the orchestration overhead per iteration (``AgentResult.overhead_ms`` over
  ``iterations``: the run's time minus model and skill time), the time to the first
  token and to the whole answer;
* through HTTP: ``POST /api/workspaces/{ws}/chat/stream`` on ``autorag serve`` in its
  own process, with one keep-alive client parsing the server-sent events: the time to
  the first ``token`` event (TTFT) and to ``done``, and the errors.

Each side first answers a few other questions (the first loads the model). Both answer
with a fresh, empty embedding cache of their own: the extractive provider embeds the
question and the found sentences through the cache, so a warm one (left by an earlier
run, or by the other side) would time repeat questions rather than new ones.

The events of every answer also say where its time went: until the search starts (the
first decision; over HTTP also the request, auth and the chat stored), the search,
until the first token (the extractive answer: sentences embedded and ranked), and the
rest (citations grounded, ``done``). Goals are reported as met or missed, never asserted.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import connect_sse

from autorag.agent.events import AgentEvent, StatusEvent, TokenEvent
from autorag.agent.skills.rag_search import SPEC as RAG_SEARCH_SPEC
from autorag.chat.service import ChatService, ChatTurn
from autorag.context import AppContext, open_context
from autorag.errors import AutoragError, InvalidInput
from autorag.eval.api_bench import (
    REQUEST_TIMEOUT_S,
    LatencyStats,
    ServerBench,
    _admin_key,
    latency_stats,
    running_server,
    server_bench,
)
from autorag.eval.beir import BeirDataset
from autorag.eval.metrics import percentile
from autorag.eval.runner import beir_workspace, index_corpus
from autorag.ingest.pipeline import IngestOutcome
from autorag.runtime import server_model_threads

# The goals ("Numbers"), reported as met or missed, never asserted here.
GOAL_OVERHEAD_PER_ITERATION_MS = 10.0  # p50, in-process, model and skill time excluded
GOAL_TTFT_P50_MS = 300.0  # time to the first token through the HTTP API

DEFAULT_QUERIES = 100
WARMUP_QUESTIONS = 3  # per side, before timing: the first answer loads the model
CACHE_DIR_ENV = "AUTORAG_EMBEDDING__CACHE_DIR"
RAG_SEARCH = RAG_SEARCH_SPEC.name
# The phases of an answer, in order (see ``Timeline.phases``).
PHASES = ("response headers", "until the search", "search", "until the first token", "rest")


@dataclass
class Timeline:
    """When (``time.perf_counter`` seconds) one answer reached each point; None: never."""

    started: float
    headers: float | None = None  # the HTTP response's headers (HTTP only)
    search_started: float | None = None  # the first rag_search status
    search_done: float | None = None  # the second one ("Searched: n passages")
    first_token: float | None = None
    done: float | None = None  # the result returned, or the ``done`` event

    def status(self, skill: str | None, now: float) -> None:
        if skill != RAG_SEARCH:
            return
        if self.search_started is None:
            self.search_started = now
        elif self.search_done is None:
            self.search_done = now

    def token(self, now: float) -> None:
        if self.first_token is None:
            self.first_token = now

    def since_start_ms(self, moment: float | None) -> float | None:
        return None if moment is None else (moment - self.started) * 1000

    def phases(self) -> dict[str, float] | None:
        """Milliseconds in each of ``PHASES`` (no headers: no such phase); None unless the
        answer went through all of them."""
        marks = [self.search_started, self.search_done, self.first_token, self.done]
        if None in marks:
            return None
        points = [m for m in [self.started, self.headers, *marks] if m is not None]
        names = PHASES if self.headers is not None else PHASES[1:]
        return {
            name: (end - begin) * 1000
            for name, (begin, end) in zip(names, pairwise(points), strict=True)
        }


@dataclass(frozen=True)
class Answered:
    """One answer of the benchmark."""

    timeline: Timeline
    error: str | None = None  # None: answered in full
    iterations: int = 0  # in-process only
    overhead_ms: float = 0.0  # in-process only: the run's orchestration time

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class InProcessResult:
    answers: int
    ok: int
    errors: int
    error_kinds: dict[str, int]
    iterations: dict[int, int]  # iterations per answer -> answers
    overhead_per_iteration: LatencyStats  # the goal's figure
    overhead_per_answer: LatencyStats
    first_token: LatencyStats
    answer: LatencyStats
    phases_p50_ms: dict[str, float]


@dataclass
class HttpResult:
    requests: int
    ok: int
    errors: int
    error_kinds: dict[str, int]
    headers: LatencyStats  # the response's headers: request, auth, chat found or stored
    first_token: LatencyStats  # the goal's figure (TTFT)
    done: LatencyStats
    phases_p50_ms: dict[str, float]


@dataclass
class ChatBenchReport(ServerBench):  # queries: answered on each side, warm-up excluded
    in_process: InProcessResult
    http: HttpResult
    goals: dict[str, bool] = field(default_factory=dict)


# -- pure parts -----------------------------------------------------------------------
def _ms(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def phases_p50(timelines: Sequence[Timeline]) -> dict[str, float]:
    """The median of each phase over the answers that went through all of them."""
    complete = [p for p in (t.phases() for t in timelines) if p is not None]
    if not complete:
        return {}
    return {name: percentile([p[name] for p in complete], 50) for name in complete[0]}


def _error_kinds(answers: Sequence[Answered]) -> dict[str, int]:
    return dict(sorted(Counter(a.error for a in answers if a.error is not None).items()))


def summarize_in_process(answers: Sequence[Answered]) -> InProcessResult:
    ok = [a for a in answers if a.ok]
    per_iteration = [a.overhead_ms / a.iterations for a in ok if a.iterations > 0]
    return InProcessResult(
        answers=len(answers),
        ok=len(ok),
        errors=len(answers) - len(ok),
        error_kinds=_error_kinds(answers),
        iterations=dict(sorted(Counter(a.iterations for a in ok).items())),
        overhead_per_iteration=latency_stats(per_iteration),
        overhead_per_answer=latency_stats([a.overhead_ms for a in ok]),
        first_token=latency_stats(
            _ms([a.timeline.since_start_ms(a.timeline.first_token) for a in ok])
        ),
        answer=latency_stats(_ms([a.timeline.since_start_ms(a.timeline.done) for a in ok])),
        phases_p50_ms=phases_p50([a.timeline for a in ok]),
    )


def summarize_http(answers: Sequence[Answered]) -> HttpResult:
    ok = [a for a in answers if a.ok]
    return HttpResult(
        requests=len(answers),
        ok=len(ok),
        errors=len(answers) - len(ok),
        error_kinds=_error_kinds(answers),
        headers=latency_stats(_ms([a.timeline.since_start_ms(a.timeline.headers) for a in ok])),
        first_token=latency_stats(
            _ms([a.timeline.since_start_ms(a.timeline.first_token) for a in ok])
        ),
        done=latency_stats(_ms([a.timeline.since_start_ms(a.timeline.done) for a in ok])),
        phases_p50_ms=phases_p50([a.timeline for a in ok]),
    )


def check_goals(in_process: InProcessResult, http: HttpResult) -> dict[str, bool]:
    """The issue's numbers, and no failed answers on either side."""
    return {
        f"overhead per iteration p50 ≤ {GOAL_OVERHEAD_PER_ITERATION_MS:g} ms": (
            in_process.ok > 0
            and in_process.overhead_per_iteration.p50_ms <= GOAL_OVERHEAD_PER_ITERATION_MS
        ),
        f"time to first token p50 ≤ {GOAL_TTFT_P50_MS:g} ms (HTTP)": (
            http.ok > 0 and http.first_token.p50_ms <= GOAL_TTFT_P50_MS
        ),
        "no errors": (
            in_process.ok > 0 and http.ok > 0 and in_process.errors == 0 and http.errors == 0
        ),
    }


def split_questions(questions: Sequence[str], count: int) -> tuple[list[str], list[str]]:
    """The first ``count`` questions to time, and warm-up questions: others when there
    are any left, else the first ones again."""
    if count < 1:
        raise InvalidInput(f"the number of queries must be at least 1, got {count}")
    if not questions:
        raise InvalidInput("no questions to ask")
    timed = list(questions[:count])
    rest = list(questions[count:])
    return timed, (rest or timed)[:WARMUP_QUESTIONS]


# -- the benchmark --------------------------------------------------------------------
def run_chat_bench(
    dataset: BeirDataset,
    *,
    split: str,
    queries: int = DEFAULT_QUERIES,
    workdir: Path | None = None,
    on_ingest: Callable[[IngestOutcome], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    on_answer: Callable[[], None] | None = None,
) -> ChatBenchReport:
    timed, warmup = split_questions(list(dataset.queries.values()), queries)
    phase = on_phase or (lambda _name: None)
    answered = on_answer or (lambda: None)
    load_average = os.getloadavg()
    # As in `eval api`: the server gets this shell's environment, not the model-thread
    # limit set below (which the server sets for itself).
    server_env = dict(os.environ)
    with (
        tempfile.TemporaryDirectory(prefix="autorag-chat-bench-") as caches,
        server_model_threads(),
        beir_workspace(dataset, workdir=workdir) as app,
    ):
        ingest_seconds = index_corpus(app, dataset, on_ingest)
        key = _admin_key(app)
        phase(f"answering {len(timed)} questions in-process")
        with answer_context(app, Path(caches) / "in-process") as chat_app:
            in_process = measure_in_process(chat_app, timed, warmup, answered)
        server_env[CACHE_DIR_ENV] = str(Path(caches) / "server")
        phase("starting the server")
        with running_server(app.workspace.root, env=server_env) as server:
            phase(f"answering {len(timed)} questions through the SSE endpoint")
            with httpx.Client(
                base_url=server.base_url,
                headers={"Authorization": f"Bearer {key}"},
                timeout=REQUEST_TIMEOUT_S,
            ) as client:
                path = f"/api/workspaces/{app.info.name}/chat/stream"
                http = measure_http(client, path, timed, warmup, answered)
        return ChatBenchReport(
            **server_bench(
                app,
                dataset,
                split=split,
                queries=len(timed),
                load_average=load_average,
                ingest_seconds=ingest_seconds,
                server=server,
            ),
            in_process=in_process,
            http=http,
            goals=check_goals(in_process, http),
        )


@contextmanager
def answer_context(app: AppContext, cache_dir: Path) -> Iterator[AppContext]:
    """``app``'s workspace opened again, with an empty embedding cache in ``cache_dir``."""
    chat_app = open_context(
        app.workspace, workspace=app.info.name, embedding={"cache_dir": str(cache_dir)}
    )
    try:
        yield chat_app
    finally:
        chat_app.close()


def measure_in_process(
    app: AppContext,
    questions: Sequence[str],
    warmup: Sequence[str],
    on_answer: Callable[[], None],
) -> InProcessResult:
    service = ChatService.for_context(app)
    for question in warmup:
        answer_in_process(service, app, question)
    answers = []
    for question in questions:
        answers.append(answer_in_process(service, app, question))
        on_answer()
    return summarize_in_process(answers)


def answer_in_process(service: ChatService, app: AppContext, question: str) -> Answered:
    timeline = Timeline(time.perf_counter())

    def emit(event: AgentEvent) -> None:
        if isinstance(event, TokenEvent):
            timeline.token(time.perf_counter())
        elif isinstance(event, StatusEvent):
            timeline.status(event.skill, time.perf_counter())

    try:
        outcome = service.answer(app, ChatTurn(question, store=False), emit=emit)
    except AutoragError as exc:
        return Answered(timeline, error=exc.code)
    timeline.done = time.perf_counter()
    result = outcome.result
    error = None
    if result.abort_reason != "done":
        error = f"abort {result.abort_reason}"
    elif timeline.first_token is None:
        error = "no token"
    return Answered(timeline, error, result.iterations, result.overhead_ms)


def measure_http(
    client: httpx.Client,
    path: str,
    questions: Sequence[str],
    warmup: Sequence[str],
    on_answer: Callable[[], None],
) -> HttpResult:
    for question in warmup:
        answer_over_http(client, path, question)
    answers = []
    for question in questions:
        answers.append(answer_over_http(client, path, question))
        on_answer()
    return summarize_http(answers)


def answer_over_http(client: httpx.Client, path: str, question: str) -> Answered:
    """One streamed answer, timed as its events arrive."""
    timeline = Timeline(time.perf_counter())
    done: Any = None
    try:
        with connect_sse(client, "POST", path, json={"message": question}) as source:
            timeline.headers = time.perf_counter()
            if source.response.status_code != 200:
                return Answered(timeline, error=f"HTTP {source.response.status_code}")
            for event in source.iter_sse():
                now = time.perf_counter()
                if event.event == "token":
                    timeline.token(now)
                elif event.event == "status":
                    timeline.status(_field(event.json(), "skill"), now)
                elif event.event == "error":
                    return Answered(timeline, error=f"error {_field(event.json(), 'code')}")
                elif event.event == "done":
                    timeline.done, done = now, event.json()
                    break
    except httpx.HTTPError as exc:
        return Answered(timeline, error=type(exc).__name__)
    if timeline.done is None:
        return Answered(timeline, error="no done event")
    abort = _field(done, "abortReason")
    if abort != "done":
        return Answered(timeline, error=f"abort {abort}")
    if timeline.first_token is None:
        return Answered(timeline, error="no token")
    return Answered(timeline)


def _field(data: Any, name: str) -> str | None:
    """A string field of an event's JSON object (None: missing or not a string)."""
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
