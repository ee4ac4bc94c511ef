"""The server's event delivery, off the server's interpreter lock (issue 21).

Delivering an event costs CPU (each webhook's signed POST and its delivery log, web
push's encryption): about 4 ms an event to five webhooks, spent under the lock the
server's searches need, which slowed them by 11–19 % at 25 events a second. So once there
is anyone to deliver to (an enabled webhook, a browser subscribed to push), the server
hands delivery to a child process of its own running the same dispatcher
(``autorag.jobs.dispatcher``). Until then the server's own threads dispatch: with nobody
to send to they only mark events done, and a server nobody subscribes to runs no extra
process.

The child and the server share only the catalog, whose leases give each event to one of
them: the handoff (the child started and ready before the server's threads stop) loses
and doubles nothing. The server wakes the child at each commit of events (a line on its
stdin), so delivery starts within milliseconds rather than at the next poll. The child
ends when its stdin closes: when the server stops, and when the server dies, even by
``kill -9``, since the pipe closes with it. A child that dies is replaced after a pause
(1, 2, 4 … up to 300 s) and meanwhile the server's threads deliver: events never wait
for a child.

The child is ``python -m autorag.jobs.delivery_process``; the first line on its stdin is
JSON, the workspace's root and the settings overrides the server was started with.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Literal

from autorag.context import AppContext, open_context
from autorag.jobs.dispatcher import EventDispatcher, start_dispatcher
from autorag.push import store as push_store
from autorag.store.catalog import outbox
from autorag.webhooks import store as webhook_store
from autorag.workspace import Workspace

log = logging.getLogger(__name__)

MODULE = "autorag.jobs.delivery_process"
READY = b"ready"
WATCH_S = 1.0  # how often the server looks for subscribers while its threads deliver
READY_TIMEOUT_S = 60.0  # a child's start: imports and the catalog opened, on a busy host
STOP_TIMEOUT_S = 12.0  # the child's dispatcher lets deliveries finish for up to 10 s
FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 300.0
NICENESS = 10  # added to the child's: the server's searches first on a busy CPU
DeliveryMode = Literal["threads", "process"]


class ServerDelivery:
    """Delivers the server's events: its own threads until someone subscribes, then a
    child process (see the module docstring). ``process = False``: threads only."""

    def __init__(
        self, context: AppContext, overrides: Mapping[str, Any], *, process: bool = True
    ) -> None:
        self.context = context
        self._spec = _child_spec(context.workspace, overrides) if process else None
        self._threads: EventDispatcher | None = None
        self._child: _Child | None = None
        self._lock = threading.Lock()  # the handoff against stop()
        self._stopping = threading.Event()
        self._watcher: threading.Thread | None = None
        self._pause = FIRST_PAUSE_S
        self._next_try = 0.0  # monotonic time before which no child is started
        self._next_look = 0.0  # ... and before which nobody's subscribing is looked for

    @property
    def mode(self) -> DeliveryMode:
        return "process" if self._child is not None else "threads"

    @property
    def child_pid(self) -> int | None:
        child = self._child
        return child.process.pid if child is not None else None

    def start(self) -> None:
        self._threads = start_dispatcher(self.context)
        if self._spec is not None:
            self._watcher = threading.Thread(
                target=self._watch, name="autorag-events-watch", daemon=True
            )
            self._watcher.start()

    def stop(self) -> None:
        self._stopping.set()
        outbox.notify()  # wakes the watcher
        if self._watcher is not None:
            self._watcher.join(READY_TIMEOUT_S + STOP_TIMEOUT_S)
        with self._lock:
            threads, self._threads = self._threads, None
            child, self._child = self._child, None
        if threads is not None:
            threads.stop()
        if child is not None:
            child.stop()

    # -- watching -------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._stopping.is_set():
            committed = outbox.wait_for_events(WATCH_S)
            if self._stopping.is_set():
                return
            try:
                self._step(committed)
            except Exception:  # the catalog hiccupped: the watcher must outlive it
                log.exception("watching event delivery failed")

    def _step(self, committed: bool) -> None:
        child = self._child
        if child is not None:
            if child.alive():
                if committed:
                    child.wake()
                return
            self._take_back(child)
            return
        # Every WATCH_S at most, not at each commit: a busy server that nobody subscribes
        # to must not pay two reads per event.
        now = time.monotonic()
        if now < max(self._next_try, self._next_look):
            return
        self._next_look = now + WATCH_S
        if self._anyone_to_deliver_to():
            self._hand_over()

    def _anyone_to_deliver_to(self) -> bool:
        engine = self.context.catalog.engine
        push = self.context.settings.push.enabled and push_store.any_subscription(engine)
        return push or webhook_store.any_enabled(engine)

    def _hand_over(self) -> None:
        assert self._spec is not None
        child = _Child.spawn(self._spec)
        if not child.wait_ready(self._stopping):
            code = child.stop()
            if not self._stopping.is_set():
                log.warning("the event delivery process did not start (exit %s)", code)
                self._wait_longer()
            return
        # Both dispatch for a moment (the leases keep each event to one); the process
        # is the server's once its threads have stopped, their deliveries finished.
        with self._lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.stop()
        with self._lock:
            stopping = self._stopping.is_set()
            if not stopping:
                self._child = child
        if stopping:
            child.stop()
            return
        log.info("events are delivered by process %d", child.process.pid)

    def _take_back(self, child: _Child) -> None:
        """The child died: the server's threads deliver until another starts."""
        log.warning(
            "the event delivery process %d ended (exit %s): the server delivers meanwhile",
            child.process.pid,
            child.process.returncode,
        )
        child.stop()
        with self._lock:
            if self._stopping.is_set():
                return
            self._child = None
            self._threads = start_dispatcher(self.context)
        self._wait_longer()

    def _wait_longer(self) -> None:
        self._next_try = time.monotonic() + self._pause
        self._pause = min(self._pause * 2, LONGEST_PAUSE_S)


def _child_spec(workspace: Workspace, overrides: Mapping[str, Any]) -> bytes | None:
    """The child's first stdin line; None when the overrides cannot be sent as JSON
    (the server's threads then deliver, as with ``events.delivery_process`` off)."""
    try:
        spec = json.dumps({"root": str(workspace.root), "overrides": dict(overrides)})
    except TypeError:
        log.warning("the server's settings overrides are not JSON: events are delivered in-process")
        return None
    return spec.encode() + b"\n"


class _Child:
    """A delivery process and the server's end of its pipes."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._ready = threading.Event()
        threading.Thread(
            target=self._read, args=(process.stdout,), name="autorag-events-child", daemon=True
        ).start()

    @classmethod
    def spawn(cls, spec: bytes) -> _Child:
        process = subprocess.Popen(
            [sys.executable, "-m", MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Its own session: a Ctrl+C at the server's terminal stops the server, which
            # then stops the child in order (deliveries under way finish).
            start_new_session=True,
        )
        assert process.stdin is not None
        process.stdin.write(spec)
        process.stdin.flush()
        # A wake-up must never block the server: when the pipe is full, the child has
        # wake-ups enough to read.
        os.set_blocking(process.stdin.fileno(), False)
        return cls(process)

    def _read(self, stdout: IO[bytes] | None) -> None:
        assert stdout is not None
        for line in stdout:
            if line.strip() == READY:
                self._ready.set()

    def wait_ready(self, stopping: threading.Event) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ready.wait(0.1):
            if stopping.is_set() or not self.alive() or time.monotonic() > deadline:
                return False
        return True

    def alive(self) -> bool:
        return self.process.poll() is None

    def wake(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(BlockingIOError, BrokenPipeError, ValueError):
            self.process.stdin.write(b"\n")
            self.process.stdin.flush()

    def stop(self) -> int | None:
        """Close its stdin (it stops its dispatcher and ends), then wait; its exit code."""
        with contextlib.suppress(OSError, ValueError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.warning("the event delivery process %d did not stop: killed", self.process.pid)
            self.process.kill()
            return self.process.wait()


# -- the child ----------------------------------------------------------------------------
def main() -> int:
    """The delivery process: the dispatcher until stdin closes; each line read wakes it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server says when (its stdin closes)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stops in order, as at EOF
    _yield_to_the_server()
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s autorag event delivery [%(process)d] %(levelname)s: %(message)s",
    )
    stdin = sys.stdin.buffer
    first = stdin.readline()
    if not first:
        return 0
    spec = json.loads(first)
    context = open_context(Workspace(Path(spec["root"])), **spec["overrides"])
    dispatcher: EventDispatcher | None = None
    try:
        dispatcher = start_dispatcher(context)
        sys.stdout.buffer.write(READY + b"\n")
        sys.stdout.flush()
        while stdin.readline():
            outbox.notify()
    finally:
        if dispatcher is not None:
            dispatcher.stop()
        context.close()
    return 0


def _yield_to_the_server() -> None:
    """Run below the server's priority: on a small machine the searches a user waits for
    come before deliveries, which have a 200 ms budget and retries (none of it is lost)."""
    with contextlib.suppress(OSError, AttributeError):  # no nice() on this platform
        os.nice(NICENESS)


if __name__ == "__main__":
    sys.exit(main())
