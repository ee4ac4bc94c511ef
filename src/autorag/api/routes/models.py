"""Models: what is on offer, which are up, their labels; the global default model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep, ChatServiceDep
from autorag.system_config import GLOBAL_DEFAULT_MODEL, get_value, set_value

router = APIRouter(prefix="/api/models", tags=["models"])


class ProviderOut(BaseModel):
    name: str
    local: bool
    available: bool | None  # null: not checked yet
    error: str | None


class ModelOut(BaseModel):
    id: str  # provider/model: what a chat's model is set to
    provider: str
    model: str
    local: bool
    available: bool | None
    capabilities: list[str]  # local-only | fastest | smartest | reasoning
    parameters: str | None


class DefaultsOut(BaseModel):
    globalDefault: str | None  # set by an admin at run time
    environment: str  # llm.default in the settings


class ModelsOut(BaseModel):
    providers: list[ProviderOut]
    models: list[ModelOut]
    defaults: DefaultsOut


class DefaultPut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(max_length=300, description="provider/model; null: unset")


@router.get("", response_model=ModelsOut)
async def list_models(
    principal: Annotated[Principal, Depends(require("chat:use"))],
    context: AppDep,
    service: ChatServiceDep,
    refresh: Annotated[bool, Query(description="Ask every provider now")] = False,
) -> ModelsOut:
    """Providers with their availability (polled every ``llm.poll_seconds``) and models."""
    router_ = service.router
    if refresh:
        await run_in_threadpool(router_.refresh)
    return ModelsOut(
        providers=[
            ProviderOut(name=s.name, local=s.local, available=s.available, error=s.error)
            for s in router_.statuses()
        ],
        models=[
            ModelOut(
                id=m.id,
                provider=m.provider,
                model=m.model,
                local=m.local,
                available=m.available,
                capabilities=list(m.capabilities),
                parameters=m.parameters,
            )
            for m in router_.models()
        ],
        defaults=_defaults(context.catalog.engine, router_.env_default),
    )


@router.put("/default", response_model=DefaultsOut)
def set_default_model(
    principal: Annotated[Principal, Depends(require("workspaces:admin", every_workspace=True))],
    body: DefaultPut,
    context: AppDep,
    service: ChatServiceDep,
) -> DefaultsOut:
    """The installation's default model, under each chat's and workspace's own choice."""
    if body.model is not None:
        service.router.check_choice(body.model, local_only=False)
    set_value(context.catalog.engine, GLOBAL_DEFAULT_MODEL, body.model)
    return _defaults(context.catalog.engine, service.router.env_default)


def _defaults(engine: Engine, environment: str) -> DefaultsOut:
    return DefaultsOut(
        globalDefault=get_value(engine, GLOBAL_DEFAULT_MODEL), environment=environment
    )
