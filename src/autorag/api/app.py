"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from autorag import __version__
from autorag.api.errors import install_error_handlers
from autorag.api.maintenance import Maintenance, MaintenanceGate
from autorag.api.middleware import BodyLimit, SecurityHeaders
from autorag.api.openai import errors as openai_errors
from autorag.api.routes import (
    agent,
    archives,
    auth,
    backups,
    chat,
    connections,
    dlp,
    documents,
    events,
    health,
    mcp,
    mcp_tools,
    models,
    ocr,
    openai_compat,
    p2p,
    policy,
    push,
    search,
    synthesis,
    system,
    web,
    webhooks,
    widgets,
    workspaces,
    youtube,
)
from autorag.api.state import running_server
from autorag.config import Settings, load_settings
from autorag.mcp_server.http import HttpMcp
from autorag.runtime import server_model_threads
from autorag.workspace import Workspace


def create_app(workspace: Workspace, *, warm: bool = False, **overrides: Any) -> FastAPI:
    """An app serving ``workspace``. Its server state (``autorag.api.state``) is built
    and started at start-up, stopped at exit; routes reach it through ``api/deps.py``.
    ``warm``: the model and indexes load in the background as it starts (``serve``)."""
    maintenance = Maintenance()  # on while a restore runs: see autorag.api.maintenance

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with server_model_threads():
            async with (
                running_server(
                    workspace, warm=warm, maintenance=maintenance, **overrides
                ) as server,
                mcp_http.running(),
            ):
                app.state.server = server
                yield

    app = FastAPI(
        title="AutoRAG",
        version=__version__,
        description="Local-first knowledge server: hybrid search with cited answers.",
        lifespan=lifespan,
        # Served by the web routes from files in the package, under the UI's CSP.
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    openai_errors.install_error_handlers(app)  # /v1 answers errors in OpenAI's shape
    settings = load_settings(workspace.config_file, **overrides)
    # /mcp: the SDK's session manager, run inside the lifespan above (once per app).
    app.state.mcp = mcp_http = HttpMcp(settings)
    app.add_middleware(
        BodyLimit,
        body_bytes=settings.server.max_body_kb * 1024,
        upload_bytes=int(settings.server.max_upload_mb * 1024**2),
    )
    app.add_middleware(MaintenanceGate, maintenance=maintenance)
    app.add_middleware(SecurityHeaders)
    _install_cors(app, settings)  # outermost: refusals carry CORS headers too
    # Outside it: /api/widget/… answers CORS per widget (its allowed origins).
    app.add_middleware(widgets.WidgetCors)
    app.include_router(health.router)
    app.include_router(auth.router)
    app.include_router(search.router)
    app.include_router(workspaces.router)
    app.include_router(youtube.router)  # POST …/documents/youtube
    app.include_router(documents.router)
    app.include_router(ocr.router)
    app.include_router(dlp.router)
    app.include_router(policy.router)
    app.include_router(chat.router)
    app.include_router(models.router)
    app.include_router(connections.router)
    app.include_router(agent.router)
    app.include_router(openai_compat.router)
    app.include_router(p2p.router)
    app.include_router(archives.router)
    app.include_router(synthesis.router)
    app.include_router(backups.router)
    app.include_router(events.router)
    app.include_router(webhooks.router)
    app.include_router(system.router)  # /api/system/…: maintenance (re-index)
    app.include_router(push.router)  # /api/push/… and the service worker, /sw.js
    app.include_router(mcp.router)  # /mcp: MCP over streamable HTTP (autorag.mcp_server)
    app.include_router(mcp_tools.router)  # a workspace's installed MCP tool servers
    app.include_router(widgets.router)  # chat widgets; /api/widget/… and /widget.js
    app.include_router(web.router)  # the web UI: / and /ui/{asset}; /docs and /redoc
    return app


def _install_cors(app: FastAPI, settings: Settings) -> None:
    """CORS is off unless ``server.cors_origins`` lists the origins to allow."""
    origins = settings.server.cors_origins
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
