"""The parts of ``autorag eval chat`` that need no model or server: answer timelines,
summaries, goals, and reading answers from the service and from the SSE stream."""

from __future__ import annotations

import json
from typing import Any, cast

import httpx
import pytest

from autorag.agent.events import CitationsEvent, Emit, StatusEvent, TokenEvent
from autorag.agent.orchestrator import AgentResult
from autorag.chat.service import ChatOutcome, ChatService, ChatTurn
from autorag.context import AppContext
from autorag.errors import InvalidInput, Unavailable
from autorag.eval.chat_bench import (
    GOAL_OVERHEAD_PER_ITERATION_MS,
    GOAL_TTFT_P50_MS,
    PHASES,
    WARMUP_QUESTIONS,
    Answered,
    Timeline,
    answer_in_process,
    answer_over_http,
    check_goals,
    phases_p50,
    split_questions,
    summarize_http,
    summarize_in_process,
)
from autorag.llm.base import Usage

PATH = "/api/workspaces/beir-scifact/chat/stream"


def _timeline(*, headers: float | None = None, shift: float = 0.0) -> Timeline:
    """Started at 0 s; search at 0.1–0.13 s, first token at 0.33 s, done at 0.335 s."""
    timeline = Timeline(0.0 + shift, headers=None if headers is None else headers + shift)
    timeline.status("rag_search", 0.100 + shift)
    timeline.status("rag_search", 0.130 + shift)
    timeline.token(0.330 + shift)
    timeline.token(0.332 + shift)  # later tokens change nothing
    timeline.done = 0.335 + shift
    return timeline


def test_timeline_phases_add_up_to_the_whole_answer() -> None:
    phases = _timeline().phases()
    assert phases is not None
    assert list(phases) == list(PHASES[1:])  # no HTTP response: no headers phase
    assert [round(v, 6) for v in phases.values()] == [100.0, 30.0, 200.0, 5.0]
    over_http = _timeline(headers=0.004).phases()
    assert over_http is not None and list(over_http) == list(PHASES)
    assert over_http["response headers"] == pytest.approx(4.0)
    assert over_http["until the search"] == pytest.approx(96.0)
    assert sum(over_http.values()) == pytest.approx(335.0)


def test_timeline_ignores_other_skills_and_is_incomplete_without_every_point() -> None:
    timeline = Timeline(0.0)
    timeline.status(None, 0.01)  # a fallback notice
    timeline.status("workspace_memory", 0.02)
    assert timeline.search_started is None
    timeline.status("rag_search", 0.05)
    timeline.status("rag_search", 0.06)
    timeline.status("rag_search", 0.07)  # a second search: the first one is timed
    assert (timeline.search_started, timeline.search_done) == (0.05, 0.06)
    assert timeline.phases() is None  # no token, not done
    assert timeline.since_start_ms(None) is None
    assert Timeline(1.0).since_start_ms(1.25) == pytest.approx(250.0)


def test_phase_medians_use_complete_answers_only() -> None:
    incomplete = Timeline(0.0)
    medians = phases_p50([_timeline(), _timeline(shift=5.0), incomplete])
    assert medians["search"] == pytest.approx(30.0)
    assert phases_p50([incomplete]) == {}


def test_in_process_summary_divides_overhead_by_iterations() -> None:
    answers = [
        Answered(_timeline(), iterations=2, overhead_ms=4.0),
        Answered(_timeline(), iterations=2, overhead_ms=8.0),
        Answered(_timeline(), iterations=1, overhead_ms=3.0),
        Answered(Timeline(0.0), error="abort wallclock", iterations=5, overhead_ms=900.0),
    ]
    result = summarize_in_process(answers)
    assert (result.answers, result.ok, result.errors) == (4, 3, 1)
    assert result.error_kinds == {"abort wallclock": 1}
    assert result.iterations == {1: 1, 2: 2}
    assert result.overhead_per_iteration.p50_ms == pytest.approx(3.0)  # of 2, 4, 3
    assert result.overhead_per_answer.p50_ms == pytest.approx(4.0)
    assert result.first_token.p50_ms == pytest.approx(330.0)
    assert result.answer.max_ms == pytest.approx(335.0)


def test_http_summary_times_only_successful_answers() -> None:
    answers = [
        Answered(_timeline(headers=0.005)),
        Answered(Timeline(0.0, headers=0.002), error="HTTP 500"),
        Answered(Timeline(0.0), error="ReadTimeout"),
    ]
    result = summarize_http(answers)
    assert (result.requests, result.ok, result.errors) == (3, 1, 2)
    assert result.error_kinds == {"HTTP 500": 1, "ReadTimeout": 1}
    assert result.headers.p50_ms == pytest.approx(5.0)
    assert result.first_token.count == 1
    assert result.first_token.p50_ms == pytest.approx(330.0)
    assert result.done.p50_ms == pytest.approx(335.0)


def _fast(ttft_s: float = 0.2) -> Timeline:
    timeline = _timeline(headers=0.001)
    timeline.first_token = ttft_s
    return timeline


def test_goals_met_and_missed() -> None:
    quick = summarize_in_process([Answered(_timeline(), iterations=2, overhead_ms=2.0)])
    slow = summarize_in_process(
        [Answered(_timeline(), iterations=2, overhead_ms=2 * GOAL_OVERHEAD_PER_ITERATION_MS + 1)]
    )
    fast_http = summarize_http([Answered(_fast())])
    slow_http = summarize_http([Answered(_fast(GOAL_TTFT_P50_MS / 1000 + 0.001))])
    assert check_goals(quick, fast_http) == {
        "overhead per iteration p50 ≤ 10 ms": True,
        "time to first token p50 ≤ 300 ms (HTTP)": True,
        "no errors": True,
    }
    assert list(check_goals(slow, slow_http).values()) == [False, False, True]
    failing = summarize_http([Answered(_fast()), Answered(Timeline(0.0), error="HTTP 500")])
    assert check_goals(quick, failing)["no errors"] is False


def test_goals_are_missed_when_nothing_was_answered() -> None:
    nothing_inside = summarize_in_process([Answered(Timeline(0.0), error="unavailable")])
    nothing_over_http = summarize_http([])
    assert not any(check_goals(nothing_inside, nothing_over_http).values())


def test_warm_up_questions_are_not_the_timed_ones_when_there_are_others() -> None:
    questions = [f"q{i}" for i in range(10)]
    timed, warmup = split_questions(questions, 4)
    assert timed == ["q0", "q1", "q2", "q3"]
    assert warmup == ["q4", "q5", "q6"][:WARMUP_QUESTIONS]
    timed, warmup = split_questions(questions, 50)  # all of them: warm up on the first
    assert timed == questions and warmup == questions[:WARMUP_QUESTIONS]
    with pytest.raises(InvalidInput):
        split_questions(questions, 0)
    with pytest.raises(InvalidInput):
        split_questions([], 3)


# -- reading answers ---------------------------------------------------------------------
def _result(abort_reason: str = "done", iterations: int = 2) -> AgentResult:
    return AgentResult(
        text="Tides rise. [1]",
        citations=[],
        abort_reason=abort_reason,  # type: ignore[arg-type]
        model_used="extractive/extractive",
        provider_used="extractive",
        usage=Usage(),
        iterations=iterations,
        overhead_ms=1.5,
    )


class _Service:
    """Stands in for ``ChatService``: emits an extractive answer's events."""

    def __init__(self, result: AgentResult | None = None, *, tokens: bool = True) -> None:
        self.result = result or _result()
        self.tokens = tokens
        self.turns: list[ChatTurn] = []

    def answer(self, app: AppContext, turn: ChatTurn, *, emit: Emit, **_: Any) -> ChatOutcome:
        self.turns.append(turn)
        if self.result.provider_used == "down":
            raise Unavailable("no model")
        emit(StatusEvent("Running rag_search", skill="rag_search"))
        emit(StatusEvent("Searched: 6 passages", skill="rag_search"))
        if self.tokens:
            emit(TokenEvent("Tides rise. [1]"))
        emit(CitationsEvent(()))
        return ChatOutcome(self.result, None, None)


def _in_process(service: _Service) -> Answered:
    return answer_in_process(cast(ChatService, service), cast(AppContext, None), "tides?")


def test_an_answer_in_process_is_timed_from_its_events_and_not_stored() -> None:
    service = _Service()
    answered = _in_process(service)
    assert answered.ok and answered.timeline.phases() is not None
    assert (answered.iterations, answered.overhead_ms) == (2, 1.5)
    assert service.turns == [ChatTurn("tides?", store=False)]


def test_failed_answers_in_process() -> None:
    assert _in_process(_Service(_result("wallclock"))).error == "abort wallclock"
    assert _in_process(_Service(tokens=False)).error == "no token"
    down = _result()
    down.provider_used = "down"
    assert _in_process(_Service(down)).error == "unavailable"


def _sse(*events: tuple[str, Any]) -> bytes:
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


STATUS = ("status", {"message": "Running rag_search", "skill": "rag_search"})
SEARCHED = ("status", {"message": "Searched: 6 passages", "skill": "rag_search"})
TOKEN = ("token", {"text": "Tides rise. [1]"})
CITATIONS = ("citations", {"sources": []})
DONE = ("done", {"chatId": 1, "messageId": 2, "abortReason": "done"})


def _over_http(status: int, body: bytes) -> tuple[Answered, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})

    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://test") as client:
        return answer_over_http(client, PATH, "tides?"), seen


def test_an_answer_over_http_is_timed_from_its_events() -> None:
    answered, seen = _over_http(200, _sse(STATUS, SEARCHED, TOKEN, TOKEN, CITATIONS, DONE))
    assert answered.ok
    phases = answered.timeline.phases()
    assert phases is not None and list(phases) == list(PHASES)
    (request,) = seen
    assert request.method == "POST" and request.url.path == PATH
    assert json.loads(request.content) == {"message": "tides?"}


@pytest.mark.parametrize(
    ("status", "events", "error"),
    [
        (503, (), "HTTP 503"),
        (200, (STATUS, ("error", {"code": "unavailable", "status": 503})), "error unavailable"),
        (200, (STATUS, SEARCHED, TOKEN), "no done event"),
        (200, (STATUS, SEARCHED, CITATIONS, DONE), "no token"),
        (200, (TOKEN, ("done", {"abortReason": "wallclock"})), "abort wallclock"),
    ],
)
def test_failed_answers_over_http(
    status: int, events: tuple[tuple[str, Any], ...], error: str
) -> None:
    answered, _seen = _over_http(status, _sse(*events))
    assert answered.error == error


def test_a_broken_connection_is_an_error_not_a_crash() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with httpx.Client(transport=httpx.MockTransport(handler), base_url="http://test") as client:
        assert answer_over_http(client, PATH, "tides?").error == "ConnectError"
