"""Model connections: Ollama and OpenAI-compatible servers an admin adds at run time.

Every route is the installation's, an admin's who is confined to no workspace. API keys
go in and never come out: a connection says only whether it has one (``apiKeySet``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep
from autorag.connections.service import (
    MAX_KEY_CHARS,
    MAX_URL_CHARS,
    UNSET,
    Connection,
    Connections,
    Detected,
    TestResult,
    Unset,
)
from autorag.llm.base import ModelInfo

router = APIRouter(prefix="/api/models/connections", tags=["models"])
Admin = Annotated[Principal, Depends(require("workspaces:admin", every_workspace=True))]
NamePath = Annotated[str, Path(max_length=40, description="The connection's name")]
KindField = Literal["ollama", "openai"]


def _connections(context: AppDep) -> Connections:
    return Connections(context.catalog.engine, context.settings.llm)


ConnectionsDep = Annotated[Connections, Depends(_connections)]


class ConnectionOut(BaseModel):
    name: str
    kind: str  # ollama | openai
    baseUrl: str
    apiKeySet: bool  # the key itself is never returned
    enabled: bool
    local: bool  # whether text stays on this machine or network
    readOnly: bool  # configured in autorag.toml
    createdAt: datetime | None
    createdBy: str
    updatedAt: datetime | None
    updatedBy: str


class ConnectionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=40)
    kind: KindField
    baseUrl: str = Field(max_length=MAX_URL_CHARS)
    apiKey: str | None = Field(default=None, max_length=MAX_KEY_CHARS)
    enabled: bool = True


class ConnectionPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: KindField | None = None
    baseUrl: str | None = Field(default=None, max_length=MAX_URL_CHARS)
    apiKey: str | None = Field(
        default=None, max_length=MAX_KEY_CHARS, description="A new key; null removes it"
    )
    enabled: bool | None = None


class ProbeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: KindField
    baseUrl: str = Field(max_length=MAX_URL_CHARS)
    apiKey: str | None = Field(default=None, max_length=MAX_KEY_CHARS)


class ServerModelOut(BaseModel):
    id: str  # the model's name at its server; in a chat: <connection>/<id>
    parameters: str | None
    sizeBytes: int | None


class TestOut(BaseModel):
    ok: bool
    message: str  # in words, for people
    problem: str | None  # refused | timeout | bad_key | not_server | bad_url | failed
    models: list[ServerModelOut]


class DetectOut(BaseModel):
    found: bool
    kind: str | None
    baseUrl: str | None
    models: list[ServerModelOut]
    connectedAs: str | None  # the connection already pointing at it


@router.get("", response_model=list[ConnectionOut])
def list_connections(principal: Admin, connections: ConnectionsDep) -> list[ConnectionOut]:
    """Those of autorag.toml (read-only), then those added here."""
    return [_out(c) for c in connections.all()]


@router.post("", response_model=ConnectionOut, status_code=201)
def add_connection(
    principal: Admin, connections: ConnectionsDep, body: ConnectionIn
) -> ConnectionOut:
    """Save a connection; its models are offered at once (test it first: ``/test``)."""
    added = connections.add(
        body.name, body.kind, body.baseUrl, body.apiKey, enabled=body.enabled,
        by=principal.username,
    )  # fmt: skip
    return _out(added)


@router.post("/test", response_model=TestOut)
async def test_unsaved(principal: Admin, connections: ConnectionsDep, body: ProbeIn) -> TestOut:
    """Reach a server before saving it: its models, or what went wrong, in words."""
    result = await run_in_threadpool(connections.test, body.kind, body.baseUrl, body.apiKey)
    return _test_out(result)


@router.get("/detect", response_model=DetectOut)
async def detect(principal: Admin, connections: ConnectionsDep) -> DetectOut:
    """A running Ollama on this machine (asked for at most a second)."""
    found = await run_in_threadpool(connections.detect)
    return _detect_out(found)


@router.patch("/{name}", response_model=ConnectionOut)
def update_connection(
    principal: Admin, connections: ConnectionsDep, name: NamePath, body: ConnectionPatch
) -> ConnectionOut:
    api_key: str | Unset | None = body.apiKey if "apiKey" in body.model_fields_set else UNSET
    updated = connections.update(
        name, kind=body.kind, base_url=body.baseUrl, api_key=api_key, enabled=body.enabled,
        by=principal.username,
    )  # fmt: skip
    return _out(updated)


@router.delete("/{name}", status_code=204, response_class=Response)
def remove_connection(principal: Admin, connections: ConnectionsDep, name: NamePath) -> Response:
    connections.remove(name)
    return Response(status_code=204)


@router.post("/{name}/test", response_model=TestOut)
async def test_saved(principal: Admin, connections: ConnectionsDep, name: NamePath) -> TestOut:
    result = await run_in_threadpool(connections.test_saved, name)
    return _test_out(result)


@router.get("/{name}/models", response_model=list[ServerModelOut])
async def connection_models(
    principal: Admin, connections: ConnectionsDep, name: NamePath
) -> list[ServerModelOut]:
    """The models the connection's server lists now (503 when it cannot be reached)."""
    models = await run_in_threadpool(connections.models, name)
    return [_model_out(m) for m in models]


def _out(c: Connection) -> ConnectionOut:
    return ConnectionOut(
        name=c.name, kind=c.kind, baseUrl=c.base_url, apiKeySet=c.api_key_set,
        enabled=c.enabled, local=c.local, readOnly=c.source == "settings",
        createdAt=c.created_at, createdBy=c.created_by, updatedAt=c.updated_at,
        updatedBy=c.updated_by,
    )  # fmt: skip


def _model_out(m: ModelInfo) -> ServerModelOut:
    return ServerModelOut(id=m.id, parameters=m.parameters, sizeBytes=m.size_bytes)


def _test_out(result: TestResult) -> TestOut:
    return TestOut(
        ok=result.ok,
        message=result.message,
        problem=result.problem,
        models=[_model_out(m) for m in result.models],
    )


def _detect_out(found: Detected | None) -> DetectOut:
    if found is None:
        return DetectOut(found=False, kind=None, baseUrl=None, models=[], connectedAs=None)
    return DetectOut(
        found=True,
        kind=found.kind,
        baseUrl=found.base_url,
        models=[_model_out(m) for m in found.models],
        connectedAs=found.connected_as,
    )
