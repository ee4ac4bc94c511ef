"""P2P: trusted peers, pending approvals, and asking a peer through this server.

The peer node itself is started with the server (``autorag.api.state``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep, PeerNodeDep
from autorag.errors import Unavailable
from autorag.p2p import wire
from autorag.p2p.approvals import ApprovalRequest, approvals_of
from autorag.p2p.node import PeerNode
from autorag.p2p.registry import Peer, PeerRegistry

log = logging.getLogger(__name__)


router = APIRouter(prefix="/api/p2p", tags=["p2p"])
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


def _running(node: PeerNode | None) -> PeerNode:
    if node is None:
        raise Unavailable("P2P is not running (p2p.enabled, and the simplex-chat binary)")
    return node


@router.get("/status", response_model=StatusOut)
def status(principal: P2PAdmin, node: PeerNodeDep) -> StatusOut:
    return StatusOut(running=node is not None)


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
async def ask(principal: P2PAdmin, body: AskBody, node: PeerNodeDep) -> dict[str, Any]:
    """Ask a trusted peer; its final reply as wire protocol v1 JSON."""
    reply = await _running(node).ask(body.peer, body.query, k=body.k, timeout_s=body.timeoutS)
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
