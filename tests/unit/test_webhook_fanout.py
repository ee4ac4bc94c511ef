"""FanOut: an event's webhook POSTs one after another while quick, side by side once slow.

No timing is asserted: slowness is a call blocked on an event that only another call of
the same batch sets, which can happen only once the calls run side by side.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from autorag.webhooks.fanout import FanOut

WAIT_S = 30.0  # a bound for a hang, never reached when the code is right


@pytest.fixture
def fan_out() -> Iterator[FanOut]:
    made = FanOut(threads=8, name="test-fan-out", hedge_after_s=0.01)
    yield made
    made.close()


def test_quick_calls_run_in_order_in_the_callers_thread() -> None:
    """Quick: well within the hedge (set long, so that a busy machine cannot make them
    late)."""
    fan_out = FanOut(threads=8, name="test-quick", hedge_after_s=WAIT_S)
    threads: list[int] = []

    def call(n: int) -> Callable[[], int]:
        def run() -> int:
            threads.append(threading.get_ident())
            return n * n

        return run

    assert fan_out.run([call(n) for n in range(5)]) == [0, 1, 4, 9, 16]
    assert threads == [threading.get_ident()] * 5
    assert fan_out.run([]) == []
    fan_out.close()


def test_a_call_that_hangs_does_not_hold_back_the_others(fan_out: FanOut) -> None:
    """The first call waits until the last one ran: one after another it never would."""
    last_ran = threading.Event()

    def first() -> str:
        assert last_ran.wait(WAIT_S), "the calls after a hanging one were never started"
        return "first"

    def last() -> str:
        last_ran.set()
        return "last"

    assert fan_out.run([first, lambda: "middle", last]) == ["first", "middle", "last"]


def test_calls_that_all_wait_for_each_other_run_side_by_side(fan_out: FanOut) -> None:
    barrier = threading.Barrier(4, timeout=WAIT_S)
    assert fan_out.run([barrier.wait for _ in range(4)]) and not barrier.broken


def test_an_exception_reaches_the_caller_after_every_call_ran(fan_out: FanOut) -> None:
    ran: list[int] = []

    def failing() -> int:
        raise ValueError("a bug in one delivery")

    def fine(n: int) -> Callable[[], int]:
        return lambda: ran.append(n) or n

    with pytest.raises(ValueError, match="a bug in one delivery"):
        fan_out.run([fine(0), failing, fine(2)])
    assert sorted(ran) == [0, 2]


def test_every_call_runs_once_when_the_watcher_races_the_caller() -> None:
    """A hedge of zero: the watcher hands calls over while the callers take them."""
    fan_out = FanOut(threads=4, name="test-race", hedge_after_s=0.0)
    counts: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()

    def call(batch: int, n: int) -> Callable[[], int]:
        def run() -> int:
            with lock:
                counts[(batch, n)] += 1
            return n

        return run

    def caller(first: int) -> None:
        for batch in range(first, first + 50):
            assert fan_out.run([call(batch, n) for n in range(6)]) == list(range(6))

    callers = [threading.Thread(target=caller, args=(c * 1000,), daemon=True) for c in range(4)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(WAIT_S)
    assert not any(thread.is_alive() for thread in callers), "a batch never finished"
    fan_out.close()
    assert len(counts) == 4 * 50 * 6
    assert set(counts.values()) == {1}
