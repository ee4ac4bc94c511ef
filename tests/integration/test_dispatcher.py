"""The event dispatcher: every committed event reaches every subscriber once (none from a
rolled-back transaction), right after commit in-process; a broken subscriber's event is
retried then given up; a process killed with events claimed or waiting leaves them to the
next dispatcher (``kill -9``); on PostgreSQL two dispatchers never deliver the same one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, update
from tests.event_log import emit_events, event_log_fixtures
from tests.workspaces import new_workspace

from autorag.api.state import server_delivery
from autorag.context import open_context
from autorag.jobs.dispatcher import MAX_ATTEMPTS, EventDispatcher, Subscriber
from autorag.store.catalog import outbox
from autorag.store.catalog.db import create_catalog_engine
from autorag.store.catalog.outbox import Event

DEADLINE_S = 20.0


class Recording:
    """A subscriber that notes what it was given (thread-safe)."""

    def __init__(self, name: str = "recording") -> None:
        self.name = name
        self.seen: list[int] = []
        self._lock = threading.Lock()

    def deliver(self, event: Event) -> None:
        with self._lock:
            self.seen.append(event.id)


class Gate(Recording):
    """Holds every delivery until opened."""

    def __init__(self) -> None:
        super().__init__("gate")
        self.opened = threading.Event()
        self.entered = threading.Event()

    def deliver(self, event: Event) -> None:
        self.entered.set()
        assert self.opened.wait(DEADLINE_S)
        super().deliver(event)


class Broken(Recording):
    def deliver(self, event: Event) -> None:
        super().deliver(event)
        raise RuntimeError("a bug in a subscriber")


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.01)


event_catalog, engine = event_log_fixtures()


@pytest.fixture
def running(engine: Engine) -> Iterator[Callable[..., EventDispatcher]]:
    started: list[EventDispatcher] = []

    def start(subscribers: list[Subscriber], **options: object) -> EventDispatcher:
        # A poll interval far beyond the deadline: only the in-process wake-up can
        # make deliveries in time.
        options.setdefault("poll_interval", 600)
        dispatcher = EventDispatcher(engine, subscribers, **options)  # type: ignore[arg-type]
        dispatcher.start()
        started.append(dispatcher)
        return dispatcher

    yield start
    for dispatcher in started:
        dispatcher.stop()


def _undispatched(engine: Engine) -> int:
    table = outbox.events_table
    with engine.connect() as conn:
        query = select(func.count()).select_from(table).where(table.c.dispatched_at.is_(None))
        return int(conn.execute(query).scalar_one())


def test_committed_events_reach_every_subscriber_once_after_commit(
    engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    first, second = Recording("first"), Recording("second")
    running([first, second])
    committed = emit_events(engine, n=3)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        outbox.emit(conn, "document.failed", {"document": 9})
        raise RuntimeError("rolled back")
    committed += emit_events(engine, name="user.created")
    wait_until(lambda: _undispatched(engine) == 0 and len(second.seen) == 4)
    assert sorted(first.seen) == sorted(second.seen) == committed


def test_an_event_is_dispatched_when_every_subscriber_is_done(
    engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    fast, gate = Recording(), Gate()
    running([fast, gate])
    (event_id,) = emit_events(engine)
    wait_until(lambda: fast.seen == [event_id] and gate.entered.is_set())
    assert _undispatched(engine) == 1  # the gate still holds it
    gate.opened.set()
    wait_until(lambda: _undispatched(engine) == 0)
    assert gate.seen == [event_id]


def test_a_subscriber_that_raises_gets_the_event_again_then_it_is_given_up(
    engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    broken, fine = Broken("broken"), Recording()
    # An expired lease at once: the retries come without waiting for one.
    running([broken, fine], lease_s=0, poll_interval=0.05)
    (event_id,) = emit_events(engine)
    wait_until(lambda: _undispatched(engine) == 0)
    assert broken.seen.count(event_id) >= MAX_ATTEMPTS
    assert event_id in fine.seen  # at least once for the others too


def test_events_of_another_process_are_found_by_polling(
    tmp_path: Path, engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("polling is the dispatcher's, whatever the catalog: once is enough")
    seen = Recording()
    running([seen], poll_interval=0.05)
    committed = _run_child(engine, "emit", tmp_path)
    wait_until(lambda: sorted(seen.seen) == committed)


def test_kill_9_between_commit_and_delivery_delivers_exactly_the_committed_ones(
    tmp_path: Path, engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    """A process commits events (and rolls one back), claims one and hangs delivering
    it, and is killed. The next dispatcher delivers exactly the committed ones, at once
    (the dead process's lease is taken back, not waited out)."""
    committed = _run_child(engine, "hang", tmp_path)
    assert _undispatched(engine) == len(committed)
    seen = Recording()
    running([seen])
    wait_until(lambda: _undispatched(engine) == 0)
    assert sorted(seen.seen) == committed  # each once; none from the rolled-back one


@pytest.mark.postgres
def test_two_dispatchers_on_postgresql_deliver_each_event_once(postgres_url: str) -> None:
    engines = [create_catalog_engine(postgres_url) for _ in range(2)]
    seen = [Recording("a"), Recording("b")]
    dispatchers = [
        EventDispatcher(engine, [subscriber], poll_interval=0.05)
        for engine, subscriber in zip(engines, seen, strict=True)
    ]
    for dispatcher in dispatchers:
        dispatcher.start()
    try:
        committed = emit_events(engines[0], n=60)
        wait_until(lambda: len(seen[0].seen) + len(seen[1].seen) >= len(committed))
        wait_until(lambda: _undispatched(engines[0]) == 0)
    finally:
        for dispatcher in dispatchers:
            dispatcher.stop()
        for engine in engines:
            engine.dispose()
    delivered = Counter(seen[0].seen + seen[1].seen)
    assert sorted(delivered) == committed and set(delivered.values()) == {1}


# -- a second process -------------------------------------------------------------------
_CHILD = textwrap.dedent(
    """
    import sys, threading
    from sqlalchemy import create_engine
    from autorag.jobs.dispatcher import EventDispatcher
    from autorag.store.catalog import outbox
    from autorag.store.catalog.db import create_catalog_engine

    mode, url = sys.argv[1], sys.argv[2]
    engine = create_catalog_engine(url)
    with engine.begin() as conn:
        ids = [outbox.emit(conn, "document.processed", {"n": n}) for n in range(3)]
    try:
        with engine.begin() as conn:
            outbox.emit(conn, "document.failed", {"never": True})
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    print(" ".join(map(str, ids)), flush=True)
    if mode == "hang":
        class Hang:
            name = "hang"
            def deliver(self, event):
                print("delivering", event.id, flush=True)
                threading.Event().wait()  # until killed
        EventDispatcher(engine, [Hang()], workers=1).start()
        threading.Event().wait()
    """
)


def _run_child(engine: Engine, mode: str, tmp_path: Path) -> list[int]:
    """Run the child on the catalog; its committed ids. "hang": killed with SIGKILL once
    its dispatcher is delivering (one event claimed, the others waiting)."""
    url = engine.url.render_as_string(hide_password=False)
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), mode, url],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert child.stdout is not None
        committed = [int(i) for i in child.stdout.readline().split()]
        if mode == "hang":
            assert child.stdout.readline().startswith("delivering")
            os.kill(child.pid, signal.SIGKILL)
        assert child.wait(DEADLINE_S) in (0, -signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert len(committed) == 3
    return committed


def test_a_dispatcher_prunes_delivered_events_past_their_keeping(
    engine: Engine, running: Callable[..., EventDispatcher]
) -> None:
    old, recent = emit_events(engine, n=2)
    outbox.mark_dispatched(engine, [old, recent])
    table = outbox.events_table
    with engine.begin() as conn:
        moment = datetime.now(UTC) - timedelta(days=8)
        conn.execute(update(table).where(table.c.id == old).values(occurred_at=moment))
    running([], keep_days=7)
    wait_until(lambda: [e.id for e in outbox.list_events(engine)] == [recent])


def test_a_server_leaves_deliveries_to_workers_when_told(tmp_path: Path) -> None:
    for deliver, started in ((True, True), (False, False)):
        workspace = new_workspace(tmp_path / f"kb-{deliver}", events={"deliver_in_server": deliver})
        context = open_context(workspace)
        try:
            dispatcher = server_delivery(context, {})
            assert (dispatcher is not None) == started
            if dispatcher is not None:
                dispatcher.stop()
        finally:
            context.close()
