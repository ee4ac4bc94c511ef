"""The orchestrator's watchdogs: budgets, loops, unknown tools, output and context size,
and the per-user concurrency limit."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autorag.agent.budget import (
    TRUNCATION_MARK,
    Budget,
    ConcurrencyLimiter,
    LoopDetector,
    UnknownToolBreaker,
    estimate_prompt_tokens,
    estimate_tokens,
    message_bytes,
    truncate_context_to_byte_budget,
    truncate_tool_output,
)
from autorag.errors import RateLimited
from autorag.llm.base import ChatMessage, ToolCall, Usage

# -- helpers ------------------------------------------------------------------------------


def system(text: str = "You are the assistant.") -> ChatMessage:
    return ChatMessage("system", text)


def user(text: str) -> ChatMessage:
    return ChatMessage("user", text)


def answer(text: str) -> ChatMessage:
    return ChatMessage("assistant", text)


def call(call_id: str, query: str = "q") -> ChatMessage:
    return ChatMessage("assistant", tool_calls=(ToolCall(call_id, "rag_search", {"query": query}),))


def result(call_id: str, content: str) -> ChatMessage:
    return ChatMessage("tool", content, tool_call_id=call_id)


def size(messages: Sequence[ChatMessage]) -> int:
    return sum(map(message_bytes, messages))


# -- Budget -------------------------------------------------------------------------------


def test_a_fresh_budget_is_not_exceeded() -> None:
    budget = Budget(wallclock_s=60, token_limit=1000)
    assert budget.exceeded() is None
    assert budget.usage == Usage()
    assert 0 < budget.remaining_s() <= 60


def test_charge_adds_up_prompt_and_completion_tokens() -> None:
    budget = Budget(wallclock_s=60, token_limit=1000)
    budget.charge(Usage(prompt_tokens=100, completion_tokens=20))
    budget.charge(Usage(prompt_tokens=50, completion_tokens=5))
    assert budget.usage == Usage(prompt_tokens=150, completion_tokens=25)
    assert budget.usage.total == 175


def test_the_token_budget_is_exceeded_once_the_total_reaches_the_limit() -> None:
    budget = Budget(wallclock_s=60, token_limit=100)
    budget.charge(Usage(prompt_tokens=60, completion_tokens=39))
    assert budget.exceeded() is None
    budget.charge(Usage(completion_tokens=1))
    assert budget.exceeded() == "token_budget"


def test_the_wallclock_is_exceeded_once_the_time_is_spent() -> None:
    budget = Budget(wallclock_s=5, token_limit=1000, started=time.monotonic() - 10)
    assert budget.exceeded() == "wallclock"
    assert budget.elapsed_s() >= 10
    assert budget.remaining_s() == 0.0


def test_the_wallclock_is_reported_before_the_token_budget_when_both_are_spent() -> None:
    budget = Budget(wallclock_s=1, token_limit=10, started=time.monotonic() - 5)
    budget.charge(Usage(prompt_tokens=100))
    assert budget.exceeded() == "wallclock"


def test_a_zero_second_wallclock_is_exceeded_at_once() -> None:
    assert Budget(wallclock_s=0, token_limit=1000).exceeded() == "wallclock"


def test_token_estimates_round_bytes_up_to_whole_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("éé") == 1  # four bytes in UTF-8
    # Each message costs its text plus a small framing overhead.
    assert estimate_prompt_tokens([user("abcd"), answer("")]) == (1 + 4) + (0 + 4)


# -- LoopDetector -------------------------------------------------------------------------


def test_the_same_call_trips_the_loop_detector_at_the_configured_repeat() -> None:
    loops = LoopDetector(repeats=3)
    assert loops.record("rag_search", {"query": "pricing"}) is False
    assert loops.record("rag_search", {"query": "pricing"}) is False
    assert loops.record("rag_search", {"query": "pricing"}) is True
    assert loops.record("rag_search", {"query": "pricing"}) is True  # and stays tripped


def test_case_and_whitespace_do_not_make_a_query_new() -> None:
    loops = LoopDetector(repeats=3)
    assert not loops.record("rag_search", {"query": "What is the  refund policy"})
    assert not loops.record("rag_search", {"query": "what is the refund policy "})
    assert loops.record("rag_search", {"query": "  WHAT IS THE\tREFUND\nPOLICY"})


def test_argument_order_does_not_make_a_call_new() -> None:
    loops = LoopDetector(repeats=2)
    assert not loops.record("rag_search", {"query": "x", "top_k": 5})
    assert loops.record("rag_search", {"top_k": 5, "query": "x"})


def test_different_arguments_are_not_a_loop() -> None:
    loops = LoopDetector(repeats=2)
    assert not loops.record("rag_search", {"query": "pricing"})
    assert not loops.record("rag_search", {"query": "refunds"})
    assert not loops.record("rag_search", {"query": "pricing", "top_k": 10})
    assert not loops.record("rag_search", {"query": "pricing plans"})


def test_the_same_arguments_to_another_skill_are_not_a_loop() -> None:
    loops = LoopDetector(repeats=2)
    assert not loops.record("rag_search", {"query": "pricing"})
    assert not loops.record("workspace_memory", {"query": "pricing"})


def test_non_string_arguments_are_compared_as_they_are() -> None:
    loops = LoopDetector(repeats=2)
    assert not loops.record("rag_search", {"query": "x", "top_k": 5})
    assert not loops.record("rag_search", {"query": "x", "top_k": "5"})
    assert loops.record("rag_search", {"query": "X", "top_k": 5})


# -- UnknownToolBreaker -------------------------------------------------------------------


def test_three_unknown_skills_in_a_row_trip_the_breaker() -> None:
    breaker = UnknownToolBreaker()
    assert breaker.unknown() is False
    assert breaker.unknown() is False
    assert breaker.unknown() is True


def test_a_known_skill_in_between_resets_the_consecutive_count() -> None:
    breaker = UnknownToolBreaker()
    assert not breaker.unknown()
    assert not breaker.unknown()
    breaker.known()
    assert breaker.consecutive == 0
    assert not breaker.unknown()
    assert not breaker.unknown()
    assert breaker.total == 4


def test_five_unknown_skills_in_one_answer_trip_the_breaker_even_when_interleaved() -> None:
    breaker = UnknownToolBreaker()
    trips = []
    for _ in range(2):
        trips += [breaker.unknown(), breaker.unknown()]
        breaker.known()
    trips.append(breaker.unknown())  # the fifth, though only the first in a row
    assert trips == [False, False, False, False, True]


def test_the_breaker_limits_are_configurable() -> None:
    breaker = UnknownToolBreaker(consecutive=1, total=10)
    assert breaker.unknown() is True
    lenient = UnknownToolBreaker(consecutive=10, total=2)
    assert lenient.unknown() is False
    assert lenient.unknown() is True


# -- truncate_tool_output -----------------------------------------------------------------


def test_tool_output_within_the_limit_is_kept_as_is() -> None:
    assert truncate_tool_output("short", 100) == "short"
    assert truncate_tool_output("x" * 100, 100) == "x" * 100


def test_long_tool_output_is_cut_to_the_limit_and_marked() -> None:
    text = "".join(str(i % 10) for i in range(1000))
    cut = truncate_tool_output(text, 200)
    assert len(cut) == 200
    assert cut.endswith(TRUNCATION_MARK)
    assert text.startswith(cut[: -len(TRUNCATION_MARK)])


# -- truncate_context_to_byte_budget ------------------------------------------------------


def test_a_context_that_fits_is_returned_unchanged() -> None:
    messages = (system(), user("hi"), answer("hello"), user("question?"))
    fitted = truncate_context_to_byte_budget(messages, size(messages), keep_last=1)
    assert fitted == list(messages)


def test_older_turns_go_first_and_the_system_and_question_stay() -> None:
    old = [user("old question " * 20), answer("old answer " * 20)]
    recent = [user("recent question"), answer("recent answer")]
    messages = [system(), *old, *recent, user("the question?")]
    budget = size([system(), *recent, user("the question?")])
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted == [system(), *recent, user("the question?")]


def test_turns_are_dropped_oldest_first_only_as_far_as_needed() -> None:
    turns = [user(f"turn {i} " * 10) for i in range(5)]
    messages = [system(), *turns, user("the question?")]
    budget = size(messages) - message_bytes(turns[0]) - message_bytes(turns[1])
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted == [system(), *turns[2:], user("the question?")]


def test_turns_outside_the_last_n_go_once_the_context_is_over_budget() -> None:
    messages = [system(), user("a"), answer("b"), user("c"), answer("d"), user("question?")]
    fitted = truncate_context_to_byte_budget(messages, size(messages) - 1, keep_last=2)
    assert fitted == [system(), answer("d"), user("question?")]


def test_the_question_and_the_steps_after_it_are_kept_however_old_the_question_is() -> None:
    messages = [
        system(),
        user("earlier chat " * 30),
        user("the question?"),
        call("c1"),
        result("c1", "first result"),
        call("c2"),
        result("c2", "second result"),
    ]
    fitted = truncate_context_to_byte_budget(messages, size(messages) - 1, keep_last=4)
    assert fitted == [system(), *messages[2:]]


def test_a_tool_result_whose_call_fell_outside_the_kept_tail_is_dropped_too() -> None:
    messages = [
        system(),
        user("the question?"),
        call("c1"),
        result("c1", "first result " * 10),
        call("c2"),
        result("c2", "second result"),
    ]
    # The last three: the first result (without its call), the second call and result.
    fitted = truncate_context_to_byte_budget(messages, size(messages) - 1, keep_last=3)
    assert fitted == [system(), user("the question?"), call("c2"), result("c2", "second result")]


def test_a_tool_result_is_not_kept_when_its_call_was_dropped_as_an_older_turn() -> None:
    old_call, old_result = call("c0", "old " * 50), result("c0", "ok")
    messages = [system(), old_call, old_result, user("the question?")]
    # Dropping the call alone would make it fit: its result must not stay orphaned.
    budget = size(messages) - message_bytes(old_call)
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted == [system(), user("the question?")]


def test_the_longest_tool_result_is_shortened_first() -> None:
    long, short = "L" * 3000, "S" * 1000
    messages = [
        system(),
        user("the question?"),
        call("c1"),
        result("c1", long),
        call("c2"),
        result("c2", short),
    ]
    budget = size(messages) - 1200
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted is not None
    assert size(fitted) <= budget
    first, second = fitted[3].content, fitted[5].content
    assert first.endswith(TRUNCATION_MARK) and first.startswith("L" * 1500)
    assert len(first) < len(long)
    assert second == short  # shortening the longest one was enough


def test_tool_results_are_not_shortened_below_a_useful_minimum() -> None:
    messages = [
        system(),
        user("the question?"),
        call("c1"),
        result("c1", "A" * 3000),
        call("c2"),
        result("c2", "B" * 2000),
    ]
    budget = size(messages) - 3500
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted is not None
    assert size(fitted) <= budget
    assert len(fitted[3].content) == 500  # the longest: down to the minimum
    assert len(fitted[5].content) < 2000 and fitted[5].content.endswith(TRUNCATION_MARK)


def test_a_context_a_few_bytes_over_is_shortened_rather_than_refused() -> None:
    # The truncation mark holds a multi-byte "…": the cut must count bytes, not characters.
    messages = [system(), user("the question?"), call("c1"), result("c1", "x" * 3000)]
    for over in (1, 2, 3, 100, 1000):
        budget = size(messages) - over
        fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
        assert fitted is not None, f"{over} bytes over"
        assert size(fitted) <= budget


def test_non_ascii_tool_results_are_shortened_to_fit_in_bytes() -> None:
    messages = [system(), user("the question?"), call("c1"), result("c1", "日本語" * 1000)]
    budget = size(messages) - 2000
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last=10)
    assert fitted is not None
    assert size(fitted) <= budget


def test_a_tool_result_near_the_minimum_cannot_be_shortened_so_the_context_overflows() -> None:
    messages = [system("s" * 200), user("the question?"), call("c1"), result("c1", "x" * 501)]
    assert truncate_context_to_byte_budget(messages, size(messages) - 1, keep_last=10) is None


def test_none_when_the_system_prompt_and_question_cannot_fit() -> None:
    messages = [system("rules " * 100), user("history"), user("the question " * 50)]
    budget = size([messages[0], messages[2]]) - 1
    assert truncate_context_to_byte_budget(messages, budget, keep_last=1) is None


def test_none_when_even_shortened_tool_results_cannot_fit() -> None:
    messages = [system(), user("the question?"), call("c1"), result("c1", "x" * 5000)]
    budget = size(messages[:3]) + 100  # room for far less than the 500-character minimum
    assert truncate_context_to_byte_budget(messages, budget, keep_last=10) is None


def test_without_a_system_message_the_question_is_still_pinned() -> None:
    messages = [user("old " * 50), answer("reply " * 50), user("the question?")]
    fitted = truncate_context_to_byte_budget(messages, size(messages) - 1, keep_last=1)
    assert fitted == [user("the question?")]


@st.composite
def conversations(draw: st.DrawFn, steps_after_question: bool = True) -> list[ChatMessage]:
    """A system prompt, earlier turns, the question, and this answer's tool steps."""
    messages = [system("s" * draw(st.integers(1, 300)))]
    for turn in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "answer", "tool"]))
        text = "t" * draw(st.integers(0, 2000))
        if kind == "user":
            messages.append(user(text))
        elif kind == "answer":
            messages.append(answer(text))
        else:
            messages += [call(f"c{turn}"), result(f"c{turn}", text)]
    messages.append(user("the question?"))
    for turn in range(draw(st.integers(0, 3 if steps_after_question else 0))):
        text = "r" * draw(st.integers(0, 3000))
        messages += [call(f"after{turn}"), result(f"after{turn}", text)]
    return messages


@settings(max_examples=200, deadline=None)
@given(conversations(), st.integers(0, 20_000), st.integers(1, 10))
def test_a_fitted_context_is_within_budget_and_keeps_what_the_answer_needs(
    messages: list[ChatMessage], budget: int, keep_last: int
) -> None:
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last)
    if fitted is None:
        return
    assert size(fitted) <= budget
    assert fitted[0] == messages[0]
    assert user("the question?") in fitted
    calls = {c.id for m in fitted for c in m.tool_calls}
    assert all(m.tool_call_id in calls for m in fitted if m.role == "tool")


@settings(max_examples=200, deadline=None)
@given(conversations(steps_after_question=False), st.integers(1, 10))
def test_a_question_asked_last_always_fits_when_system_and_question_do(
    messages: list[ChatMessage], keep_last: int
) -> None:
    budget = size([messages[0], messages[-1]])
    fitted = truncate_context_to_byte_budget(messages, budget, keep_last)
    assert fitted == [messages[0], messages[-1]]


# -- ConcurrencyLimiter -------------------------------------------------------------------


def test_a_user_may_run_up_to_the_limit_then_is_refused_with_a_retry_hint() -> None:
    limiter = ConcurrencyLimiter(limit=2)
    limiter.acquire("alice")
    limiter.acquire("alice")
    assert limiter.running("alice") == 2
    with pytest.raises(RateLimited) as refused:
        limiter.acquire("alice")
    assert refused.value.retry_after == 2
    assert refused.value.status == 429
    assert "limit 2" in refused.value.message
    assert limiter.running("alice") == 2  # a refusal takes no slot


def test_releasing_frees_a_slot() -> None:
    limiter = ConcurrencyLimiter(limit=1)
    release = limiter.acquire("alice")
    release()
    assert limiter.running("alice") == 0
    limiter.acquire("alice")
    assert limiter.running("alice") == 1


def test_release_is_idempotent_and_never_frees_another_answers_slot() -> None:
    limiter = ConcurrencyLimiter(limit=2)
    first = limiter.acquire("alice")
    limiter.acquire("alice")
    first()
    first()
    first()
    assert limiter.running("alice") == 1


def test_users_are_limited_independently() -> None:
    limiter = ConcurrencyLimiter(limit=1)
    limiter.acquire("alice")
    limiter.acquire("bob")
    with pytest.raises(RateLimited):
        limiter.acquire("alice")
    assert limiter.running("alice") == 1
    assert limiter.running("bob") == 1
    assert limiter.running("carol") == 0


def test_concurrent_acquires_never_exceed_the_limit() -> None:
    limiter = ConcurrencyLimiter(limit=3)
    start = threading.Barrier(20)
    outcomes: list[str] = []
    lock = threading.Lock()

    def attempt() -> None:
        start.wait()
        try:
            limiter.acquire("alice")
            outcome = "ok"
        except RateLimited:
            outcome = "refused"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    assert outcomes.count("ok") == 3
    assert outcomes.count("refused") == 17
    assert limiter.running("alice") == 3


def test_concurrent_acquire_and_release_balance_out() -> None:
    limiter = ConcurrencyLimiter(limit=4)

    def work() -> None:
        for _ in range(200):
            try:
                release = limiter.acquire("alice")
            except RateLimited:
                continue
            assert limiter.running("alice") <= 4
            release()
            release()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert limiter.running("alice") == 0
