"""The event log over HTTP (issue 21): ``GET /api/events`` and the names of the events.

The log is the installation's (every workspace's events, users', backups'), so the
routes need ``events:read`` (admins) in every workspace. Without ``afterId`` the newest
events come first; with it, the events after that one, oldest first: a client polls
with the last id it saw. The outbox (``autorag.store.catalog.outbox``) does the work.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep
from autorag.auth.permissions import EVENTS_READ
from autorag.errors import InvalidInput
from autorag.store.catalog import outbox
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(prefix="/api/events", tags=["events"])
Reader = Annotated[Principal, Depends(require(EVENTS_READ, every_workspace=True))]
MAX_ID = 2**62


class Out(BaseModel):
    model_config = ConfigDict(**CAMEL_CASE)


class EventOut(Out):
    id: int
    event: str  # e.g. "document.processed"
    occurred_at: datetime
    workspace: str | None
    actor: str | None  # a username, "system", "peer:<name>"
    data: dict[str, Any]  # ids, names, counts, statuses: never content


class EventListOut(Out):
    events: list[EventOut]


class EventNameOut(Out):
    name: str
    description: str


class EventNamesOut(Out):
    names: list[EventNameOut]


@router.get("", response_model=EventListOut)
async def list_events(
    _principal: Reader,
    app: AppDep,
    after_id: Annotated[
        int | None,
        Query(
            alias="afterId", ge=0, le=MAX_ID, description="Only events after this id, oldest first"
        ),
    ] = None,
    name: Annotated[
        list[str] | None, Query(description="Only these events (repeatable)", max_length=64)
    ] = None,
    since: Annotated[datetime | None, Query(description="Only events since (inclusive)")] = None,
    workspace: Annotated[str | None, Query(max_length=200)] = None,
    limit: Annotated[int, Query(ge=1, le=outbox.MAX_LIST)] = 100,
) -> EventListOut:
    """Events, newest first; with ``afterId``, those after it, oldest first."""
    names = name or []
    unknown = [n for n in names if n not in outbox.EVENT_NAMES]
    if unknown:
        raise InvalidInput(f"unknown event {unknown[0]!r}")
    found = await run_in_threadpool(
        outbox.list_events,
        app.catalog.engine,
        after_id=after_id,
        names=names,
        since=since,
        workspace=workspace,
        limit=limit,
        newest_first=after_id is None,
    )
    return EventListOut(events=[_out(event) for event in found])


@router.get("/names", response_model=EventNamesOut)
def event_names(_principal: Reader) -> EventNamesOut:
    """Every event the server emits, with what it means (webhooks subscribe to these)."""
    return EventNamesOut(
        names=[EventNameOut(name=n, description=d) for n, d in outbox.EVENT_NAMES.items()]
    )


def _out(event: outbox.Event) -> EventOut:
    return EventOut(
        id=event.id,
        event=event.name,
        occurred_at=event.occurred_at,
        workspace=event.workspace,
        actor=event.actor,
        data=dict(event.data),
    )
