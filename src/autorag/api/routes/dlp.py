"""DLP over HTTP: patterns (admins), scanning (anyone who searches), the match history
and the audited reveal of redacted originals.

Patterns and the history are installation-wide, so managing them needs ``dlp:admin``
in every workspace (an API key scoped to some workspaces cannot); changing patterns
needs a password login or an API key with the ``admin:protection`` scope. Reading an original
needs ``dlp:reveal``, which only a password login carries: a leaked API key reveals
nothing. Other routes redact through ``autorag.api.redaction.workspace_dlp(channel)``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep, DlpServiceDep
from autorag.api.redaction import WidgetHeader
from autorag.audit import AuditEvent
from autorag.auth.service import get_user
from autorag.dlp.patterns import MAX_REGEX_CHARS
from autorag.dlp.scanner import ScanResult
from autorag.dlp.service import HistoryQuery, source_from_widget
from autorag.dlp.store import PatternRecord
from autorag.retrieval.filters import build_filters

router = APIRouter(prefix="/api/dlp", tags=["dlp"])
MAX_TEXT = 100_000

AdminDep = Annotated[Principal, Depends(require("dlp:admin", every_workspace=True))]
# Changing what DLP redacts weakens protection: a password login, or an API key with
# the admin:protection scope (autorag.api.auth.require_protection).
ProtectDep = Annotated[
    Principal, Depends(require("dlp:admin", every_workspace=True, protection=True))
]
RevealDep = Annotated[Principal, Depends(require("dlp:reveal", every_workspace=True))]
ScanDep = Annotated[Principal, Depends(require("search:read"))]
PatternId = Annotated[int, Path(description="Pattern id", ge=1, le=2**31 - 1)]


# -- schemas --------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PatternOut(BaseModel):
    id: int
    name: str
    regex: str
    builtin: bool
    enabled: bool
    description: str
    createdAt: datetime
    updatedAt: datetime


class PatternCreate(_Body):
    name: str = Field(max_length=40, description="Lowercase letters, digits and '_'")
    regex: str = Field(max_length=MAX_REGEX_CHARS, description="RE2 syntax")
    description: str = Field(default="", max_length=500)
    enabled: bool = True


class PatternPatch(_Body):
    """Only the keys given change; a built-in takes ``enabled`` alone."""

    name: str | None = Field(default=None, max_length=40)
    regex: str | None = Field(default=None, max_length=MAX_REGEX_CHARS)
    description: str | None = Field(default=None, max_length=500)
    enabled: bool | None = None


class PatternTest(_Body):
    text: str = Field(max_length=MAX_TEXT, description="Sample text")
    regex: str | None = Field(
        default=None,
        max_length=MAX_REGEX_CHARS,
        description="A regex to try; without it, every enabled pattern",
    )
    name: str = Field(default="test", max_length=40, description="The type its matches get")


class ScanBody(_Body):
    text: str = Field(max_length=MAX_TEXT)


class MatchOut(BaseModel):
    type: str
    start: int
    end: int


class ScanOut(BaseModel):
    hasMatch: bool
    matches: list[MatchOut]
    redactedText: str


class HistoryItem(BaseModel):
    id: int
    event: str
    createdAt: datetime
    userId: int | None
    username: str | None
    workspace: str | None
    source: str | None
    channel: str | None
    types: list[str]
    count: int | None


class HistoryOut(BaseModel):
    items: list[HistoryItem]
    nextBeforeId: int | None  # pass as beforeId for the next (older) page


class RevealBody(_Body):
    """Exactly one of the two."""

    id: str | None = Field(default=None, max_length=64, description="The original's id")
    ref: str | None = Field(default=None, max_length=200, description="e.g. message:42")


class RevealOut(BaseModel):
    id: str
    ref: str | None
    workspaceId: int | None
    source: str
    original: str
    redacted: str
    types: list[str]
    createdAt: datetime


def _pattern(record: PatternRecord) -> PatternOut:
    return PatternOut(
        id=record.id,
        name=record.name,
        regex=record.regex,
        builtin=record.builtin,
        enabled=record.enabled,
        description=record.description,
        createdAt=record.created_at,
        updatedAt=record.updated_at,
    )


def _scan(result: ScanResult) -> ScanOut:
    return ScanOut(
        hasMatch=result.has_match,
        matches=[MatchOut(type=m.type, start=m.start, end=m.end) for m in result.matches],
        redactedText=result.redacted_text,
    )


def _history_item(event: AuditEvent) -> HistoryItem:
    details = event.details
    types = details.get("types", [])
    count = details.get("count")
    return HistoryItem(
        id=event.id,
        event=event.event,
        createdAt=event.created_at,
        userId=event.user_id,
        username=event.username,
        workspace=event.workspace,
        source=event.source,
        channel=details.get("channel"),
        types=[str(t) for t in types] if isinstance(types, list) else [],
        count=count if isinstance(count, int) else None,
    )


# -- patterns -------------------------------------------------------------------------
@router.get("/patterns", response_model=list[PatternOut])
def list_patterns(_: AdminDep, dlp: DlpServiceDep) -> list[PatternOut]:
    """Built-in and custom patterns, enabled or not."""
    return [_pattern(r) for r in dlp.list_patterns()]


@router.post("/patterns", status_code=201, response_model=PatternOut)
def create_pattern(body: PatternCreate, _: ProtectDep, dlp: DlpServiceDep) -> PatternOut:
    """A custom pattern (at most 50). Its regex must compile with RE2 (400 otherwise,
    with RE2's reason)."""
    record = dlp.create_pattern(body.name, body.regex, body.description, enabled=body.enabled)
    return _pattern(record)


@router.post("/patterns/test", response_model=ScanOut)
def test_patterns(body: PatternTest, _: AdminDep, dlp: DlpServiceDep) -> ScanOut:
    """Live preview: what ``regex`` (or every enabled pattern) finds in the sample."""
    return _scan(dlp.test_patterns(body.text, body.regex, body.name))


@router.patch("/patterns/{pattern_id}", response_model=PatternOut)
def update_pattern(
    pattern_id: PatternId, body: PatternPatch, _: ProtectDep, dlp: DlpServiceDep
) -> PatternOut:
    """Edit a custom pattern, or enable/disable any (409 when editing a built-in)."""
    record = dlp.update_pattern(
        pattern_id,
        name=body.name,
        regex=body.regex,
        description=body.description,
        enabled=body.enabled,
    )
    return _pattern(record)


@router.delete("/patterns/{pattern_id}", status_code=204, response_class=Response)
def delete_pattern(pattern_id: PatternId, _: ProtectDep, dlp: DlpServiceDep) -> Response:
    """Delete a custom pattern (built-ins can only be disabled: 409)."""
    dlp.delete_pattern(pattern_id)
    return Response(status_code=204)


# -- scanning -------------------------------------------------------------------------
@router.post("/scan", response_model=ScanOut)
def scan(body: ScanBody, _: ScanDep, dlp: DlpServiceDep) -> ScanOut:
    """What the enabled patterns find in a text, and the text redacted."""
    return _scan(dlp.scan(body.text))


# -- history and reveal ---------------------------------------------------------------
@router.get("/matches", response_model=HistoryOut)
def match_history(
    _: AdminDep,
    context: AppDep,
    dlp: DlpServiceDep,
    pattern_type: Annotated[
        str | None, Query(alias="type", max_length=40, description="A pattern name")
    ] = None,
    source: Literal["chat", "widget"] | None = None,
    event: Literal["dlp.redacted", "dlp.bypassed", "dlp.revealed"] | None = None,
    user: Annotated[str | None, Query(max_length=64, description="A username")] = None,
    workspace: Annotated[str | None, Query(max_length=200)] = None,
    date_from: Annotated[str | None, Query(alias="from", max_length=40)] = None,
    date_to: Annotated[str | None, Query(alias="to", max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    before_id: Annotated[int | None, Query(alias="beforeId", ge=1, le=2**63 - 1)] = None,
) -> HistoryOut:
    """DLP audit events, newest first: redactions, bypasses and reveals, filtered by
    pattern type, source, user, workspace and date (ISO; a date-only ``to`` includes
    that day)."""
    window = build_filters((), date_from, date_to)
    query = HistoryQuery(
        type=pattern_type,
        source=source,
        event=event,
        user_id=get_user(context.catalog, user).id if user else None,
        workspace_id=context.catalog.get_workspace(workspace).id if workspace else None,
        since=window.date_from,
        until=window.date_to,
        before_id=before_id,
        limit=limit,
    )
    events = dlp.match_history(query)
    next_before = events[-1].id if len(events) == limit else None
    return HistoryOut(items=[_history_item(e) for e in events], nextBeforeId=next_before)


@router.post("/reveal", response_model=RevealOut)
def reveal(
    body: RevealBody, principal: RevealDep, dlp: DlpServiceDep, widget: WidgetHeader = None
) -> RevealOut:
    """The original of a redacted text, by its id or its ref; audited as dlp.revealed."""
    record = dlp.reveal(
        original_id=body.id,
        ref=body.ref,
        user_id=principal.user_id,
        source=source_from_widget(widget),
    )
    return RevealOut(
        id=record.id,
        ref=record.ref,
        workspaceId=record.workspace_id,
        source=record.source,
        original=record.original,
        redacted=record.redacted,
        types=list(record.types),
        createdAt=record.created_at,
    )
