"""``autorag synth``: the agent proposes archive pages from the workspace's documents, and
nothing is written until a person approves."""

from __future__ import annotations

import getpass
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from autorag.cli._common import console, err_console, local_time, open_app, plural, print_json
from autorag.errors import AutoragError, Forbidden, Unavailable
from autorag.text import one_line

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.synth.models import Decision, Passage, SynthItem, SynthRun
    from autorag.synth.service import SynthService

app = typer.Typer(
    help="Synthesis: the agent proposes archive pages from the documents; a person approves.\n\n"
    "A run reads documents (all new and changed ones, or those you choose) in five passes: "
    "the entities each one is about, a summary of each, the archive's pages that already "
    "cover an entity, a decision per entity (a new page, an update, skip, or a "
    "contradiction to flag), and the archive's overview page. What it proposes waits for "
    "review: nothing is written until you approve it. Without a model configured, the "
    "rules of the extractive mode stand in for one, and say so.\n\n"
    "Example:\n\n"
    "  autorag synth run handbook --since 2026-11-01\n\n"
    "  autorag synth show 7\n\n"
    "  autorag synth approve 7 --only 12,13\n\n"
    "  autorag synth reject 7",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
RunArg = Annotated[int, typer.Argument(min=1, help="The run's id (see `autorag synth ls`).")]
OnlyOpt = Annotated[
    str | None,
    typer.Option("--only", metavar="ITEM,ITEM", help="Only these items (ids from `synth show`)."),
]
BackgroundOpt = Annotated[
    bool,
    typer.Option(
        "--background",
        help="Queue the run and return: `autorag serve` or `autorag worker` runs it.",
    ),
]
PASS_LABELS = {
    "entity_extraction": "entities",
    "summary_generation": "summaries",
    "candidate_search": "existing pages",
    "llm_decision": "decisions",
    "write_overview": "overview",
}
REASON_CHARS = 60  # of a reason in the items' table
ACTION_STYLE = {
    "create": "green",
    "update": "cyan",
    "skip": "dim",
    "contradiction": "red",
    "overview": "magenta",
}
PASSAGE_CHARS = 400  # of a cited passage, as `show` prints it


def _who() -> str:
    return f"{getpass.getuser()} (command line)"


def _synth(app: AppContext) -> SynthService:
    from autorag.synth.service import SynthService  # deferred: `autorag --help` stays fast

    return SynthService.for_context(app)


def _json(value: Any) -> Any:
    """A synthesis value keyed as the API answers it (camelCase: ``runId``, ``createdAt``)."""
    from autorag.wiki.wire import as_json  # deferred: `autorag --help` stays fast

    return as_json(value)


def _ids(value: str | None, option: str) -> tuple[int, ...] | None:
    """``12,13`` as ids; None when the option was not given."""
    if value is None:
        return None
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise typer.BadParameter(f"not a list of ids: {value!r} (like 12,13)", param_hint=option)
    return tuple(dict.fromkeys(int(part) for part in parts))


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"not a date: {value!r} (YYYY-MM-DD)", param_hint="--since"
        ) from None
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


# -- run --------------------------------------------------------------------------------
@app.command("run")
def run(
    ctx: typer.Context,
    archive: Annotated[str, typer.Argument(help="The archive the pages go to.")],
    docs: Annotated[
        str | None,
        typer.Option("--docs", metavar="ID,ID", help="Only these documents (`autorag docs list`)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="YYYY-MM-DD", help="Only documents indexed since."),
    ] = None,
    doc_type: Annotated[
        str | None, typer.Option("--type", help="Only documents of this type: pdf, docx, md, …")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="PROVIDER/MODEL",
            help="The model that reads (default: the workspace's chat model).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Also read documents already synthesised and unchanged since."
        ),
    ] = False,
    background: BackgroundOpt = False,
    as_json: JsonFlag = False,
) -> None:
    """Read documents into an archive and propose pages, with a progress bar per pass.

    Without filters, every ready document not synthesised into this archive yet (or
    changed since) is read.

    The run then waits for review: `autorag synth show N`, then `approve` or `reject`.

    autorag synth run handbook --docs 4,9 --model ollama/llama3.1
    """
    from autorag.synth.models import Selection

    ids = _ids(docs, "--docs")
    if ids is not None and (since is not None or doc_type is not None):
        raise typer.BadParameter("give documents by id, or by --since/--type; not both")
    selection = Selection(
        document_ids=ids or (),
        since=_since(since),
        doc_type=doc_type,  # the service normalises it (".PDF" is "pdf")
        force=force,
    )
    context = open_app(ctx)
    synth = _synth(context)
    started = synth.start(archive, selection, model=model, by=_who())
    if background:
        _queued(started, as_json)
        return
    _run_now(context, synth, started, as_json)


def _queued(run: SynthRun, as_json: bool) -> None:
    if as_json:
        print_json(_json(run))
        return
    console.print(
        f"Queued run {run.id} on {run.archive!r} ({plural(run.sources, 'document')}): "
        "`autorag serve` or `autorag worker` runs it; follow it with "
        f"`autorag synth show {run.id}`.",
        highlight=False,
    )


def _run_now(context: AppContext, synth: SynthService, run: SynthRun, as_json: bool) -> None:
    """Run the queued run here, with a progress bar per pass, then show what it proposes."""
    _skipped(run, as_json)
    with _PassBars(disable=as_json) as bars:
        done = _execute_here(context, synth, run.id, bars.show)
    items = synth.items(done.id)
    if as_json:
        print_json({"run": _json(done), "items": _json(items)})
    else:
        _summary(done, items)
    _outcome(done)


def _execute_here(
    context: AppContext, synth: SynthService, run_id: int, show: Callable[[SynthRun], None]
) -> SynthRun:
    """Run the workspace's queued synthesis jobs in this process (this run among them)
    until this run stops; a server's worker may have taken it first: then wait for it."""
    # Imported here: the worker pool brings the whole ingestion machinery.
    from autorag.jobs.worker import TICK_INTERVAL_S, WorkerPool
    from autorag.synth.models import ACTIVE_STATUSES
    from autorag.synth.service import SYNTH_JOB

    def tick() -> None:
        show(synth.run(run_id))

    # One thread: a run's passes are sequential, and two runs into one archive should
    # not race each other's pages.
    WorkerPool(context, workers=1).run_queued(
        kinds=[SYNTH_JOB], workspace_id=context.info.id, tick=tick
    )
    current = synth.run(run_id)
    while current.status in ACTIVE_STATUSES:  # another process's worker holds it
        show(current)
        time.sleep(TICK_INTERVAL_S)
        current = synth.run(run_id)
    show(current)
    return current


class _PassBars:
    """One progress bar per pass, on stderr (stdout stays clean for --json)."""

    def __init__(self, *, disable: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            disable=disable,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _PassBars:
        from autorag.synth.models import PASSES

        self.progress.__enter__()
        for number, name in enumerate(PASSES, 1):
            label = f"{number}/{len(PASSES)} {PASS_LABELS.get(name, name)}"
            self.tasks[name] = self.progress.add_task(label, total=None, start=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def show(self, run: SynthRun) -> None:
        for one in run.passes:
            task = self.tasks.get(one.name)
            if task is None or one.state == "waiting":
                continue
            self.progress.start_task(task)
            total = max(one.total, one.done) or (1 if one.state == "done" else None)
            done = total if one.state == "done" and total else one.done
            self.progress.update(task, completed=done, total=total)


def _outcome(run: SynthRun) -> None:
    """A run that did not reach review ends the command with its error (and exit code)."""
    if run.status == "paused":
        raise Unavailable(
            f"run {run.id} paused: {run.error or 'the model was unavailable'}. When the model "
            f"answers again: autorag synth resume {run.id}",
            code=run.error_code or "model_unavailable",
        )
    if run.status == "failed":
        kind = Forbidden if run.error_code == "local_llm_only" else AutoragError
        raise kind(
            f"run {run.id} failed: {run.error or 'see the log'}", code=run.error_code or None
        )


def _summary(run: SynthRun, items: list[SynthItem]) -> None:
    if run.status == "cancelled":
        console.print(f"Run {run.id} was cancelled; nothing was proposed.", highlight=False)
        return
    if run.status in ("paused", "failed"):
        return  # _outcome says why
    counts = Counter(item.action for item in items)
    what = ", ".join(f"{n} {action}" for action, n in counts.most_common())
    console.print(
        f"Run {run.id} on {run.archive!r} read {plural(run.sources, 'document')} and "
        f"proposes {plural(len(items), 'item')}{f' ({what})' if what else ''}.",
        highlight=False,
    )
    _mode_line(run)
    if items:
        _items_table(items)
    if run.pending:
        console.print(
            f"Next: `autorag synth show {run.id}` (each item's diff and sources), then "
            f"`autorag synth approve {run.id}` (or `--only ITEM,ITEM`) or "
            f"`autorag synth reject {run.id}`.",
            highlight=False,
        )


def _mode_line(run: SynthRun) -> None:
    if run.mode == "extractive":
        console.print(
            "[yellow]Extractive mode: no model wrote these texts.[/yellow] They are the "
            "documents' own sentences, picked by rules (connect a model for written pages: "
            "`autorag models`).",
            highlight=False,
        )
        return
    console.print(
        f"Model {escape(run.model)}: {plural(run.model_calls, 'call')}, "
        f"{run.prompt_tokens} prompt + {run.completion_tokens} completion tokens.",
        highlight=False,
    )


def _skipped(run: SynthRun, as_json: bool) -> None:
    if as_json or not run.skipped:
        return
    console.print(f"Skipped {plural(len(run.skipped), 'document')}:", highlight=False)
    for skipped in run.skipped:
        console.print(f"  {escape(skipped.source_id)}: {escape(skipped.reason)}", highlight=False)


def _sources_of(passages: tuple[Passage, ...]) -> list[str]:
    return list(dict.fromkeys(p.source_id or p.page_path or "" for p in passages if p))


def _items_table(items: list[SynthItem]) -> None:
    table = Table("item")
    table.add_column("action", no_wrap=True)
    table.add_column("page", overflow="fold", ratio=2)
    table.add_column("sources", overflow="fold", ratio=2)
    # The reason in full is `synth show`'s: here the start of it.
    table.add_column("reason", ratio=3)
    table.add_column("status", no_wrap=True)
    for item in items:
        style = ACTION_STYLE.get(item.action, "")
        table.add_row(
            str(item.id),
            f"[{style}]{item.action}[/{style}]" if style else item.action,
            escape(item.path),
            escape("\n".join(_sources_of(item.sources))),
            escape(one_line(item.reason, REASON_CHARS)),
            _status(item),
        )
    console.print(table)


def _status(item: SynthItem) -> str:
    if item.status == "applied" and item.applied_version is not None:
        return f"applied (version {item.applied_version})"
    if item.status == "pending" and item.stale:
        return "[yellow]pending, page edited since[/yellow]"
    return {"conflict": "[yellow]conflict[/yellow]", "rejected": "[dim]rejected[/dim]"}.get(
        item.status, item.status
    )


# -- ls, show ---------------------------------------------------------------------------
@app.command("ls")
def list_runs(
    ctx: typer.Context,
    archive: Annotated[
        str | None, typer.Argument(help="Only this archive's runs; without it, every archive's.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List synthesis runs, newest first.

    autorag synth ls handbook
    """
    runs = _synth(open_app(ctx)).runs(archive)
    if as_json:
        print_json(_json(runs))
        return
    if not runs:
        console.print("No synthesis runs yet: autorag synth run ARCHIVE")
        return
    table = Table("run", "archive", "status", "mode", "docs", "items", "pending", "started")
    for column in table.columns[:-1]:
        column.no_wrap = True
    for one in runs:
        table.add_row(
            str(one.id),
            escape(one.archive),
            _run_status(one),
            "extractive" if one.mode == "extractive" else escape(one.model),
            str(one.sources),
            str(one.items),
            str(one.pending),
            local_time(one.created_at),
        )
    console.print(table)


def _run_status(run: SynthRun) -> str:
    if run.status == "running" and run.cancel_requested:
        return "running (stopping: cancelled)"
    if run.status in ("queued", "running") and run.current_pass:
        return f"{run.status} ({PASS_LABELS.get(run.current_pass, run.current_pass)})"
    colour = {"ready": "green", "paused": "yellow", "failed": "red"}.get(run.status)
    return f"[{colour}]{run.status}[/{colour}]" if colour else run.status


@app.command("show")
def show(ctx: typer.Context, run_id: RunArg, as_json: JsonFlag = False) -> None:
    """Show a run's proposed change set: each item's diff, its cited source passages,
    and both passages of a contradiction.

    autorag synth show 7
    """
    synth = _synth(open_app(ctx))
    found = synth.run(run_id)
    items = synth.items(run_id)
    if as_json:
        print_json({"run": _json(found), "items": _json(items)})
        return
    _header(found)
    for item in items:
        _item(item)
    if found.pending and found.status in ("ready", "partially_applied"):
        console.rule()
        console.print(
            f"Approve: `autorag synth approve {found.id}` (or `--only ITEM,ITEM`); "
            f"reject: `autorag synth reject {found.id}`.",
            highlight=False,
        )


def _header(run: SynthRun) -> None:
    console.print(
        f"[bold]Run {run.id}[/bold] on {escape(run.archive)!r}: {_run_status(run)} · "
        f"{plural(run.sources, 'document')} · {plural(run.items, 'item')}, "
        f"{run.pending} pending · started {local_time(run.created_at)} by "
        f"{escape(run.created_by)}",
        highlight=False,
    )
    if run.decided_by:
        console.print(
            f"Decided by {escape(run.decided_by)}, {local_time(run.decided_at)}.", highlight=False
        )
    _mode_line(run)
    if run.status in ("queued", "running", "paused"):
        passes = ", ".join(
            f"{PASS_LABELS.get(p.name, p.name)} {p.done}/{p.total}" for p in run.passes
        )
        console.print(f"Passes: {passes}", highlight=False)
    if run.error:
        console.print(f"[red]{escape(run.error)}[/red]", highlight=False)
    _skipped(run, as_json=False)


def _item(item: SynthItem) -> None:
    style = ACTION_STYLE.get(item.action, "")
    title = f" — {escape(item.title)}" if item.title and item.title != item.path else ""
    console.rule(
        f"[bold]Item {item.id}[/bold] · [{style}]{item.action}[/{style}] · "
        f"{escape(item.path or item.entity)}{title} · {_status(item)}",
        align="left",
    )
    if item.reason:
        console.print(f"Why: {escape(item.reason)}", highlight=False)
    if item.stale and item.status == "pending":
        console.print(
            "[yellow]A person saved this page after the run read it: approving leaves it as "
            "a conflict (--overwrite applies it on top).[/yellow]",
            highlight=False,
        )
    _diff(item)
    if item.contradiction:
        console.print("[bold red]Contradiction[/bold red]")
        for label, passage in zip(
            ("The page says", "The source says"), item.contradiction, strict=False
        ):
            _passage(passage, label)
    if item.sources:
        console.print("[bold]Sources[/bold]")
        for number, passage in enumerate(item.sources, 1):
            _passage(passage, f"[{number}]")


def _diff(item: SynthItem) -> None:
    if item.diff:
        for line in item.diff.splitlines():
            style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
            console.print(line, style=style, markup=False, highlight=False)
    elif item.body:
        console.print(item.body, markup=False, highlight=False)


def _passage(passage: Passage, label: str) -> None:
    where = passage.source_id or (f"page {passage.page_path}" if passage.page_path else "")
    if passage.page is not None:
        where = f"{where}, p. {passage.page}"
    head = " · ".join(part for part in (passage.title, where) if part)
    text = " ".join(passage.text.split())
    if len(text) > PASSAGE_CHARS:
        text = text[: PASSAGE_CHARS - 1] + "…"
    console.print(f"  {escape(label)} [dim]{escape(head)}[/dim]", highlight=False)
    console.print(f"    {text}", markup=False, highlight=False)


# -- approve, reject, cancel, resume ----------------------------------------------------
@app.command("approve")
def approve(
    ctx: typer.Context,
    run_id: RunArg,
    only: OnlyOpt = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Apply items whose page a person saved after the run read it."
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Save the proposed pages (all pending items, or --only some) as new page versions.

    Each page's history names the run and its source documents. A page a person saved
    after the run read it is not overwritten: that item becomes a conflict (approve it
    with --overwrite once reviewed).

    autorag synth approve 7 --only 12,13
    """
    ids = _ids(only, "--only")
    synth = _synth(open_app(ctx))
    decision = synth.approve(run_id, only=ids, by=_who(), overwrite=overwrite)
    if as_json:
        print_json(_json(decision))
        return
    run = decision.run
    pages = ", ".join(decision.pages)
    console.print(
        f"Applied {plural(len(decision.applied), 'item')} to {run.archive!r}"
        f"{f': {pages}' if pages else ''}.",
        highlight=False,
    )
    if decision.conflicts:
        _conflicts(synth, run, decision)
    _decided(run)


def _conflicts(synth: SynthService, run: SynthRun, decision: Decision) -> None:
    paths = {item.id: item.path for item in synth.items(run.id)}
    listed = ", ".join(f"{i} ({paths.get(i, '?')})" for i in decision.conflicts)
    console.print(
        f"[yellow]{plural(len(decision.conflicts), 'item')} left as conflicts[/yellow], "
        f"their page changed after the run read it: {escape(listed)}. Review with "
        f"`autorag synth show {run.id}`; `autorag synth approve {run.id} --only "
        f"{decision.conflicts[0]} --overwrite` applies one on top.",
        highlight=False,
    )


def _decided(run: SynthRun) -> None:
    left = f"; {run.pending} still to decide" if run.pending else ""
    console.print(f"Run {run.id}: {run.status}{left}.", highlight=False)


@app.command("reject")
def reject(
    ctx: typer.Context, run_id: RunArg, only: OnlyOpt = None, as_json: JsonFlag = False
) -> None:
    """Discard the proposed items (all pending ones, or --only some); nothing is written.

    autorag synth reject 7 --only 14
    """
    ids = _ids(only, "--only")
    decision = _synth(open_app(ctx)).reject(run_id, only=ids, by=_who())
    if as_json:
        print_json(_json(decision))
        return
    console.print(
        f"Rejected {plural(len(decision.rejected), 'item')}; nothing was written.",
        highlight=False,
    )
    _decided(decision.run)


@app.command("cancel")
def cancel(ctx: typer.Context, run_id: RunArg, as_json: JsonFlag = False) -> None:
    """Stop a run: a queued or paused one at once, a running one after its current step.

    autorag synth cancel 7
    """
    stopped = _synth(open_app(ctx)).cancel(run_id, by=_who())
    if as_json:
        print_json(_json(stopped))
        return
    if stopped.status == "cancelled":
        console.print(f"Run {stopped.id} cancelled.", highlight=False)
    else:
        console.print(
            f"Run {stopped.id}: cancel requested; it stops after the step it is in.",
            highlight=False,
        )


@app.command("resume")
def resume(
    ctx: typer.Context, run_id: RunArg, background: BackgroundOpt = False, as_json: JsonFlag = False
) -> None:
    """Go on with a paused run (its model was unavailable) from the step it stopped at.

    The steps already done are not repeated. A failed run is tried again the same way.

    autorag synth resume 7
    """
    context = open_app(ctx)
    synth = _synth(context)
    queued = synth.resume(run_id, by=_who())
    if background:
        _queued(queued, as_json)
        return
    _run_now(context, synth, queued, as_json)


# `autorag synth --help` lists the commands in the order a user meets them.
_ORDER = ["run", "ls", "show", "approve", "reject", "cancel", "resume"]
app.registered_commands.sort(key=lambda command: _ORDER.index(command.name or ""))
