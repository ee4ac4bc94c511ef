"""Dependencies shared by routes: the application context and the workspace in a path."""

from __future__ import annotations

import os
from typing import Annotated

from anyio import CapacityLimiter
from fastapi import Depends, Path, Request

from autorag.context import AppContext


def app_context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


AppDep = Annotated[AppContext, Depends(app_context)]


def workspace_context(
    context: AppDep,
    workspace: Annotated[str, Path(description="Workspace name", max_length=200)],
) -> AppContext:
    """The context scoped to the workspace named in the path (404 if it does not exist)."""
    return context.for_workspace(context.catalog.get_workspace(workspace))


WorkspaceDep = Annotated[AppContext, Depends(workspace_context)]


def search_slots(threads: int) -> CapacityLimiter:
    """The limiter of HTTP searches: ``threads`` at once, or one per core (at least 2)."""
    return CapacityLimiter(threads or max(2, os.cpu_count() or 2))


def search_limiter(request: Request) -> CapacityLimiter:
    limiter: CapacityLimiter = request.app.state.search_limiter
    return limiter


SearchSlots = Annotated[CapacityLimiter, Depends(search_limiter)]
