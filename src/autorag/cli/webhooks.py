"""``autorag webhooks``: signed POSTs of the installation's events to URLs you register."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from autorag.cli._common import (
    camel_json,
    console,
    err_console,
    local_time,
    open_app,
    plural,
    print_json,
)
from autorag.errors import AutoragError, InvalidInput

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.webhooks.models import Delivery, Webhook
    from autorag.webhooks.service import WebhookService

app = typer.Typer(
    help="Webhooks: signed POSTs of the installation's events to URLs you register.\n\n"
    "Each delivery is a JSON body {id, event, timestamp, workspace, data} with the header "
    "X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the "
    "webhook's secret>, plus X-Webhook-Id (the same for every retry of one event), "
    "X-Webhook-Timestamp and X-Webhook-Event. The secret is shown once, when the webhook "
    "is added. A failed delivery is retried after 1, 2 and 4 s; 10 undelivered events in "
    "a row turn the webhook off. Private and loopback hosts are refused unless "
    "\\[webhooks] allow_private = true. Deliveries run while `autorag serve` or "
    "`autorag worker` runs.\n\n"
    "Example:\n\n"
    "  autorag webhooks add slack https://hooks.example.com/in --event document.failed\n\n"
    "  autorag webhooks test slack\n\n"
    "  autorag webhooks deliveries slack",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
NameArg = Annotated[str, typer.Argument(help="The webhook's name (see `autorag webhooks list`).")]
EventsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--event",
        "-e",
        metavar="EVENT",
        help="An event it wants (repeat for more; none: every event). "
        "`autorag webhooks events` lists them.",
    ),
]
STATUS_STYLE = {"delivered": "green", "failed": "red", "refused": "red"}


def _service(context: AppContext) -> WebhookService:
    from autorag.webhooks.service import WebhookService  # deferred: `--help` stays fast

    return WebhookService.for_context(context)


def _json(value: Any) -> Any:
    return camel_json(value)


def _status(status: str) -> str:
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/{style}]" if style else status


def _events(webhook: Webhook) -> str:
    return ", ".join(webhook.events) if webhook.events else "every event"


def _state(webhook: Webhook) -> str:
    if webhook.enabled:
        return "[green]on[/green]"
    return f"[dim]off[/dim] ({escape(webhook.disabled_reason or 'turned off')})"


@app.command("list")
def list_webhooks(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the webhooks, each with its last delivery."""
    hooks = _service(open_app(ctx)).list()
    if as_json:
        print_json(_json(hooks))
        return
    if not hooks:
        console.print("No webhooks: autorag webhooks add NAME URL [--event EVENT]…")
        return
    table = Table("name", "url", "events", "state", "failures", "last delivery")
    table.columns[1].overflow = "fold"
    for hook in hooks:
        last = hook.last_delivery
        table.add_row(
            escape(hook.name),
            escape(hook.url),
            escape(_events(hook)),
            _state(hook),
            str(hook.consecutive_failures),
            f"{_status(last.status)} {local_time(last.attempted_at)}" if last else "",
        )
    console.print(table)


@app.command("events")
def list_events(as_json: JsonFlag = False) -> None:
    """List the events a webhook may want, with what each means."""
    from autorag.store.catalog.outbox import EVENT_NAMES

    if as_json:
        print_json(dict(EVENT_NAMES))
        return
    table = Table("event", "when")
    for name, meaning in sorted(EVENT_NAMES.items()):
        table.add_row(name, meaning)
    console.print(table)


@app.command("add")
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for it: letters, digits, . _ -")],
    url: Annotated[str, typer.Argument(help="Where to POST: https://… (or http://…).")],
    event: EventsOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a webhook; its secret is printed this once.

    The receiver checks signatures with the secret: keep it there, it cannot be shown
    again.

    autorag webhooks add ci https://ci.example.com/autorag --event document.processed
    """
    webhook, secret = _service(open_app(ctx)).create(name, url, event or [])
    if as_json:
        print_json({**_json(webhook), "secret": secret})
        return
    console.print(
        f"Webhook {escape(webhook.name)} added: {escape(_events(webhook))} to "
        f"{escape(webhook.url)}.",
        highlight=False,
    )
    err_console.print(
        "[yellow]Its secret, shown this once[/yellow] (give it to the receiver: it signs "
        "every delivery):",
        highlight=False,
    )
    typer.echo(secret)


@app.command("rotate-secret")
def rotate_secret(ctx: typer.Context, name: NameArg, as_json: JsonFlag = False) -> None:
    """A new secret for the webhook, printed this once; the old one signs nothing more.

    autorag webhooks rotate-secret ci
    """
    webhook, secret = _service(open_app(ctx)).rotate_secret(name)
    if as_json:
        print_json({**_json(webhook), "secret": secret})
        return
    err_console.print(
        f"[yellow]The new secret of {escape(webhook.name)}, shown this once[/yellow] (give it "
        "to the receiver: the old one signs nothing more):",
        highlight=False,
    )
    typer.echo(secret)


@app.command("edit")
def edit(
    ctx: typer.Context,
    name: NameArg,
    url: Annotated[str | None, typer.Option("--url", help="A new URL.")] = None,
    event: EventsOpt = None,
    all_events: Annotated[
        bool, typer.Option("--all-events", help="Want every event (drops the --event list).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Change a webhook's URL or the events it wants.

    autorag webhooks edit ci --event document.processed --event document.failed
    """
    if all_events and event:
        raise InvalidInput("--all-events and --event contradict each other")
    events = [] if all_events else (event or None)
    if url is None and events is None:
        raise InvalidInput("nothing to change: give --url, --event or --all-events")
    webhook = _service(open_app(ctx)).update(name, url=url, events=events)
    if as_json:
        print_json(_json(webhook))
        return
    console.print(
        f"Webhook {escape(name)}: {escape(_events(webhook))} to {escape(webhook.url)}.",
        highlight=False,
    )


@app.command("enable")
def enable(ctx: typer.Context, name: NameArg, as_json: JsonFlag = False) -> None:
    """Turn a webhook on again (its count of failures cleared)."""
    webhook = _service(open_app(ctx)).enable(name)
    _switched(webhook, as_json)


@app.command("disable")
def disable(ctx: typer.Context, name: NameArg, as_json: JsonFlag = False) -> None:
    """Turn a webhook off: it keeps its settings and log, and gets no events."""
    webhook = _service(open_app(ctx)).disable(name, "turned off from the command line")
    _switched(webhook, as_json)


def _switched(webhook: Webhook, as_json: bool) -> None:
    if as_json:
        print_json(_json(webhook))
        return
    state = "on" if webhook.enabled else "off"
    console.print(f"Webhook {escape(webhook.name)} is {state}.", highlight=False)


@app.command("remove")
def remove(ctx: typer.Context, name: NameArg) -> None:
    """Remove a webhook and its delivery log."""
    _service(open_app(ctx)).delete(name)
    console.print(f"Removed webhook {escape(name)}.", highlight=False)


@app.command("test")
def test(ctx: typer.Context, name: NameArg, as_json: JsonFlag = False) -> None:
    """Send a webhook.test event now, once, and say how the receiver answered.

    autorag webhooks test ci
    """
    sent = _service(open_app(ctx)).send_test(name)
    if as_json:
        print_json(_json(sent))
    else:
        _print_delivery(sent)
    if sent.status != "delivered":
        raise AutoragError(f"the test event was not delivered: {sent.error}", code="not_delivered")


def _print_delivery(sent: Delivery) -> None:
    code = f" ({sent.response_code})" if sent.response_code is not None else ""
    took = f" in {sent.latency_ms} ms" if sent.latency_ms is not None else ""
    console.print(f"{_status(sent.status)}{code}{took}", highlight=False)


@app.command("deliveries")
def deliveries(
    ctx: typer.Context,
    name: NameArg,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """Show a webhook's delivery log, newest first: one line per attempt."""
    found = _service(open_app(ctx)).deliveries(name, limit)
    if as_json:
        print_json(_json(found))
        return
    if not found:
        console.print(f"No deliveries to {escape(name)} yet: autorag webhooks test {name}")
        return
    table = Table("when", "event", "attempt", "status", "code", "ms", "error")
    table.columns[-1].overflow = "fold"
    for one in found:
        table.add_row(
            local_time(one.attempted_at),
            escape(one.event) + (f" #{one.event_id}" if one.event_id else ""),
            str(one.attempt),
            _status(one.status),
            "" if one.response_code is None else str(one.response_code),
            "" if one.latency_ms is None else str(one.latency_ms),
            escape(one.error or ""),
        )
    console.print(table)
    failed = sum(1 for one in found if one.status != "delivered")
    if failed:
        console.print(f"{plural(failed, 'attempt')} not delivered.", highlight=False)
