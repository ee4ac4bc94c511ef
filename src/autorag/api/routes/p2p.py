"""P2P: trusted peers, pending approvals, and asking a peer through this server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from autorag.agent.skills.peer_search import PEER_SEARCH, PeerSearch
from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep
from autorag.context import AppContext
from autorag.errors import Unavailable
from autorag.p2p import wire
from autorag.p2p.approvals import ApprovalRequest, approvals_of
from autorag.p2p.node import PeerNode
from autorag.p2p.registry import Peer, PeerRegistry
from autorag.p2p.startup import start_p2p

log = logging.getLogger(__name__)


@asynccontextmanager
async def p2p_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """With ``p2p.enabled``: simplex-chat started, peers merged, queries served. When the
    binary is missing the server says so once and serves everything else."""
    app.state.p2p = None
    context: AppContext = app.state.context
    runtime = await start_p2p(context)
    if runtime is None:
        yield
        return
    node = PeerNode(
        context,
        runtime,
        app.state.chat,
        app.state.dlp,
        query_timeout_s=context.settings.p2p.query_timeout_s,
        approvals=approvals_of(context),
    )
    app.state.p2p = node
    app.state.chat.skills[PEER_SEARCH] = PeerSearch(node, context.settings.p2p.peers_asked)
    serving = asyncio.create_task(node.run())
    try:
        yield
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await serving
        await runtime.stop()


router = APIRouter(prefix="/api/p2p", tags=["p2p"], lifespan=p2p_lifespan)
P2PAdmin = Annotated[Principal, Depends(require("p2p:admin", every_workspace=True))]
RequestId = Annotated[str, Path(alias="requestId", min_length=1, max_length=32)]


class PeerOut(BaseModel):
    name: str
    contactId: int
    note: str
    profile: dict[str, Any]
    profileSyncedAt: datetime | None


class SourceOut(BaseModel):
    source: str
    title: str
    snippet: str
    score: float
    page: int | None


class RequestOut(BaseModel):
    id: str
    peer: str
    query: str
    status: str  # pending | approved | denied | expired
    sources: list[SourceOut]  # the results waiting for approval
    createdAt: datetime
    expiresAt: datetime


class AskBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    peer: str = Field(min_length=1, max_length=100)
    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=5, ge=1, le=wire.MAX_K)
    timeoutS: float = Field(default=60, gt=0, le=3600)


class StatusOut(BaseModel):
    running: bool  # the SimpleX connection is up and peer queries are served


def _node(request: Request) -> PeerNode:
    node: PeerNode | None = getattr(request.app.state, "p2p", None)
    if node is None:
        raise Unavailable("P2P is not running (p2p.enabled, and the simplex-chat binary)")
    return node


@router.get("/status", response_model=StatusOut)
def status(principal: P2PAdmin, request: Request) -> StatusOut:
    return StatusOut(running=getattr(request.app.state, "p2p", None) is not None)


@router.get("/peers", response_model=list[PeerOut])
def list_peers(principal: P2PAdmin, context: AppDep) -> list[PeerOut]:
    """Trusted peers with the profiles they shared (the registry, not SimpleX's list)."""
    registry = PeerRegistry(context.workspace.simplex_peers_file)
    return [_peer(p) for p in registry.peers()]


@router.get("/requests", response_model=list[RequestOut])
def list_requests(principal: P2PAdmin, context: AppDep) -> list[RequestOut]:
    """Peer queries waiting for the owner's approval (or just decided/expired)."""
    approvals = approvals_of(context)
    return [_request(r, s) for r, s in approvals.pending()]


@router.post("/requests/{requestId}/{decision}", response_model=RequestOut)
def decide(
    principal: P2PAdmin,
    request_id: RequestId,
    decision: Literal["approve", "deny"],
    context: AppDep,
) -> RequestOut:
    """Approve or deny; the server answers the peer within a second."""
    approvals = approvals_of(context)
    approvals.decide(request_id, decision, by=principal.username)
    decided = approvals.get(request_id)
    return _request(decided, "approved" if decision == "approve" else "denied")


@router.post("/ask")
async def ask(principal: P2PAdmin, body: AskBody, request: Request) -> dict[str, Any]:
    """Ask a trusted peer; its final reply as wire protocol v1 JSON."""
    node = _node(request)
    reply = await node.ask(body.peer, body.query, k=body.k, timeout_s=body.timeoutS)
    return reply.model_dump(exclude_none=True)


def _peer(peer: Peer) -> PeerOut:
    return PeerOut(
        name=peer.name,
        contactId=peer.contact_id,
        note=peer.description,
        profile=peer.profile.to_json(),
        profileSyncedAt=peer.profile_synced_at,
    )


def _request(request: ApprovalRequest, state: str) -> RequestOut:
    return RequestOut(
        id=request.id,
        peer=request.peer,
        query=request.query,
        status=state,
        sources=[SourceOut(**vars(s)) for s in request.sources],
        createdAt=request.created_at,
        expiresAt=request.expires_at,
    )
