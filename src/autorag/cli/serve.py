"""``autorag serve``: the HTTP API."""

from __future__ import annotations

from typing import Annotated

import typer

from autorag.auth.service import ensure_setup_token
from autorag.cli._common import console, current_workspace
from autorag.context import open_context
from autorag.workspace import Workspace

# Addresses that mean "every interface": a browser must be sent to loopback instead.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def register(app: typer.Typer) -> None:
    app.command()(serve)


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind (loopback unless you say).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs).

    While no user exists, prints a one-time URL to create the first admin.
    """
    import uvicorn

    from autorag.api.app import create_app

    workspace = current_workspace(ctx)
    console.print(f"Serving {workspace.root} on http://{host}:{port} (docs at /docs)")
    token = _setup_token(workspace)
    if token is not None:
        console.print(
            "No users yet. To create the first admin, open (once, within this run):\n"
            f"    {setup_url(host, port, token)}",
            highlight=False,
        )
    uvicorn.run(create_app(workspace), host=host, port=port, log_level="info")


def setup_url(host: str, port: int, token: str) -> str:
    """The setup page with the token in the fragment: browsers never send it to servers."""
    shown = _ANY_ADDRESS.get(host, f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}/setup#token={token}"


def _setup_token(workspace: Workspace) -> str | None:
    context = open_context(workspace)
    try:
        return ensure_setup_token(context.catalog, workspace.data_dir)
    finally:
        context.close()
