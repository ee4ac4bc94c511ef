"""The login rate limiter: a sliding window per key, thread-safe."""

from __future__ import annotations

import threading

import pytest

from autorag.auth.ratelimit import SlidingWindowLimiter
from autorag.errors import RateLimited


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_window_slides() -> None:
    clock = Clock()
    limiter = SlidingWindowLimiter(3, window_seconds=60, clock=clock)
    for second in (0, 10, 20):
        clock.now = second
        limiter.attempt("ip:1")
    clock.now = 59
    with pytest.raises(RateLimited) as refused:
        limiter.attempt("ip:1")
    assert refused.value.retry_after == 1 and refused.value.status == 429
    clock.now = 60  # the attempt at 0 left the window
    limiter.attempt("ip:1")
    with pytest.raises(RateLimited) as again:
        limiter.attempt("ip:1")
    assert again.value.retry_after == 10


def test_any_spent_key_refuses_and_a_refusal_is_not_counted() -> None:
    clock = Clock()
    limiter = SlidingWindowLimiter(2, window_seconds=60, clock=clock)
    limiter.attempt("ip:1", "user:alice")
    limiter.attempt("ip:2", "user:alice")
    with pytest.raises(RateLimited):
        limiter.attempt("ip:3", "user:alice")  # the username is spent from any address
    limiter.attempt("ip:3", "user:bob")  # ip:3's refused attempt did not count
    limiter.attempt("ip:3", "user:carol")
    with pytest.raises(RateLimited):
        limiter.attempt("ip:3", "user:dave")  # and the address is spent for any username


def test_idle_keys_are_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("autorag.auth.ratelimit._SWEEP_ABOVE", 10)
    clock = Clock()
    limiter = SlidingWindowLimiter(5, window_seconds=60, clock=clock)
    for n in range(10):
        limiter.attempt(f"user:{n}")
    clock.now = 61
    limiter.attempt("user:new")
    assert len(limiter._hits) <= 2


def test_concurrent_attempts_never_exceed_the_limit() -> None:
    limiter = SlidingWindowLimiter(50, window_seconds=60)
    allowed: list[int] = []
    barrier = threading.Barrier(8)

    def hammer() -> None:
        barrier.wait()
        for _ in range(40):
            try:
                limiter.attempt("ip:1")
                allowed.append(1)
            except RateLimited:
                pass

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(allowed) == 50
