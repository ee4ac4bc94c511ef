"""The ``autorag`` command."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from autorag import __version__
from autorag.cli._common import CliState, err_console
from autorag.errors import AutoragError, Conflict, Forbidden, InvalidInput, NotFound, Unavailable
from autorag.private_files import owner_only_umask

# Every command and its module under autorag.cli, in the order `autorag --help` lists them.
# "register": the module's register(app) defines the command; any other attribute is a
# sub-app mounted under the name. A module is imported only when one of its commands runs
# (or help lists them all): `autorag status` never loads the chat agent, the benchmarks or
# the web server, whose imports cost seconds on every call.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("index", "register"),
    "add": ("index", "register"),
    "remove": ("index", "register"),
    "refresh": ("index", "register"),
    "status": ("index", "register"),
    "reindex": ("index", "register"),
    "search": ("search", "register"),
    "ask": ("chat", "register"),
    "chat": ("chat", "register"),
    "serve": ("serve", "register"),
    "worker": ("serve", "register"),
    "migrate": ("migrate", "register"),
    "models": ("chat", "register"),
    "docs": ("docs", "app"),
    "eval": ("evaluate", "app"),
    "users": ("users", "app"),
    "keys": ("keys", "app"),
    "workspaces": ("workspaces", "app"),
    "dlp": ("dlp", "app"),
    "import": ("datasources", "app"),
    "policy": ("policy", "app"),
    "p2p": ("p2p", "app"),
    "ocr": ("ocr", "app"),
}


def load_commands(module_name: str, attribute: str, name: str) -> dict[str, Any]:
    """The click commands that ``autorag.cli.<module_name>`` defines, built by Typer as
    it builds them for the root app."""
    module = importlib.import_module(f"autorag.cli.{module_name}")
    holder = typer.Typer(add_completion=False)
    holder.callback()(_no_options)  # a group even for a single command
    if attribute == "register":
        module.register(holder)
    else:
        holder.add_typer(getattr(module, attribute), name=name)
    group = typer.main.get_command(holder)
    assert isinstance(group, TyperGroup)
    return dict(group.commands)


def _no_options() -> None:
    """The holder group's callback (never invoked: only its subcommands are used)."""


class _LazyCommands(MutableMapping[str, Any]):
    """The root group's commands: those of ``COMMANDS`` load on first access."""

    def __init__(self, eager: MutableMapping[str, Any]) -> None:
        self._loaded: dict[str, Any] = dict(eager)
        self._order = [*COMMANDS, *(name for name in eager if name not in COMMANDS)]

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            module_name, attribute = COMMANDS[name]
            self._loaded.update(load_commands(module_name, attribute, name))
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._order:
            self._order.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._order:
            raise KeyError(name)
        self._order.remove(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._order


class _LazyGroup(TyperGroup):
    def __init__(self, *, commands: MutableMapping[str, Any] | None = None, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _LazyCommands(commands or {})


app = typer.Typer(
    name="autorag",
    help="AutoRAG: a local-first knowledge server. Index folders, search them, ask with citations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=_LazyGroup,
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


def run() -> None:
    # Belt and braces: every file the command (or the server it starts) creates is the
    # owner's alone, besides the modes set and repaired where the data is written.
    owner_only_umask()
    try:
        app()
    except AutoragError as exc:
        err_console.print(f"[red]error:[/red] {exc.message}", highlight=False)
        sys.exit(next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1))
