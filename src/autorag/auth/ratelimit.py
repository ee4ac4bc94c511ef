"""Login rate limiting: a sliding window of attempts per key, in memory, thread-safe."""

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
