"""The ``autorag`` command."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from autorag import __version__
from autorag.cli._common import CliState, err_console, print_error, print_usage_error
from autorag.errors import AutoragError, Conflict, Forbidden, InvalidInput, NotFound, Unavailable
from autorag.private_files import owner_only_umask


class Entry(NamedTuple):
    """Where a top-level command lives, and the line ``autorag --help`` shows for it.

    ``attribute`` "register": the module's register(app) defines the command; any other
    attribute is a sub-app mounted under the name. ``summary`` is the first paragraph of
    the command's own help (a unit test keeps the two equal): the root help lists it
    without importing the module.
    """

    module: str
    attribute: str
    summary: str


# Every command, in the order `autorag --help` lists them. A module is imported only when
# one of its commands runs: `autorag --help` imports none, `autorag status` never loads
# the chat agent, the benchmarks or the web server, whose imports cost seconds per call.
COMMANDS: dict[str, Entry] = {
    "init": Entry(
        "index",
        "register",
        "Create a workspace: DIR/autorag.toml and DIR/.autorag/.",
    ),
    "add": Entry(
        "index",
        "register",
        "Register folders (or single files) as search paths (source roots).",
    ),
    "remove": Entry(
        "index",
        "register",
        "Unregister search paths; their documents leave the index on the next refresh.",
    ),
    "refresh": Entry(
        "index",
        "register",
        "Index new and changed files, drop deleted ones. Safe to interrupt and re-run.",
    ),
    "status": Entry(
        "index",
        "register",
        "Readiness (configured | degraded | unavailable | ready), counts and failed files.",
    ),
    "reindex": Entry(
        "index",
        "register",
        "Rebuild vectors and the full-text index from the catalog, after a model change.",
    ),
    "search": Entry(
        "search",
        "register",
        "Hybrid search (vectors + full-text, fused with RRF).",
    ),
    "ask": Entry(
        "chat",
        "register",
        "Answer a question from the documents, with numbered \\[n] citations.",
    ),
    "chat": Entry(
        "chat",
        "register",
        "A conversation in the terminal. /model NAME switches model, /new starts over,"
        " /quit leaves; Ctrl+C stops an answer.",
    ),
    "serve": Entry(
        "serve",
        "register",
        "Serve the HTTP API (OpenAPI docs at /docs).",
    ),
    "worker": Entry(
        "serve",
        "register",
        "Process background jobs (uploads, OCR, re-embedding) without serving HTTP.",
    ),
    "migrate": Entry(
        "migrate",
        "register",
        "Copy the catalog to an empty PostgreSQL database and check the copy.",
    ),
    "models": Entry(
        "models",
        "register",
        "Connect model servers (Ollama, OpenAI-compatible), list the models on offer, set"
        " the global default model.",
    ),
    "docs": Entry(
        "docs",
        "app",
        "List, show and remove indexed documents.",
    ),
    "eval": Entry(
        "evaluate",
        "app",
        "Retrieval benchmarks.",
    ),
    "users": Entry(
        "users",
        "app",
        "Manage users, their roles and workspaces.",
    ),
    "keys": Entry(
        "keys",
        "app",
        "Create, list and revoke API keys.",
    ),
    "workspaces": Entry(
        "workspaces",
        "app",
        "List, create, rename and remove workspaces.",
    ),
    "dlp": Entry(
        "dlp",
        "app",
        "Find and redact secrets and personal data (DLP).",
    ),
    "import": Entry(
        "datasources",
        "app",
        "Import datasources (chat exports) into the index.",
    ),
    "youtube": Entry(
        "youtube",
        "app",
        "YouTube videos as documents: their transcripts, timestamps kept.",
    ),
    "policy": Entry(
        "policy",
        "app",
        "Source policy: glob rules deciding which sources peers may get.",
    ),
    "wiki": Entry(
        "wiki",
        "app",
        "Archives: the workspace's markdown wikis, with links between pages, backlinks and"
        " history.",
    ),
    "synth": Entry(
        "synth",
        "app",
        "Synthesis: the agent proposes archive pages from the documents; a person approves.",
    ),
    "backup": Entry(
        "backup",
        "app",
        "Backups: encrypted, verified archives of the workspace; restore, schedules, keys.",
    ),
    "events": Entry(
        "events",
        "app",
        "The event log: what happened (documents, chats, users, workspaces, approvals, "
        "backups), as it happens.",
    ),
    "webhooks": Entry(
        "webhooks",
        "app",
        "Webhooks: signed POSTs of the installation's events to URLs you register.",
    ),
    "widgets": Entry(
        "widgets",
        "app",
        "Chat widgets: a chat bubble other sites embed with one script tag, answering "
        "anonymous visitors from a workspace.",
    ),
    "p2p": Entry("p2p", "app", "Peer-to-peer queries over SimpleX."),
    "ocr": Entry(
        "ocr",
        "app",
        "OCR of scanned pages and images: jobs, per-page results, approve or reject.",
    ),
    "mcp": Entry(
        "mcp",
        "app",
        "MCP: serve the knowledge base's tools to assistants and editors (no subcommand);"
        " install MCP tool servers for the agent.",
    ),
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
        # While the root help is written: an unloaded command is a stand-in that carries
        # only its summary, so listing the commands imports none of their modules.
        self.summaries_only = False
        self._order = [*COMMANDS, *(name for name in eager if name not in COMMANDS)]

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            if self.summaries_only:
                return TyperCommand(name, short_help=COMMANDS[name].summary)
            entry = COMMANDS[name]
            self._loaded.update(load_commands(entry.module, entry.attribute, name))
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
        self.commands = self.lazy_commands = _LazyCommands(commands or {})

    # Typed loosely: Typer vendors click, whose Context and HelpFormatter are private.
    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.lazy_commands.summaries_only = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.lazy_commands.summaries_only = False


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
        # Not standalone: Typer would draw a usage error as a boxed panel under the usage.
        code = app(standalone_mode=False)
    except AutoragError as exc:
        print_error(exc.message)
        sys.exit(next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1))
    except typer.TyperException as exc:  # click's usage errors: one line and a hint
        print_usage_error(exc)
        sys.exit(exc.exit_code)
    except typer.Abort:  # the end of input at a confirmation prompt
        err_console.print("Aborted.")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
