"""The server's event delivery from a process of its own (issue 21: searches must not slow
while events are delivered). Real processes, a real catalog, a real receiver on loopback:
the server's threads dispatch while nobody subscribes; once a webhook is enabled a child
process takes over at a lower priority (the events it delivers are claimed under its
pid, signed, each once);
a child killed is replaced and no event is lost meanwhile; a child whose server is
killed (``kill -9``) ends by itself; ``events.delivery_process = false`` keeps delivery
in the server's threads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select
from tests.doubles.webhook_receiver import Receiver, running_receiver
from tests.event_log import emit_events
from tests.workspaces import new_workspace

from autorag.api.state import server_delivery
from autorag.context import AppContext, open_context
from autorag.jobs.delivery_process import WATCH_S, ServerDelivery
from autorag.store.catalog import outbox
from autorag.webhooks.service import WebhookService

WAIT_S = 90.0  # a child's start on a loaded 2-core machine, with room to spare


@dataclass
class World:
    context: AppContext
    receiver: Receiver

    def hook(self, name: str) -> None:
        service = WebhookService.for_context(self.context)
        _, secret = service.create(name, f"{self.receiver.url}/{name}")
        self.receiver.secrets[f"/{name}"] = secret

    def emit(self, n: int = 1) -> list[int]:
        return emit_events(self.context.catalog.engine, n)

    def delivered_ids(self, name: str) -> list[int]:
        return [one.json["id"] for one in self.receiver.at(f"/{name}") if one.signed]

    def claimer_pid(self, event_id: int) -> int:
        table = outbox.events_table
        with self.context.catalog.engine.connect() as conn:
            claimer = conn.execute(
                select(table.c.claimed_by).where(table.c.id == event_id)
            ).scalar_one()
        return int(claimer.split(":")[1])

    def dispatched(self, ids: list[int]) -> bool:
        table = outbox.events_table
        with self.context.catalog.engine.connect() as conn:
            rows = conn.execute(
                select(table.c.id).where(table.c.id.in_(ids), table.c.dispatched_at.is_not(None))
            ).all()
        return len(rows) == len(ids)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    workspace = new_workspace(tmp_path / "kb", webhooks={"allow_private": True})
    context = open_context(workspace)
    try:
        with running_receiver() as receiver:
            yield World(context, receiver)
    finally:
        context.close()


@pytest.fixture
def delivery(world: World) -> Iterator[ServerDelivery]:
    started = ServerDelivery(world.context, {})
    started.start()
    try:
        yield started
    finally:
        started.stop()


def test_threads_dispatch_until_someone_subscribes_then_a_process_delivers(
    world: World, delivery: ServerDelivery
) -> None:
    (before,) = world.emit()
    wait_until(lambda: world.dispatched([before]))
    assert world.claimer_pid(before) == os.getpid()
    assert (delivery.mode, delivery.child_pid) == ("threads", None)

    world.hook("ci")
    wait_until(lambda: delivery.mode == "process")
    child = delivery.child_pid
    assert child is not None and child != os.getpid()
    # Below the server's priority: the server's searches first on a busy CPU.
    server_nice = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, child) == min(19, server_nice + 10)
    sent = world.emit(3)
    wait_until(lambda: sorted(world.delivered_ids("ci")) == sent)
    assert {world.claimer_pid(event_id) for event_id in sent} == {child}

    delivery.stop()
    assert delivery.child_pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # ended, and reaped by the server that started it


def test_a_child_killed_is_replaced_and_no_event_is_lost(
    world: World, delivery: ServerDelivery
) -> None:
    world.hook("ci")
    wait_until(lambda: delivery.mode == "process")
    first = delivery.child_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    sent = world.emit(5)  # while it is dead, or being replaced
    wait_until(lambda: sorted(set(world.delivered_ids("ci"))) == sent)
    wait_until(lambda: delivery.child_pid not in (None, first))
    later = world.emit(2)
    wait_until(lambda: sorted(set(world.delivered_ids("ci"))) == sent + later)


_SERVER = """
import sys, time
from pathlib import Path
from autorag.context import open_context
from autorag.api.state import server_delivery
from autorag.jobs.delivery_process import WATCH_S, ServerDelivery
from autorag.workspace import Workspace

context = open_context(Workspace(Path(sys.argv[1])))
delivery = ServerDelivery(context, {})
delivery.start()
while delivery.child_pid is None:
    time.sleep(0.02)
print(delivery.child_pid, flush=True)
time.sleep(3600)
"""


def test_a_child_ends_when_its_server_is_killed(world: World) -> None:
    world.hook("ci")
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(world.context.workspace.root)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        child = int(server.stdout.readline())
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        wait_until(lambda: not _running(child))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie no longer does: it only waits to be reaped
    by whichever process adopted it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_delivery_stays_in_the_server_when_told(world: World) -> None:
    """``events.delivery_process = false``: given the time a handover takes when it is on
    (measured first, here), three times over, the server's threads still deliver."""
    world.hook("ci")
    started = time.monotonic()
    on = ServerDelivery(world.context, {})
    on.start()
    try:
        wait_until(lambda: on.mode == "process")
        handover_s = time.monotonic() - started
    finally:
        on.stop()

    context = open_context(world.context.workspace, events={"delivery_process": False})
    off = server_delivery(context, {"events": {"delivery_process": False}})
    assert off is not None
    try:
        time.sleep(3 * handover_s + WATCH_S)
        sent = world.emit(2)
        wait_until(lambda: sorted(world.delivered_ids("ci")) == sent)
        assert {world.claimer_pid(event_id) for event_id in sent} == {os.getpid()}
        assert off.mode == "threads"
    finally:
        off.stop()
        context.close()
