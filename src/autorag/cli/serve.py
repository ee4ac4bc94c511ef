"""``autorag serve``: the HTTP API."""

from __future__ import annotations

from typing import Annotated

import typer

from autorag.cli._common import console, current_workspace


def register(app: typer.Typer) -> None:
    app.command()(serve)


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to bind (loopback unless you say).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs)."""
    import uvicorn

    from autorag.api.app import create_app

    workspace = current_workspace(ctx)
    console.print(f"Serving {workspace.root} on http://{host}:{port} (docs at /docs)")
    uvicorn.run(create_app(workspace), host=host, port=port, log_level="info")
