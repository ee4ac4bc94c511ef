"""The event dispatcher: delivers the outbox's events to their subscribers after commit.

One thread claims events (``autorag.store.catalog.outbox.claim``) and hands each to a
small pool of threads, one task per event and subscriber, so a webhook's retries delay
neither the other subscribers nor the other events. An event is marked dispatched once
every subscriber is done with it. Delivery is at least once: a process killed before
that leaves the event leased; the lease expires (``lease_s``) and another dispatcher
claims it again, and a dispatcher starting on this host takes back at once the leases of
dead processes (``outbox.release_dead_claims``). A subscriber may thus see an event twice
(webhooks carry an id per event for receivers to drop repeats).

Started by the server (``autorag.api.state``) and by ``autorag worker``, beside the
worker pool. In-process it wakes when events commit (``outbox.wait_for_events``);
events committed by other processes are found by polling every ``poll_interval``
(a tenth of a second).

Subscribers (webhooks, web push) satisfy :class:`Subscriber` by shape: their modules
need not (and must not, to keep the packages acyclic) import this one.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Engine

from autorag.store.catalog import outbox
from autorag.store.catalog.outbox import Event
from autorag.store.catalog.queue import process_identity

if TYPE_CHECKING:
    from autorag.context import AppContext

log = logging.getLogger(__name__)

# How soon events committed by another process are seen: an `autorag worker` delivering
# for the server (events.deliver_in_server = false) sees each within this. An idle poll
# is one indexed read (no write lock), so ten a second cost next to nothing.
POLL_INTERVAL_S = 0.1
LEASE_S = 120.0  # longer than any subscriber's delivery, retries included
PRUNE_EVERY_S = 3600.0  # how often delivered events past their keeping are deleted
MAX_ATTEMPTS = 3  # claims of an event whose delivery raised before it is given up
STOP_TIMEOUT_S = 10.0
_WORKERS = 8
_STOP_CHECK_S = 0.5  # how soon a dispatcher waiting for a free slot notices a stop
_serial = itertools.count(1)


class Subscriber(Protocol):
    name: str

    def deliver(self, event: Event) -> None:
        """Block until done with ``event``, retries included; handle the receiver's
        failures itself. Raising means a bug: it is logged, and the event is claimed
        again when its lease expires, up to ``MAX_ATTEMPTS`` claims; after that it is
        marked dispatched (given up) so one broken event cannot block the log."""


class _InFlight:
    """An event being delivered: how many subscribers are not done with it yet."""

    def __init__(self, event: Event, subscribers: int) -> None:
        self.event = event
        self.remaining = subscribers
        self.failed = False


class EventDispatcher:
    def __init__(
        self,
        engine: Engine,
        subscribers: Sequence[Subscriber],
        *,
        workers: int = _WORKERS,
        poll_interval: float = POLL_INTERVAL_S,
        lease_s: float = LEASE_S,
        claimer: str | None = None,
        keep_days: int | None = None,
    ) -> None:
        self.engine = engine
        self.subscribers = list(subscribers)
        self.workers = max(1, workers)  # events delivered at once
        self.poll_interval = poll_interval
        self.lease_s = lease_s
        self.keep_days = keep_days  # None: delivered events are kept forever
        self._next_prune = 0.0  # monotonic time of the next pruning: at the first loop
        self.claimer = claimer or f"{process_identity()}#events{next(_serial)}"
        self._tasks: queue.Queue[tuple[_InFlight, Subscriber] | None] = queue.Queue()
        self._slots = threading.Semaphore(self.workers)
        self._guard = threading.Lock()
        self._done: list[int] = []  # events delivered, waiting to be marked dispatched
        self._marking = False  # a thread is marking them
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Take back dead processes' leases, then start claiming and delivering."""
        released = outbox.release_dead_claims(self.engine)
        if released:
            log.info("%d event(s) a stopped process had claimed will be delivered", released)
        # Every (event, subscriber) task of the events in flight starts at once.
        for index in range(self.workers * max(1, len(self.subscribers))):
            self._spawn(self._deliver_loop, f"autorag-events-{index}")
        self._spawn(self._claim_loop, "autorag-events-claim")

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop claiming; deliveries under way may finish (up to ``timeout``). Events
        not finished stay leased and are delivered again by the next dispatcher."""
        self._stopping.set()
        outbox.notify()
        for _ in self._threads:
            self._tasks.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            log.warning("event deliveries still running at shutdown: they resume next start")
        self._threads = []
        for subscriber in self.subscribers:
            close = getattr(subscriber, "close", None)  # an HTTP client to let go of
            if callable(close):
                close()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        # Daemons: a receiver that hangs must not keep a stopped server alive.
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- claiming -------------------------------------------------------------------------
    def _claim_loop(self) -> None:
        probe = True  # look before claiming: an idle poll must not take a write lock
        while not self._stopping.is_set():
            self._prune_when_due()
            try:
                more = self._claim(probe=probe)
            except Exception:  # the catalog hiccupped: the dispatcher must outlive it
                log.exception("claiming events failed")
                more = False
            if more:  # every free slot got an event: others may wait
                probe = True
                continue
            # Woken by a commit here: there are events, claim without looking first.
            probe = not outbox.wait_for_events(self.poll_interval)

    def _prune_when_due(self) -> None:
        if self.keep_days is None or time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + PRUNE_EVERY_S
        try:
            pruned = outbox.prune(self.engine, datetime.now(UTC) - timedelta(days=self.keep_days))
        except Exception:  # pruning is housekeeping: delivery goes on without it
            log.exception("pruning old events failed")
            return
        if pruned:
            log.info("%d delivered event(s) older than %d days deleted", pruned, self.keep_days)

    def _claim(self, *, probe: bool) -> bool:
        """Claim as many events as there are free delivery slots (so none waits in a
        queue while its lease runs); True when each slot got one (more may wait)."""
        free = self._take_slots()
        if not free:
            return False
        events: list[Event] = []
        try:
            events = outbox.claim(
                self.engine, self.claimer, limit=free, lease_s=self.lease_s, probe=probe
            )
        finally:
            for _ in range(free - len(events)):
                self._slots.release()
        for event in events:
            self._start(event)
        return len(events) == free

    def _take_slots(self) -> int:
        """Block until a slot is free (or stopping); take every free one."""
        while not self._slots.acquire(timeout=min(self.poll_interval, _STOP_CHECK_S)):
            if self._stopping.is_set():
                return 0
        taken = 1
        while taken < self.workers and self._slots.acquire(blocking=False):
            taken += 1
        if self._stopping.is_set():
            for _ in range(taken):
                self._slots.release()
            return 0
        return taken

    def _start(self, event: Event) -> None:
        if not self.subscribers:
            self._finish(_InFlight(event, 0))
            return
        flight = _InFlight(event, len(self.subscribers))
        for subscriber in self.subscribers:
            self._tasks.put((flight, subscriber))

    # -- delivering -----------------------------------------------------------------------
    def _deliver_loop(self) -> None:
        while (task := self._tasks.get()) is not None:
            flight, subscriber = task
            try:
                subscriber.deliver(flight.event)
            except Exception:
                flight.failed = True
                log.exception(
                    "subscriber %s failed on event %d (%s)",
                    subscriber.name,
                    flight.event.id,
                    flight.event.name,
                )
            with self._guard:
                flight.remaining -= 1
                done = flight.remaining == 0
            if done:
                self._finish(flight)

    def _finish(self, flight: _InFlight) -> None:
        event = flight.event
        try:
            if not flight.failed or event.attempts >= MAX_ATTEMPTS:
                if flight.failed:
                    log.error(
                        "event %d (%s) given up after %d attempts",
                        event.id,
                        event.name,
                        event.attempts,
                    )
                self._mark_dispatched(event.id)
            # else: left leased; claimed again (every subscriber) once the lease expires
        finally:
            self._slots.release()

    def _mark_dispatched(self, event_id: int) -> None:
        """Mark the event dispatched, with any others finished meanwhile (a group commit:
        while one thread writes, the events finished by others wait for its next write,
        so under load one transaction marks many and the catalog's writes stay few)."""
        with self._guard:
            self._done.append(event_id)
            if self._marking:
                return  # the thread writing now takes it in its next round
            self._marking = True
        while True:
            with self._guard:
                ids, self._done = self._done, []
                if not ids:
                    self._marking = False
                    return
            try:
                outbox.mark_dispatched(self.engine, ids)
            except Exception:
                log.exception("%d event(s) could not be marked dispatched: they will be again",
                              len(ids))  # fmt: skip


def subscribers_for(context: AppContext) -> list[Subscriber]:
    """The product's subscribers: webhooks and web push."""
    from autorag.push.sender import PushSubscriber
    from autorag.webhooks.delivery import WebhookSubscriber

    return [WebhookSubscriber.for_context(context), PushSubscriber.for_context(context)]


def start_dispatcher(context: AppContext) -> EventDispatcher:
    """A dispatcher on the context's catalog with the product's subscribers, started."""
    dispatcher = EventDispatcher(
        context.catalog.engine,
        subscribers_for(context),
        keep_days=context.settings.events.keep_days,
    )
    dispatcher.start()
    return dispatcher
