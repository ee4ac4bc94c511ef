"""``autorag workspaces``: list, create, rename and remove workspaces."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from autorag.cli._common import console, local_time, open_app, print_json
from autorag.ops import workspaces as ws

app = typer.Typer(help="List, create, rename and remove workspaces.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
NameArg = Annotated[
    str, typer.Argument(help="Workspace name: lowercase letters, digits, '-' and '_'.")
]


def _as_dict(summary: ws.WorkspaceSummary) -> dict[str, Any]:
    return {
        "name": summary.info.name,
        "documents": summary.documents,
        "created_at": summary.created_at.isoformat(),
        "settings": summary.settings.model_dump(),
    }


@app.command("list")
def list_workspaces(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List workspaces with their document counts."""
    summaries = ws.list_workspaces(open_app(ctx).catalog)
    if as_json:
        print_json([_as_dict(s) for s in summaries])
        return
    table = Table("name", "documents", "created")
    for summary in summaries:
        table.add_row(summary.info.name, str(summary.documents), local_time(summary.created_at))
    console.print(table)


@app.command("create")
def create(ctx: typer.Context, name: NameArg, as_json: JsonFlag = False) -> None:
    """Create an empty workspace."""
    catalog = open_app(ctx).catalog
    info = ws.create_workspace(catalog, name)
    if as_json:
        print_json(_as_dict(ws.describe_workspace(catalog, info.name)))
        return
    console.print(f"Created workspace {info.name!r}.", highlight=False)


@app.command("rename")
def rename(
    ctx: typer.Context,
    name: NameArg,
    new_name: Annotated[str, typer.Argument(help="The new name.")],
    as_json: JsonFlag = False,
) -> None:
    """Rename a workspace; its documents, vectors and uploads follow."""
    context = open_app(ctx)
    target = context.for_workspace(context.catalog.get_workspace(name))
    info = ws.rename_workspace(target, new_name, protected=context.settings.workspace)
    if as_json:
        print_json(_as_dict(ws.describe_workspace(context.catalog, info.name)))
        return
    console.print(f"Renamed workspace {name!r} to {info.name!r}.", highlight=False)


@app.command("rm")
def remove(
    ctx: typer.Context,
    name: NameArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete a workspace with its documents, vectors and uploaded files."""
    context = open_app(ctx)
    target = context.for_workspace(context.catalog.get_workspace(name))
    if not yes:
        typer.confirm(f"Delete workspace {name!r} and everything in it?", abort=True)
    ws.delete_workspace(target, protected=context.settings.workspace)
    if as_json:
        print_json({"deleted": name})
        return
    console.print(f"Deleted workspace {name!r}.", highlight=False)
