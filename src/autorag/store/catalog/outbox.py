"""The event log (an outbox): rows of the catalog's ``events`` table.

A change and its event are written in ONE transaction (:func:`emit` takes the caller's
connection), so an event exists if and only if its change committed. A dispatcher
(``autorag.jobs.dispatcher``) then claims undispatched events with a lease
(``claimed_by``/``claimed_until``), hands them to its subscribers and marks them
dispatched: at least once, since a process killed in between leaves the lease to expire
(or to be taken back by :func:`release_dead_claims`) and the event to be claimed again.

On PostgreSQL any number of processes claim at once (``FOR UPDATE SKIP LOCKED``), each
event going to one of them; SQLite serializes writers, so one ``UPDATE`` is the claim.

Delivery starts right after commit in this process: :func:`emit` marks its connection,
and when that connection goes back to the pool after committing (its transaction is then
visible to others) the dispatcher waiting in :func:`wait_for_events` is woken. Other
processes find the event when they next poll.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    Select,
    String,
    Table,
    Text,
    delete,
    event,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.pool import Pool

from autorag.store.catalog.models import utcnow
from autorag.store.catalog.queue import claimer_alive
from autorag.times import as_utc

# Every event the product emits, with a sentence for people (the CLI, the API, the
# webhook form). ``emit`` refuses any other name: a typo must fail a test, not vanish.
EVENT_NAMES: Mapping[str, str] = {
    "document.processed": "A document was indexed and can be found.",
    "document.failed": "A document could not be read or indexed.",
    "document.deleted": "A document was removed from a workspace.",
    "chat.completed": "An assistant answer was saved in a chat.",
    "user.created": "A user account was created.",
    "user.deleted": "A user account was deleted.",
    "workspace.created": "A workspace was created.",
    "workspace.updated": "A workspace was renamed or its settings changed.",
    "workspace.deleted": "A workspace was deleted.",
    "ocr.review_needed": "Text read from a scan waits for a person's review.",
    "ocr.approved": "A reviewer approved text read from a scan.",
    "ocr.rejected": "A reviewer rejected text read from a scan.",
    "p2p.approval_requested": "A peer's question waits for an approval.",
    "archive.page_saved": "A synthesised page was saved in an archive.",
    "synthesis.preview_ready": "A synthesis run's preview is ready for review.",
    "backup.completed": "A backup completed.",
    "backup.failed": "A backup failed.",
    "backup.restored": "A backup was restored.",
    "dlp.redacted": "Sensitive data was redacted from a text.",
    "dlp.bypassed": "A user's role bypassed redaction.",
    "dlp.revealed": "An admin revealed a redacted original.",
    "webhook.disabled": "A webhook was disabled after repeated failures.",
    "webhook.test": "A test event sent to a webhook.",
    "mcp.installed": "An MCP tool server was installed in a workspace.",
    "mcp.uninstalled": "An MCP tool server was removed from a workspace.",
}

_metadata = MetaData()
# The columns of migration 0018 this module reads and writes.
events_table = Table(
    "events",
    _metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("workspace", String(200)),
    Column("actor", String(200)),
    Column("data", Text, nullable=False),
    Column("dispatched_at", DateTime(timezone=True)),
    Column("claimed_by", String(200)),
    Column("claimed_until", DateTime(timezone=True)),
    Column("attempts", Integer, nullable=False),
)
_t = events_table.c

MAX_LIST = 1000


@dataclass(frozen=True)
class Event:
    id: int
    name: str
    occurred_at: datetime
    workspace: str | None
    actor: str | None
    data: Mapping[str, Any]
    attempts: int = 0  # how many times it was claimed (1 on its first delivery)


# -- writing ----------------------------------------------------------------------------
def emit(
    conn: Connection,
    name: str,
    data: Mapping[str, Any] | None = None,
    *,
    workspace: str | None = None,
    actor: str | None = None,
) -> int:
    """Write an event in ``conn``'s transaction; its id.

    ``data`` is a small JSON object of ids, names, counts and statuses: never document
    or chat text, a secret, or anything DLP would redact (it leaves the server in
    webhooks and notifications).
    """
    if name not in EVENT_NAMES:
        raise ValueError(f"unknown event {name!r}: add it to EVENT_NAMES")
    result = conn.execute(
        insert(events_table)
        .values(
            name=name,
            occurred_at=utcnow(),
            workspace=workspace,
            actor=actor,
            data=json.dumps(dict(data or {}), sort_keys=True, separators=(",", ":")),
            attempts=0,
        )
        .returning(_t.id)
    )
    if not event.contains(conn, "commit", _note_commit):
        event.listen(conn, "commit", _note_commit)
    return int(result.scalar_one())


# -- the in-process wake-up ---------------------------------------------------------------
_COMMITTED = "autorag.outbox.committed"
_wake = threading.Condition()
_commits = 0  # how many committed transactions wrote events in this process
# What each waiting thread (a dispatcher's claimer, a follower) has seen of ``_commits``:
# every one of them is woken by each commit, however many there are.
_seen = threading.local()


def _note_commit(conn: Connection) -> None:
    # Called just BEFORE the database commits: waking the dispatcher now would let it
    # look before the rows are visible. The pool's check-in below comes after.
    conn.info[_COMMITTED] = True


@event.listens_for(Pool, "checkin")
def _wake_after_commit(_dbapi_connection: Any, record: Any) -> None:
    if record is not None and record.info.pop(_COMMITTED, False):
        notify()


def notify() -> None:
    """Wake this process's dispatchers: events were committed."""
    global _commits
    with _wake:
        _commits += 1
        _wake.notify_all()


def wait_for_events(timeout: float) -> bool:
    """Wait until events are committed in this process (True) or ``timeout`` passes;
    commits since this thread's last call count (none is missed between two calls)."""
    seen = getattr(_seen, "commits", 0)
    with _wake:
        if _commits == seen:
            _wake.wait(timeout)
        now = _commits
    _seen.commits = now
    return now != seen


# -- claiming -----------------------------------------------------------------------------
def claim(
    engine: Engine, claimer: str, *, limit: int = 100, lease_s: float = 60, probe: bool = True
) -> list[Event]:
    """Undispatched events whose lease is free or expired, oldest first, leased to
    ``claimer`` for ``lease_s`` seconds. With ``probe`` a read looks first, so that a
    poll finding nothing takes no write lock (SQLite has one for the whole catalog);
    without, when the caller knows events were just committed, the read is spared."""
    now = utcnow()
    free = (
        select(_t.id)
        .where(_t.dispatched_at.is_(None))
        .where(or_(_t.claimed_until.is_(None), _t.claimed_until < now))
        .order_by(_t.id)
        .limit(max(1, limit))
    )
    if probe:
        with engine.connect() as conn:
            if conn.execute(free.limit(1)).first() is None:
                return []
    if engine.dialect.name == "postgresql":
        # Rows another claimer holds are skipped, not waited for: each goes to one.
        free = free.with_for_update(skip_locked=True)
    lease = {
        "claimed_by": claimer,
        "claimed_until": now + timedelta(seconds=lease_s),
        "attempts": _t.attempts + 1,
    }
    with engine.begin() as conn:
        rows = conn.execute(
            update(events_table)
            .where(_t.id.in_(free.scalar_subquery()))
            .values(**lease)
            .returning(*events_table.c)
        ).all()
    return sorted((_event(row) for row in rows), key=lambda e: e.id)


def mark_dispatched(engine: Engine, ids: Sequence[int]) -> None:
    if not ids:
        return
    with engine.begin() as conn:
        conn.execute(
            update(events_table)
            .where(_t.id.in_(list(ids)))
            .values(dispatched_at=utcnow(), claimed_until=None)
        )


def prune(engine: Engine, before: datetime) -> int:
    """Delete the events delivered that occurred before ``before``; how many. Events not
    delivered yet stay, however old: they are still owed to their subscribers."""
    with engine.begin() as conn:
        return conn.execute(
            delete(events_table).where(
                _t.dispatched_at.is_not(None), _t.occurred_at < as_utc(before)
            )
        ).rowcount


def release(engine: Engine, ids: Sequence[int], claimer: str) -> None:
    """Give back ``claimer``'s leases on ``ids`` (a dispatcher stopping): claimable now."""
    if not ids:
        return
    with engine.begin() as conn:
        conn.execute(
            update(events_table)
            .where(_t.id.in_(list(ids)), _t.claimed_by == claimer, _t.dispatched_at.is_(None))
            .values(claimed_by=None, claimed_until=None)
        )


def release_dead_claims(
    engine: Engine, *, alive: Callable[[str | None], bool | None] = claimer_alive
) -> int:
    """Take back the leases of claimers known to be dead (a process killed on this host):
    their events are claimable at once instead of when the lease expires. Claimers on
    other hosts are left alone. How many events were released."""
    now = utcnow()
    with engine.connect() as conn:
        claimers = conn.execute(
            select(_t.claimed_by)
            .where(_t.dispatched_at.is_(None), _t.claimed_until > now)
            .distinct()
        ).scalars()
        dead = [c for c in claimers if alive(c) is False]
    if not dead:
        return 0
    with engine.begin() as conn:
        return conn.execute(
            update(events_table)
            .where(_t.dispatched_at.is_(None), _t.claimed_by.in_(dead))
            .values(claimed_by=None, claimed_until=None)
        ).rowcount


# -- reading ------------------------------------------------------------------------------
def list_events(
    engine: Engine,
    *,
    after_id: int | None = None,
    names: Sequence[str] = (),
    since: datetime | None = None,
    workspace: str | None = None,
    limit: int = 100,
    newest_first: bool = True,
) -> list[Event]:
    """Events matching every filter given; ``since`` inclusive, ``after_id`` exclusive."""
    query: Select[Any] = select(events_table)
    if after_id is not None:
        query = query.where(_t.id > after_id)
    if names:
        query = query.where(_t.name.in_(list(names)))
    if since is not None:
        query = query.where(_t.occurred_at >= as_utc(since))
    if workspace is not None:
        query = query.where(_t.workspace == workspace)
    order = _t.id.desc() if newest_first else _t.id
    query = query.order_by(order).limit(max(1, min(limit, MAX_LIST)))
    with engine.connect() as conn:
        return [_event(row) for row in conn.execute(query)]


def latest_id(engine: Engine) -> int:
    """The newest event's id (0 when there is none): where a follower starts."""
    with engine.connect() as conn:
        found = conn.execute(select(_t.id).order_by(_t.id.desc()).limit(1)).scalar()
    return int(found or 0)


def _event(row: Row[Any]) -> Event:
    try:
        data = json.loads(row.data or "{}")
    except ValueError:
        data = {}
    return Event(
        id=int(row.id),
        name=row.name,
        occurred_at=as_utc(row.occurred_at),
        workspace=row.workspace,
        actor=row.actor,
        data=data if isinstance(data, dict) else {},
        attempts=int(row.attempts or 0),
    )
