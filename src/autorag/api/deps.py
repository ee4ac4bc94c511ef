"""Dependencies shared by routes: the parts of the running server, and the workspace in
a path. The one module that reads the server's state (``autorag.api.state``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from anyio import CapacityLimiter
from fastapi import Depends, Path, Request

from autorag.api.maintenance import Maintenance
from autorag.api.state import AuthState, ServerState
from autorag.chat.service import ChatService
from autorag.context import AppContext
from autorag.dlp.service import DlpService
from autorag.jobs.worker import WorkerPool
from autorag.p2p.node import PeerNode

T = TypeVar("T")


def server_state(request: Request) -> ServerState:
    """The state ``create_app``'s start-up built (``app.state.server``)."""
    state: ServerState = request.app.state.server
    return state


def _part(get: Callable[[ServerState], T]) -> Callable[[Request], Awaitable[T]]:
    """A dependency answering one part of the server's state. Read on the event loop
    (async): a plain function would take a worker thread, in every request."""

    async def dependency(request: Request) -> T:
        return get(server_state(request))

    return dependency


# The whole state, for what replaces its parts (a restore).
ServerDep = Annotated[ServerState, Depends(_part(lambda server: server))]
MaintenanceDep = Annotated[Maintenance, Depends(_part(lambda server: server.maintenance))]
AppDep = Annotated[AppContext, Depends(_part(lambda server: server.context))]
AuthDep = Annotated[AuthState, Depends(_part(lambda server: server.auth))]
ChatServiceDep = Annotated[ChatService, Depends(_part(lambda server: server.chat))]
DlpServiceDep = Annotated[DlpService, Depends(_part(lambda server: server.dlp))]
PoolDep = Annotated[WorkerPool, Depends(_part(lambda server: server.workers))]
SearchSlots = Annotated[CapacityLimiter, Depends(_part(lambda server: server.search_limiter))]
# None when P2P is off or did not start.
PeerNodeDep = Annotated[PeerNode | None, Depends(_part(lambda server: server.p2p))]


def workspace_context(
    context: AppDep,
    workspace: Annotated[str, Path(description="Workspace name", max_length=200)],
) -> AppContext:
    """The context scoped to the workspace named in the path (404 if it does not exist)."""
    return context.for_workspace(context.catalog.get_workspace(workspace))


WorkspaceDep = Annotated[AppContext, Depends(workspace_context)]
