"""``autorag events``: the event log (documents processed, chats completed, users and
workspaces changed, approvals waiting, backups…), listed or followed as it grows."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from autorag.cli._common import console, local_time, open_app, print_json
from autorag.errors import InvalidInput
from autorag.store.catalog import outbox

if TYPE_CHECKING:
    from sqlalchemy import Engine

app = typer.Typer(
    help="The event log: what happened (documents, chats, users, workspaces, approvals, "
    "backups), as it happens.\n\n"
    "Every event is written with the change it describes, and delivered to webhooks and "
    "notifications by `autorag serve` or `autorag worker`.\n\n"
    "Example:\n\n"
    "  autorag events list --name document.failed\n\n"
    "  autorag events list --follow --json",
    no_args_is_help=True,
)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
FOLLOW_POLL_S = 0.5  # how often a follower looks for new events


@app.command("list")
def list_events(
    ctx: typer.Context,
    name: Annotated[
        list[str] | None,
        typer.Option("--name", metavar="EVENT", help="Only this event (repeatable)."),
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", metavar="NAME", help="Only this workspace's.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="YYYY-MM-DD[THH:MM]", help="Only events since (UTC)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many.")] = 50,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events until Ctrl+C.")
    ] = False,
    as_json: JsonFlag = False,
    most: Annotated[int | None, typer.Option("--max", hidden=True, min=1)] = None,
) -> None:
    """List the newest events, oldest first; --follow goes on with each new one.

    With --json, one JSON object a line.

    autorag events list --follow --name backup.failed
    """
    names = _known(name or [])
    context = open_app(ctx)
    try:
        engine = context.catalog.engine
        found = outbox.list_events(
            engine, names=names, since=_since(since), workspace=workspace, limit=limit
        )
        shown = list(reversed(found))
        if not follow:
            _print_list(shown, as_json)
            return
        line = event_json_line if as_json else event_line
        _follow(engine, shown, names, workspace, lambda e: typer.echo(line(e)), most)
    finally:
        context.close()


@app.command("names")
def list_names(as_json: JsonFlag = False) -> None:
    """The events there are, with what each means (for --name and webhooks)."""
    if as_json:
        print_json(dict(outbox.EVENT_NAMES))
        return
    table = Table("event", "meaning")
    for name, meaning in outbox.EVENT_NAMES.items():
        table.add_row(name, meaning)
    console.print(table)


def _follow(
    engine: Engine,
    shown: Sequence[outbox.Event],
    names: Sequence[str],
    workspace: str | None,
    echo: Callable[[outbox.Event], None],
    most: int | None,
) -> None:
    """Print ``shown``, then new events as they are committed (by any process: the
    catalog is polled), until Ctrl+C or ``most`` events were printed."""
    last = shown[-1].id if shown else outbox.latest_id(engine)
    printed = 0
    pending = list(shown)
    try:
        while most is None or printed < most:
            for event in pending[: None if most is None else most - printed]:
                echo(event)
                printed += 1
                last = max(last, event.id)
            if most is not None and printed >= most:
                return
            pending = outbox.list_events(
                engine, after_id=last, names=names, workspace=workspace, newest_first=False
            )
            if not pending:
                outbox.wait_for_events(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return


def _print_list(events: Sequence[outbox.Event], as_json: bool) -> None:
    if as_json:
        print_json([event_json(e) for e in events])
        return
    if not events:
        console.print("No events.")
        return
    table = Table("id", "when", "event", "workspace", "by", "data")
    table.columns[0].no_wrap = True
    for event in events:
        table.add_row(
            str(event.id),
            local_time(event.occurred_at),
            event.name,
            escape(event.workspace or ""),
            escape(event.actor or ""),
            escape(_data(event)),
        )
    console.print(table)


def event_json(event: outbox.Event) -> dict[str, Any]:
    return {
        "id": event.id,
        "event": event.name,
        "occurredAt": event.occurred_at.isoformat(),
        "workspace": event.workspace,
        "actor": event.actor,
        "data": dict(event.data),
    }


def event_json_line(event: outbox.Event) -> str:
    return json.dumps(event_json(event), ensure_ascii=False, separators=(",", ":"))


def event_line(event: outbox.Event) -> str:
    where = f" [{event.workspace}]" if event.workspace else ""
    who = f" by {event.actor}" if event.actor else ""
    return f"{local_time(event.occurred_at)}  #{event.id} {event.name}{where}{who}  {_data(event)}"


def _data(event: outbox.Event) -> str:
    return json.dumps(dict(event.data), ensure_ascii=False, separators=(", ", ": "))


def _known(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in outbox.EVENT_NAMES]
    if unknown:
        raise InvalidInput(
            f"unknown event {unknown[0]!r} (see `autorag events names` for the list)"
        )
    return list(names)


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"not a date: {value!r} (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC)", param_hint="--since"
        ) from None
