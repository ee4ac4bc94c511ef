"""``autorag migrate``: move this workspace's stores to PostgreSQL (+ pgvector or Qdrant)."""

from __future__ import annotations

import dataclasses
import tomllib
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from autorag.cli._common import console, err_console, open_app, print_json
from autorag.ops.migrate import MigrationReport, migrate_to


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate_command)


def migrate_command(
    ctx: typer.Context,
    to: Annotated[str, typer.Option("--to", help="postgresql://user:pass@host/db (empty).")],
    vector_store: Annotated[
        str, typer.Option(help="pgvector (in the same database) | qdrant | lancedb")
    ] = "pgvector",
    samples: Annotated[int, typer.Option(min=0, max=1000, help="Searches compared.")] = 20,
    write_config: Annotated[
        bool,
        typer.Option("--write-config", help="Point autorag.toml at the copy when it checks out."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Copy the catalog to an empty PostgreSQL database and check the copy.

    The vectors are rebuilt there; the check compares row counts and runs sample searches
    that must find their documents.
    """
    app = open_app(ctx)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        console=err_console, disable=as_json,
    ) as bar:  # fmt: skip
        tasks: dict[str, TaskID] = {}

        def advance(what: str, done: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=None)
            bar.advance(tasks[what], done)

        report = migrate_to(app, to, vector_store=vector_store, samples=samples, progress=advance)
    if write_config and report.ok:
        config = app.workspace.config_file
        current = tomllib.loads(config.read_text("utf-8")) if config.is_file() else {}
        app.workspace.write_config({**current, "database_url": to, "vector_store": vector_store})
    if as_json:
        print_json({**dataclasses.asdict(report), "ok": report.ok})
    else:
        _show(report, wrote=write_config and report.ok)
    if not report.ok:
        raise typer.Exit(1)


def _show(report: MigrationReport, *, wrote: bool) -> None:
    table = Table("table", "source rows", "target rows")
    for count in report.tables:
        style = None if count.same else "red"
        table.add_row(count.table, str(count.source), str(count.target), style=style)
    console.print(table)
    found = sum(s.found_in_target for s in report.samples)
    console.print(
        f"{report.embedded_chunks} chunks embedded into {report.vector_store}; "
        f"{found}/{len(report.samples)} sample searches found their document in the copy; "
        f"{report.seconds:.1f} s",
        highlight=False,
    )
    if report.ok:
        hint = (
            "autorag.toml now points at it."
            if wrote
            else (
                f'set database_url = "{report.target}" and vector_store = "{report.vector_store}"'
            )
        )
        console.print(f"[green]The copy checks out.[/green] {hint}", highlight=False)
    else:
        console.print("[red]The copy does not match the source; see above.[/red]")
