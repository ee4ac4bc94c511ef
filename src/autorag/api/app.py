"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from autorag import __version__
from autorag.api.errors import install_error_handlers
from autorag.api.middleware import BodyLimit, SecurityHeaders
from autorag.api.openai import errors as openai_errors
from autorag.api.routes import (
    agent,
    archives,
    auth,
    chat,
    connections,
    dlp,
    documents,
    health,
    models,
    ocr,
    openai_compat,
    p2p,
    policy,
    search,
    synthesis,
    web,
    workspaces,
)
from autorag.api.state import running_server
from autorag.config import Settings, load_settings
from autorag.runtime import server_model_threads
from autorag.workspace import Workspace


def create_app(workspace: Workspace, *, warm: bool = False, **overrides: Any) -> FastAPI:
    """An app serving ``workspace``. Its server state (``autorag.api.state``) is built
    and started at start-up, stopped at exit; routes reach it through ``api/deps.py``.
    ``warm``: the model and indexes load in the background as it starts (``serve``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with server_model_threads():
            async with running_server(workspace, warm=warm, **overrides) as server:
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
    app.add_middleware(
        BodyLimit,
        body_bytes=settings.server.max_body_kb * 1024,
        upload_bytes=int(settings.server.max_upload_mb * 1024**2),
    )
    app.add_middleware(SecurityHeaders)
    _install_cors(app, settings)  # outermost: refusals carry CORS headers too
    app.include_router(health.router)
    app.include_router(auth.router)
    app.include_router(search.router)
    app.include_router(workspaces.router)
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
