"""Running an event's webhook deliveries side by side, for little CPU: ``FanOut``.

A thread per POST costs more CPU than a POST to a receiver that answers at once (on
loopback, five webhooks: 3.0 ms of CPU an event with a thread each, 1.8 ms one after the
other; the thread wakes and the interpreter lock passed back and forth make the
difference), and that CPU is taken from the searches sharing the machine. So the calls
run one after another in the caller's thread while they are quick, and once a batch is
``hedge_after_s`` old, the calls not started yet go to a pool's threads at once: a slow
or hanging receiver, or a retry waiting its turn, holds the webhooks after it back by at
most that long. One watcher thread, asleep while no batch runs, does the handing over.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")


class FanOut:
    """``run(calls)``: their results in order, each call started at most
    ``hedge_after_s`` after the batch (see the module docstring). Thread-safe."""

    def __init__(self, *, threads: int, name: str, hedge_after_s: float) -> None:
        self._pool = _DaemonPool(threads, name)
        self._watch = _Watch(hedge_after_s, self._pool, f"{name}-watch")

    def run(self, calls: Sequence[Callable[[], _T]]) -> list[_T]:
        """Every call's result, in order; the first call's exception, if any raised,
        once all of them are done."""
        batch = _Batch(calls)
        self._watch.add(batch)
        try:
            while (index := batch.take()) is not None:
                batch.run(index)
            return batch.results()
        finally:
            self._watch.remove(batch)

    def close(self) -> None:
        """Let the threads end once done with their calls (not waited for)."""
        self._watch.close()
        self._pool.shutdown()


class _Batch(Generic[_T]):
    """Calls taken one at a time, by the caller's thread or handed to the pool."""

    def __init__(self, calls: Sequence[Callable[[], _T]]) -> None:
        self._calls = list(calls)
        self._results: list[_T | None] = [None] * len(self._calls)
        self._errors: list[BaseException] = []
        self._next = 0  # the first call not taken yet
        self._left = len(self._calls)  # calls not finished yet
        self._lock = threading.Lock()
        self._finished = threading.Event()
        if not self._calls:
            self._finished.set()
        self.deadline = 0.0  # monotonic time after which the calls left go to the pool

    def take(self) -> int | None:
        with self._lock:
            if self._next >= len(self._calls):
                return None
            self._next += 1
            return self._next - 1

    def run(self, index: int) -> None:
        try:
            self._results[index] = self._calls[index]()
        except BaseException as exc:  # handed to whoever waits for the results
            with self._lock:
                self._errors.append(exc)
        finally:
            with self._lock:
                self._left -= 1
                if self._left == 0:
                    self._finished.set()

    def results(self) -> list[_T]:
        self._finished.wait()
        if self._errors:
            raise self._errors[0]
        return self._results  # type: ignore[return-value]  # every call set its own


class _Watch:
    """Hands the calls left in batches past their deadline to the pool. Its thread
    starts with the first batch and sleeps while none runs."""

    def __init__(self, after_s: float, pool: _DaemonPool, name: str) -> None:
        self.after_s, self.name = after_s, name
        self._pool = pool
        self._batches: list[_Batch[Any]] = []  # oldest first, so by deadline
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, batch: _Batch[_T]) -> None:
        with self._changed:
            batch.deadline = time.monotonic() + self.after_s
            self._batches.append(batch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif len(self._batches) == 1:
                self._changed.notify()  # it sleeps until a batch comes

    def remove(self, batch: _Batch[_T]) -> None:
        with self._changed:
            if batch in self._batches:
                self._batches.remove(batch)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _run(self) -> None:
        while (due := self._due()) is not None:
            for batch in due:
                while (index := batch.take()) is not None:
                    self._pool.submit(functools.partial(batch.run, index))

    def _due(self) -> list[_Batch[Any]] | None:
        """The batches past their deadline, taken off the watch (None once closed)."""
        with self._changed:
            while not self._closed:
                if not self._batches:
                    self._changed.wait()
                    continue
                wait = self._batches[0].deadline - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                now = time.monotonic()
                due = 0  # deadlines grow along the list: the batches due come first
                while due < len(self._batches) and self._batches[due].deadline <= now:
                    due += 1
                taken, self._batches = self._batches[:due], self._batches[due:]
                return taken
            return None


class _DaemonPool:
    """Threads kept to run calls, started as needed up to ``size``. Daemons, unlike
    ``ThreadPoolExecutor``'s (joined at exit), as the dispatcher's: a receiver that hangs
    must not keep a stopped process alive."""

    def __init__(self, size: int, name: str) -> None:
        self.size, self.name = size, name
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, call: Callable[[], None]) -> None:
        with self._lock:
            if self._idle <= 0 and len(self._threads) < self.size:
                thread = threading.Thread(target=self._run, daemon=True,
                                          name=f"{self.name}-{len(self._threads)}")  # fmt: skip
                self._threads.append(thread)
                thread.start()
            else:
                self._idle -= 1
            self._calls.put(call)

    def shutdown(self) -> None:
        for _ in self._threads:
            self._calls.put(None)

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            call()
            with self._lock:
                self._idle += 1
