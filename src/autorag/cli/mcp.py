"""``autorag mcp``: the knowledge base as an MCP server on stdio, for assistants and editors.

The group's bare invocation serves stdio. Other modules attach subcommands to the same
group: ``autorag mcp install``, ``list``, … are the MCP client's, defined by
``autorag.cli.mcp_tools.register(app)``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from autorag.cli import mcp_tools
from autorag.cli._common import open_app

app = typer.Typer(
    help="MCP: serve the knowledge base's tools to assistants and editors (no subcommand);"
    " install MCP tool servers for the agent.\n\n"
    "Without a subcommand: an MCP server (tools search, ask, list_documents, get_document,"
    " wiki_query) on stdin/stdout, as the workspace's local operator"
    " (whoever runs it owns the data folder). Logs go to stderr; stdout is the protocol. The"
    " HTTP server offers the same tools at /mcp (streamable HTTP, with an API key).\n\n"
    "Example (an assistant's MCP config): command `autorag`, args `-w /path/to/kb mcp`.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@app.callback()
def serve_stdio(
    ctx: typer.Context,
    workspace_name: Annotated[
        str | None,
        typer.Option(
            "--default-workspace",
            help="The workspace a tool call reads when it names none (default: the"
            " configured default workspace).",
        ),
    ] = None,
) -> None:
    """Without a subcommand: serve the knowledge base's tools on stdio."""
    if ctx.invoked_subcommand is not None:
        return
    from autorag.mcp_server.stdio import serve_stdio as serve  # deferred: heavy imports

    context = open_app(ctx)
    try:
        serve(context, default_workspace=workspace_name)
    finally:
        context.close()


# The MCP client's commands (``autorag mcp install``, ``list``, …), on this same group.
mcp_tools.register(app)
