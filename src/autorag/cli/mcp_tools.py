"""``autorag mcp install|list|uninstall|allow|test``: MCP tool servers installed in a
workspace, their tools the agent's skills (attached to the ``autorag mcp`` group by
``autorag.cli.mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from autorag.cli._common import camel_json, console, open_app, plural, print_json
from autorag.errors import InvalidInput

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.mcp_tools.models import McpServer
    from autorag.mcp_tools.service import McpToolService

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
NameArg = Annotated[str, typer.Argument(help="The server's name (see `autorag mcp list`).")]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option("--workspace", metavar="NAME", help="The workspace (default: the default one)."),
]
ToolsOpt = Annotated[
    str | None,
    typer.Option(
        "--tools", metavar="A,B", help="The tools the agent may call (default: every one listed)."
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="How long a call may take once the server is up (default: agent.skill_timeout_s).",
    ),
]


def _service(context: AppContext, workspace: str | None) -> McpToolService:
    from autorag.mcp_tools.service import McpToolService  # deferred: `--help` stays fast

    if workspace:
        context = context.for_workspace(context.catalog.get_workspace(workspace))
    return McpToolService(context)


def _tools(value: str | None) -> list[str] | None:
    return None if value is None else [t.strip() for t in value.split(",") if t.strip()]


def _where(server: McpServer) -> str:
    return " ".join(server.command) if server.transport == "stdio" else server.url or ""


def install(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for it: lowercase letters, digits, '-'.")],
    command: Annotated[
        str | None,
        typer.Option("--command", help="Start it with this command line (stdio; no shell)."),
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="Reach it at this URL (HTTP).")] = None,
    header: Annotated[
        list[str] | None,
        typer.Option("--header", metavar="NAME:VALUE", help="An HTTP header (repeatable)."),
    ] = None,
    tools: ToolsOpt = None,
    timeout: TimeoutOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Install an MCP server: it is started (or reached) once and its tools listed.

    autorag mcp install files --command "npx -y @modelcontextprotocol/server-filesystem /srv"
    --tools read_file,list_directory
    """
    headers = dict(_header(h) for h in header or [])
    service = _service(open_app(ctx), workspace)
    server = service.install(
        name, command=command, url=url, headers=headers, tools=_tools(tools), timeout_s=timeout
    )
    if as_json:
        print_json(camel_json(server))
        return
    allowed = ", ".join(server.allowed) or "none"
    console.print(
        f"MCP server {escape(server.name)} installed in {escape(server.workspace)}: "
        f"{plural(len(server.tools), 'tool')} listed; the agent may call: {escape(allowed)}.",
        highlight=False,
    )


def list_servers(
    ctx: typer.Context, workspace: WorkspaceOpt = None, as_json: JsonFlag = False
) -> None:
    """List the workspace's MCP servers and the tools the agent may call."""
    servers = _service(open_app(ctx), workspace).list()
    if as_json:
        print_json(camel_json(servers))
        return
    if not servers:
        console.print('No MCP servers: autorag mcp install NAME --command "…" (or --url URL)')
        return
    table = Table("name", "transport", "command / url", "allowed tools", "other tools")
    table.columns[2].overflow = "fold"
    for server in servers:
        others = [t.name for t in server.tools if t.name not in server.allowed]
        table.add_row(
            escape(server.name), server.transport, escape(_where(server)),
            escape(", ".join(server.allowed)), escape(", ".join(others)),
        )  # fmt: skip
    console.print(table)


def allow(
    ctx: typer.Context,
    name: NameArg,
    tools: Annotated[str, typer.Argument(help="The tools the agent may call: a,b,c.")],
    workspace: WorkspaceOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace a server's allowlist.

    autorag mcp allow files read_file
    """
    server = _service(open_app(ctx), workspace).update(name, tools=_tools(tools) or [])
    if as_json:
        print_json(camel_json(server))
        return
    allowed = ", ".join(server.allowed) or "none"
    console.print(f"{escape(name)}: the agent may call {escape(allowed)}.", highlight=False)


def test(
    ctx: typer.Context, name: NameArg, workspace: WorkspaceOpt = None, as_json: JsonFlag = False
) -> None:
    """Reach the server again and list its tools."""
    outcome = _service(open_app(ctx), workspace).test(name)
    if as_json:
        print_json(camel_json(outcome))
    elif outcome.ok:
        missing = f"; gone: {', '.join(outcome.missing)}" if outcome.missing else ""
        console.print(
            f"{escape(name)} answered in {outcome.latency_ms} ms: "
            f"{escape(', '.join(outcome.tools))}{escape(missing)}",
            highlight=False,
        )
    else:
        console.print(f"[red]{escape(name)} failed:[/red] {escape(outcome.error or '')}")
    if not outcome.ok:
        raise typer.Exit(1)


def uninstall(ctx: typer.Context, name: NameArg, workspace: WorkspaceOpt = None) -> None:
    """Remove an MCP server: its tools are no longer offered."""
    _service(open_app(ctx), workspace).uninstall(name, actor="cli")
    console.print(f"MCP server {escape(name)} removed.", highlight=False)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise InvalidInput(f"a header is NAME:VALUE, not {text[:40]!r}")
    return name.strip(), value.strip()


def register(app: typer.Typer) -> None:
    """Attach the commands to the ``autorag mcp`` group."""
    app.command("install")(install)
    app.command("list")(list_servers)
    app.command("allow")(allow)
    app.command("test")(test)
    app.command("uninstall")(uninstall)
