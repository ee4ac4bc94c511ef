"""Approvals of peer queries that would return ``ask`` sources (seed 000).

A request is a file in ``<workspace>/.autorag/p2p/requests/<id>.json``; the owner's
decision a file in ``decisions/<id>.json`` (written by ``autorag p2p approve|deny`` or
the API). The running server polls for decisions and expired requests, answers the
peer, then removes both files. Files, not tables, so that the owner can decide from a
second process while the server runs, and read what is pending with any tool.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from autorag.context import AppContext
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.p2p.files import private_dir, write_json_atomic
from autorag.store.catalog import outbox

log = logging.getLogger(__name__)
Decision = Literal["approve", "deny"]
Status = Literal["pending", "approved", "denied", "expired"]
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


@dataclass(frozen=True)
class PendingSource:
    """A result that needs the owner's approval before it leaves."""

    source: str  # canonical id
    title: str
    snippet: str
    score: float
    page: int | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    peer: str  # the peer's local name in the registry
    contact_id: int
    query_id: str
    query: str
    sources: tuple[PendingSource, ...]  # waiting for the owner
    shared: tuple[PendingSource, ...]  # already allowed: sent with the final answer
    created_at: datetime
    expires_at: datetime

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["sources"] = [asdict(s) for s in self.sources]
        document["shared"] = [asdict(s) for s in self.shared]
        document["created_at"] = self.created_at.isoformat()
        document["expires_at"] = self.expires_at.isoformat()
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ApprovalRequest:
        return cls(
            id=str(document["id"]),
            peer=str(document["peer"]),
            contact_id=int(document["contact_id"]),
            query_id=str(document["query_id"]),
            query=str(document["query"]),
            sources=tuple(PendingSource(**s) for s in document["sources"]),
            shared=tuple(PendingSource(**s) for s in document.get("shared", [])),
            created_at=datetime.fromisoformat(document["created_at"]),
            expires_at=datetime.fromisoformat(document["expires_at"]),
        )


@dataclass(frozen=True)
class Resolution:
    request: ApprovalRequest
    status: Status  # approved | denied | expired
    decided_by: str | None = None


class Approvals:
    """The requests and decisions folders of one workspace."""

    def __init__(
        self,
        p2p_dir: Path,
        *,
        ttl: timedelta = timedelta(minutes=30),
        events: Engine | None = None,
        workspace: str | None = None,
    ) -> None:
        self.requests_dir = p2p_dir / "requests"
        self.decisions_dir = p2p_dir / "decisions"
        self.ttl = ttl
        self.events = events  # the catalog a p2p.approval_requested event goes to
        self.workspace = workspace

    def create(
        self,
        *,
        peer: str,
        contact_id: int,
        query_id: str,
        query: str,
        sources: list[PendingSource],
        shared: list[PendingSource] | None = None,
        now: datetime | None = None,
    ) -> ApprovalRequest:
        created = now or datetime.now(UTC)
        request = ApprovalRequest(
            id=secrets.token_hex(6),
            peer=peer,
            contact_id=contact_id,
            query_id=query_id,
            query=query,
            sources=tuple(sources),
            shared=tuple(shared or ()),
            created_at=created,
            expires_at=created + self.ttl,
        )
        write_json_atomic(private_dir(self.requests_dir) / f"{request.id}.json", request.to_json())
        self._announce(request)
        return request

    def _announce(self, request: ApprovalRequest) -> None:
        """The request's event, once its file is written (the file is the request):
        who asks and how many sources wait, never the question or the sources."""
        if self.events is None:
            return
        data = {
            "request": request.id,
            "peer": request.peer,
            "sources": len(request.sources),
            "expiresAt": request.expires_at.isoformat(),
        }
        try:
            with self.events.begin() as conn:
                outbox.emit(
                    conn, "p2p.approval_requested", data, workspace=self.workspace,
                    actor=f"peer:{request.peer}",
                )  # fmt: skip
        except SQLAlchemyError as exc:  # the request stands; only its notice is lost
            log.warning("approval request %s: event not written: %s", request.id, exc)

    def pending(self, *, now: datetime | None = None) -> list[tuple[ApprovalRequest, Status]]:
        """Every request not yet answered, with its status, oldest first."""
        moment = now or datetime.now(UTC)
        listed = [(r, self._status(r, moment)) for r in self._requests()]
        return sorted(listed, key=lambda item: item[0].created_at)

    def get(self, request_id: str) -> ApprovalRequest:
        path = self.requests_dir / f"{_checked_id(request_id)}.json"
        if not path.is_file():
            raise NotFound(f"no pending request {request_id!r}")
        return _read_request(path)

    def decide(
        self, request_id: str, decision: Decision, *, by: str, now: datetime | None = None
    ) -> ApprovalRequest:
        request = self.get(request_id)
        status = self._status(request, now or datetime.now(UTC))
        if status == "expired":
            raise Conflict(f"request {request_id} expired at {request.expires_at:%Y-%m-%d %H:%M}Z")
        if status != "pending":
            raise Conflict(f"request {request_id} is already {status}")
        document = {"decision": decision, "by": by, "at": datetime.now(UTC).isoformat()}
        write_json_atomic(private_dir(self.decisions_dir) / f"{request.id}.json", document)
        return request

    def resolved(self, *, now: datetime | None = None) -> list[Resolution]:
        """Requests decided or expired, for the server to answer (then ``close``)."""
        moment = now or datetime.now(UTC)
        out = []
        for request in self._requests():
            status = self._status(request, moment)
            if status != "pending":
                out.append(Resolution(request, status, self._decided_by(request.id)))
        return out

    def close(self, request_id: str) -> None:
        """The peer has its answer: forget the request and its decision."""
        for folder in (self.requests_dir, self.decisions_dir):
            (folder / f"{_checked_id(request_id)}.json").unlink(missing_ok=True)

    def unreadable(self) -> list[tuple[Path, str]]:
        """Request files that cannot be read, with why: reported, never fatal."""
        return [(path, error) for path, error in self._scan() if isinstance(error, str)]

    def _requests(self) -> list[ApprovalRequest]:
        return [read for _, read in self._scan() if isinstance(read, ApprovalRequest)]

    def _scan(self) -> list[tuple[Path, ApprovalRequest | str]]:
        """Every request file, read or with the reason it could not be: one bad file must
        not hold up the answers to every other pending request."""
        if not self.requests_dir.is_dir():
            return []
        scanned: list[tuple[Path, ApprovalRequest | str]] = []
        for path in sorted(self.requests_dir.glob("*.json")):
            try:
                scanned.append((path, _read_request(path)))
            except InvalidInput as exc:
                log.warning("p2p: skipped %s", exc.message)
                scanned.append((path, exc.message))
        return scanned

    def _status(self, request: ApprovalRequest, now: datetime) -> Status:
        decision = self._decision(request.id)
        if decision is not None:
            return "approved" if decision.get("decision") == "approve" else "denied"
        return "expired" if now >= request.expires_at else "pending"

    def _decision(self, request_id: str) -> dict[str, Any] | None:
        path = self.decisions_dir / f"{request_id}.json"
        if not path.is_file():
            return None
        try:
            document = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("p2p: unreadable approval decision %s: %s", path, exc)
            return None  # undecided: the owner decides again, or it expires
        return document if isinstance(document, dict) else None

    def _decided_by(self, request_id: str) -> str | None:
        decision = self._decision(request_id)
        return str(decision["by"]) if decision and "by" in decision else None


def approvals_of(app: AppContext) -> Approvals:
    """The workspace's approvals, expiring as configured."""
    ttl = timedelta(minutes=app.settings.p2p.approval_ttl_minutes)
    return Approvals(
        app.workspace.p2p_dir, ttl=ttl, events=app.catalog.engine, workspace=app.info.name
    )


def _read_request(path: Path) -> ApprovalRequest:
    try:
        return ApprovalRequest.from_json(json.loads(path.read_text("utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"unreadable approval request {path}: {exc}") from exc


def _checked_id(request_id: str) -> str:
    """Request ids are hex: nothing in one can reach outside the folder."""
    if not request_id or len(request_id) > 32 or not set(request_id) <= _ID_CHARS:
        raise NotFound(f"no pending request {request_id!r}")
    return request_id
