"""The ``autorag`` command."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from autorag import __version__
from autorag.cli import (
    chat,
    datasources,
    dlp,
    docs,
    evaluate,
    index,
    keys,
    migrate,
    ocr,
    p2p,
    policy,
    search,
    serve,
    users,
    workspaces,
)
from autorag.cli._common import CliState, err_console
from autorag.errors import AutoragError, Conflict, Forbidden, InvalidInput, NotFound, Unavailable
from autorag.private_files import owner_only_umask

app = typer.Typer(
    name="autorag",
    help="AutoRAG: a local-first knowledge server. Index folders, search them, ask with citations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

EXIT_CODES: dict[type[AutoragError], int] = {
    InvalidInput: 2,
    NotFound: 3,
    Conflict: 4,
    Unavailable: 5,
    Forbidden: 6,
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"autorag {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            envvar="AUTORAG_WORKSPACE_DIR",
            help="Workspace folder (default: the nearest one above the current folder).",
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(message)s")
    ctx.obj = CliState(workspace)


index.register(app)
search.register(app)
chat.register(app)
serve.register(app)
migrate.register(app)
app.add_typer(docs.app, name="docs")
app.add_typer(evaluate.app, name="eval")
app.add_typer(users.app, name="users")
app.add_typer(keys.app, name="keys")
app.add_typer(workspaces.app, name="workspaces")
app.add_typer(dlp.app, name="dlp")
app.add_typer(datasources.app, name="import")
app.add_typer(policy.app, name="policy")
app.add_typer(p2p.app, name="p2p")
app.add_typer(ocr.app, name="ocr")


def run() -> None:
    # Belt and braces: every file the command (or the server it starts) creates is the
    # owner's alone, besides the modes set and repaired where the data is written.
    owner_only_umask()
    try:
        app()
    except AutoragError as exc:
        err_console.print(f"[red]error:[/red] {exc.message}", highlight=False)
        sys.exit(next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1))
