"""The event log (outbox) on SQLite and PostgreSQL: an event exists iff its transaction
committed, claims are leased and exclusive (SKIP LOCKED on PostgreSQL), dead claimers'
leases come back, and listing filters."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine, update
from tests.event_log import emit_events, event_log_fixtures

from autorag.store.catalog import outbox
from autorag.store.catalog.db import create_catalog_engine
from autorag.store.catalog.models import utcnow

event_catalog, engine = event_log_fixtures()


def test_an_event_exists_iff_its_transaction_committed(engine: Engine) -> None:
    kept = emit_events(engine, 1)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        outbox.emit(conn, "document.failed", {"document": 7})
        raise RuntimeError("the change failed")
    events = outbox.list_events(engine)
    assert [e.id for e in events] == kept
    only = events[0]
    assert (only.name, only.workspace, only.actor, only.data) == (
        "document.processed",
        "w",
        "alice",
        {"n": 0},
    )
    assert only.occurred_at.tzinfo is not None
    assert [e.id for e in outbox.claim(engine, "me")] == kept


def test_an_unknown_name_is_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="unknown event"), engine.begin() as conn:
        outbox.emit(conn, "document.procesed")
    assert outbox.list_events(engine) == []


def test_claims_are_leased_in_order_and_dispatched_ones_stay_done(engine: Engine) -> None:
    ids = emit_events(engine, 5)
    first = outbox.claim(engine, "a", limit=3)
    assert [e.id for e in first] == ids[:3] and all(e.attempts == 1 for e in first)
    assert [e.id for e in outbox.claim(engine, "b")] == ids[3:]  # the rest, not a's
    assert outbox.claim(engine, "c") == []  # every lease still runs
    outbox.mark_dispatched(engine, ids[:3])
    _expire_leases(engine)
    again = outbox.claim(engine, "c")
    assert [e.id for e in again] == ids[3:]  # b's expired; a's were dispatched
    assert all(e.attempts == 2 for e in again)


def test_a_released_lease_is_claimable_at_once(engine: Engine) -> None:
    ids = emit_events(engine, 2)
    outbox.claim(engine, "a")
    outbox.release(engine, [ids[0]], "someone else")  # not theirs: nothing happens
    assert outbox.claim(engine, "b") == []
    outbox.release(engine, [ids[0]], "a")
    assert [e.id for e in outbox.claim(engine, "b")] == [ids[0]]


def test_dead_claimers_leases_are_taken_back(engine: Engine) -> None:
    ids = emit_events(engine, 3)
    outbox.claim(engine, "dead:1", limit=1)
    outbox.claim(engine, "alive:2", limit=1)
    outbox.claim(engine, "elsewhere:3", limit=1)
    verdicts = {"dead:1": False, "alive:2": True, "elsewhere:3": None}
    released = outbox.release_dead_claims(engine, alive=verdicts.get)
    assert released == 1
    assert [e.id for e in outbox.claim(engine, "new")] == [ids[0]]


def test_list_filters_and_orders(engine: Engine) -> None:
    processed = emit_events(engine, 2)
    with engine.begin() as conn:
        failed = outbox.emit(conn, "document.failed", {"document": 1}, workspace="other")
    assert [e.id for e in outbox.list_events(engine)] == [failed, *reversed(processed)]
    assert [e.id for e in outbox.list_events(engine, names=["document.failed"])] == [failed]
    assert [e.id for e in outbox.list_events(engine, workspace="w")] == processed[::-1]
    after = outbox.list_events(engine, after_id=processed[0], newest_first=False)
    assert [e.id for e in after] == [processed[1], failed]
    assert len(outbox.list_events(engine, limit=1)) == 1
    later = utcnow() + timedelta(minutes=1)
    assert outbox.list_events(engine, since=later) == []
    assert outbox.latest_id(engine) == failed


def test_the_wake_up_comes_after_the_commit(engine: Engine) -> None:
    outbox.wait_for_events(0)  # forget earlier wake-ups
    assert not outbox.wait_for_events(0)
    with engine.begin() as conn:
        outbox.emit(conn, "user.created", {"user": 1})
        assert not outbox.wait_for_events(0)  # not yet committed: nobody is woken
    assert outbox.wait_for_events(0)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        outbox.emit(conn, "user.created", {"user": 2})
        raise RuntimeError
    assert not outbox.wait_for_events(0)  # rolled back: nothing to deliver


def _expire_leases(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(outbox.events_table).values(claimed_until=utcnow() - timedelta(seconds=1))
        )


@pytest.mark.postgres
def test_concurrent_claimers_on_postgresql_never_share_an_event(postgres_url: str) -> None:
    """Two engines (two processes' pools), four threads each, claiming in small batches
    while the events are there: every event is claimed exactly once."""
    setup = create_catalog_engine(postgres_url)
    with setup.begin() as conn:
        conn.execute(update(outbox.events_table).values(dispatched_at=utcnow()))  # others'
    ids = set(emit_events(setup, 200))
    engines = [create_catalog_engine(postgres_url) for _ in range(2)]
    claimed: list[list[int]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def claimer(index: int) -> None:
        engine = engines[index % 2]
        start.wait()
        while batch := outbox.claim(engine, f"claimer{index}", limit=5):
            claimed[index].extend(e.id for e in batch)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [event_id for batch in claimed for event_id in batch]
    assert sorted(every) == sorted(ids)  # each once: none shared, none missed
    for engine in (*engines, setup):
        engine.dispose()


def test_prune_deletes_only_delivered_events_past_the_cutoff(engine: Engine) -> None:
    old_delivered, old_owed, recent_delivered = emit_events(engine, 3)
    outbox.mark_dispatched(engine, [old_delivered, recent_delivered])
    table = outbox.events_table
    with engine.begin() as conn:
        conn.execute(
            update(table)
            .where(table.c.id.in_([old_delivered, old_owed]))
            .values(occurred_at=utcnow() - timedelta(days=100))
        )
    assert outbox.prune(engine, utcnow() - timedelta(days=90)) == 1
    kept = {e.id for e in outbox.list_events(engine)}
    assert kept == {old_owed, recent_delivered}  # the undelivered one is still owed
