"""Dependencies shared by routes: the parts of the running server, and the workspace in
a path. The one module that reads the server's state (``autorag.api.state``)."""

from __future__ import annotations

from typing import Annotated

from anyio import CapacityLimiter
from fastapi import Depends, Path, Request

from autorag.api.state import AuthState, ServerState
from autorag.chat.service import ChatService
from autorag.context import AppContext
from autorag.dlp.service import DlpService
from autorag.jobs.worker import WorkerPool
from autorag.p2p.node import PeerNode


def server_state(request: Request) -> ServerState:
    """The state ``create_app``'s start-up built (``app.state.server``)."""
    state: ServerState = request.app.state.server
    return state


ServerDep = Annotated[ServerState, Depends(server_state)]


def app_context(server: ServerDep) -> AppContext:
    return server.context


AppDep = Annotated[AppContext, Depends(app_context)]


def workspace_context(
    context: AppDep,
    workspace: Annotated[str, Path(description="Workspace name", max_length=200)],
) -> AppContext:
    """The context scoped to the workspace named in the path (404 if it does not exist)."""
    return context.for_workspace(context.catalog.get_workspace(workspace))


WorkspaceDep = Annotated[AppContext, Depends(workspace_context)]


def auth_state(server: ServerDep) -> AuthState:
    return server.auth


AuthDep = Annotated[AuthState, Depends(auth_state)]


def chat_service(server: ServerDep) -> ChatService:
    return server.chat


ChatServiceDep = Annotated[ChatService, Depends(chat_service)]


def dlp_service(server: ServerDep) -> DlpService:
    return server.dlp


DlpServiceDep = Annotated[DlpService, Depends(dlp_service)]


def worker_pool(server: ServerDep) -> WorkerPool:
    return server.workers


PoolDep = Annotated[WorkerPool, Depends(worker_pool)]


def search_limiter(server: ServerDep) -> CapacityLimiter:
    return server.search_limiter


SearchSlots = Annotated[CapacityLimiter, Depends(search_limiter)]


def peer_node(server: ServerDep) -> PeerNode | None:
    """The P2P node; None when P2P is off or did not start."""
    return server.p2p


PeerNodeDep = Annotated[PeerNode | None, Depends(peer_node)]
