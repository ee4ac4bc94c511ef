"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.concurrency import run_in_threadpool

from autorag import __version__
from autorag.api.errors import install_error_handlers
from autorag.api.routes import auth, documents, health, search, workspaces
from autorag.config import load_settings
from autorag.context import AppContext, open_context
from autorag.jobs.worker import WorkerPool
from autorag.workspace import Workspace


def create_app(workspace: Workspace, **overrides: Any) -> FastAPI:
    """An app serving ``workspace``; its catalog is opened at start-up, closed at exit."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        context: AppContext = open_context(workspace, **overrides)
        app.state.context = context
        pool = WorkerPool(context, workers=context.settings.server.workers)
        app.state.workers = pool
        pool.start()
        try:
            yield
        finally:
            await run_in_threadpool(pool.stop)
            context.close()

    app = FastAPI(
        title="AutoRAG",
        version=__version__,
        description="Local-first knowledge server: hybrid search with cited answers.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    _install_cors(app, workspace, overrides)
    app.include_router(health.router)
    app.include_router(auth.router)
    app.include_router(search.router)
    app.include_router(workspaces.router)
    app.include_router(documents.router)
    return app


def _install_cors(app: FastAPI, workspace: Workspace, overrides: dict[str, Any]) -> None:
    """CORS is off unless ``server.cors_origins`` lists the origins to allow."""
    origins = load_settings(workspace.config_file, **overrides).server.cors_origins
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
