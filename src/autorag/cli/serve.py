"""``autorag serve`` (the HTTP API) and ``autorag worker`` (background work only)."""

from __future__ import annotations

import errno
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from autorag.auth.service import ensure_setup_token
from autorag.cli._common import console, current_workspace
from autorag.context import open_context
from autorag.errors import Conflict, InvalidInput
from autorag.workspace import Workspace

if TYPE_CHECKING:
    import uvicorn

# How often a thread hands the interpreter lock over while others wait (Python: 5 ms).
SERVER_SWITCH_INTERVAL_S = 0.001

# Addresses that mean "every interface": a browser must be sent to loopback instead.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)


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
    workspace = current_workspace(ctx)
    _refuse_busy_port(host, port)

    import uvicorn

    from autorag.api.app import create_app

    console.print(f"Serving {workspace.root} on http://{host}:{port} (docs at /docs)")
    token = _setup_token(workspace)
    if token is not None:
        console.print(
            "No users yet. To create the first admin, open (once, within this run):\n"
            f"    {setup_url(host, port, token)}",
            highlight=False,
        )
    # Threads hand the interpreter lock over every 1 ms instead of 5: the event loop,
    # which answers /healthz and streams answers, waits less behind busy request threads.
    sys.setswitchinterval(SERVER_SWITCH_INTERVAL_S)
    uvicorn.Server(uvicorn_config(create_app(workspace, warm=True), host=host, port=port)).run()


def _refuse_busy_port(host: str, port: int) -> None:
    """Fail before saying "Serving on …" when the address cannot be listened on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise Conflict(
                    f"port {port} on {host} is in use by another program (another "
                    "autorag serve?): stop it, or choose another port with --port"
                ) from None
            raise InvalidInput(f"cannot listen on {host} port {port}: {exc.strerror}") from None


def uvicorn_config(app: Any, **options: Any) -> uvicorn.Config:
    """uvicorn's configuration for the API: its own proxy-header handling off.

    uvicorn would otherwise take ``X-Forwarded-For`` from any loopback peer as the
    client's address, and a client spoofing it would escape the per-address login
    limits. The app reads the header itself, from ``server.trusted_proxies`` only
    (``autorag.api.auth.client_address``).
    """
    import uvicorn

    options.setdefault("log_level", "info")
    return uvicorn.Config(app, proxy_headers=False, forwarded_allow_ips="", **options)


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


def worker(
    ctx: typer.Context,
    threads: Annotated[
        int | None, typer.Option("--workers", min=1, max=64, help="Jobs run at once.")
    ] = None,
) -> None:
    """Process background jobs (uploads, OCR, re-embedding) without serving HTTP.

    Scheduled backups (`autorag backup jobs`) run here too, and events are delivered
    (webhooks, web push). Any number of workers and servers may share one PostgreSQL
    catalog: each job and each event is claimed by exactly one of them (and one backup
    runs at a time). Ctrl+C lets running jobs finish.
    """
    from autorag.backup.presence import hold_workspace
    from autorag.backup.scheduler import BackupScheduler
    from autorag.backup.service import BackupService
    from autorag.jobs.dispatcher import start_dispatcher
    from autorag.jobs.worker import WorkerPool
    from autorag.runtime import server_model_threads

    workspace = current_workspace(ctx)
    # Held for the worker's lifetime: a restore from the command line refuses meanwhile.
    with server_model_threads(), hold_workspace(workspace):
        context = open_context(workspace)
        pool = WorkerPool(context, workers=threads or context.settings.server.workers)
        pool.start()
        backups = BackupScheduler(BackupService.for_context(context))
        backups.start()
        events = start_dispatcher(context)
        console.print(f"Worker on {workspace.root}: {pool.workers} threads (Ctrl+C stops)")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            backups.stop()
            events.stop()
            pool.stop()
            context.close()
