"""Login rate limiting, in memory and thread-safe: a sliding window of attempts per key,
and per (username, address) failure backoff."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from autorag.errors import RateLimited

# Above this many tracked keys, a sweep drops the idle ones (bounds memory under a
# spray of made-up usernames).
_SWEEP_ABOVE = 10_000


class SlidingWindowLimiter:
    def __init__(
        self,
        limit: int,
        window_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window = window_seconds
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def attempt(self, *keys: str) -> None:
        """Count one attempt against every key, or raise RateLimited if any is spent.

        A refused attempt is not counted, so a client that waits as told gets through.
        """
        with self._lock:
            now = self._clock()
            windows = [self._window(key, now) for key in keys]
            waits = [w[0] + self.window - now for w in windows if len(w) >= self.limit]
            if waits:
                retry_after = max(1, math.ceil(max(waits)))
                raise RateLimited(
                    f"too many login attempts; retry in {retry_after} s", retry_after=retry_after
                )
            for window in windows:
                window.append(now)
            if len(self._hits) > _SWEEP_ABOVE:
                self._sweep(now)

    def _window(self, key: str, now: float) -> deque[float]:
        window = self._hits.setdefault(key, deque())
        while window and window[0] <= now - self.window:
            window.popleft()
        return window

    def _sweep(self, now: float) -> None:
        for key in [k for k, w in self._hits.items() if not w or w[-1] <= now - self.window]:
            del self._hits[key]


# Failed logins a (username, address) pair gets before backing off, the first wait, the
# longest, and how long a pair stays remembered after its last failure.
FREE_FAILURES = 5
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 15 * 60.0
FORGET_AFTER_S = 60 * 60.0


class _Failures:
    __slots__ = ("count", "last", "locked_until")

    def __init__(self) -> None:
        self.count = 0
        self.last = 0.0
        self.locked_until = 0.0


class LoginGuard:
    """Login limits: attempts per client address (a sliding window), and failures per
    (username, address) pair with exponential backoff.

    Wrong passwords lock out the pair only: an attacker elsewhere can slow down their
    own guesses, never keep the user from logging in from the user's own address.
    """

    def __init__(
        self, attempts_per_minute: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_address = SlidingWindowLimiter(attempts_per_minute, 60.0, clock)
        self._clock = clock
        self._failures: dict[tuple[str, str], _Failures] = {}
        self._lock = threading.Lock()

    def attempt(self, address: str, username: str) -> None:
        """Let one login attempt through, or raise RateLimited."""
        key = (username.lower(), address)
        with self._lock:
            now = self._clock()
            entry = self._failures.get(key)
            if entry is not None and entry.locked_until > now:
                retry_after = max(1, math.ceil(entry.locked_until - now))
                raise RateLimited(
                    f"too many failed logins for this user from this address; "
                    f"retry in {retry_after} s",
                    retry_after=retry_after,
                )
        self.per_address.attempt(f"ip:{address}")

    def failed(self, address: str, username: str) -> None:
        """A wrong password (or unknown user) from ``address``."""
        key = (username.lower(), address)
        with self._lock:
            now = self._clock()
            entry = self._failures.get(key)
            if entry is None or entry.last <= now - FORGET_AFTER_S:
                entry = self._failures[key] = _Failures()
            entry.count += 1
            entry.last = now
            over = entry.count - FREE_FAILURES
            if over > 0:
                wait = min(BACKOFF_BASE_S * 2 ** min(over - 1, 30), BACKOFF_MAX_S)
                entry.locked_until = now + wait
            if len(self._failures) > _SWEEP_ABOVE:
                self._sweep(now)

    def succeeded(self, address: str, username: str) -> None:
        with self._lock:
            self._failures.pop((username.lower(), address), None)

    def _sweep(self, now: float) -> None:
        idle = [
            k
            for k, e in self._failures.items()
            if e.last <= now - FORGET_AFTER_S and e.locked_until <= now
        ]
        for key in idle:
            del self._failures[key]
