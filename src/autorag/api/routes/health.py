"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from autorag.api.deps import AppDep
from autorag.store.catalog.db import ping

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "not ready"}})
def readyz(context: AppDep) -> JSONResponse:
    """The catalog answers and the index is usable (ready or degraded)."""
    body: dict[str, Any] = {"database": "ok"}
    try:
        ping(context.catalog.engine)
    except Exception as exc:  # any driver error: the database is unreachable
        body["database"] = f"unreachable: {type(exc).__name__}"
        return JSONResponse({**body, "state": "unavailable"}, status_code=503)
    readiness = context.readiness()
    body |= {"state": readiness.state, "reason": readiness.reason}
    status = 503 if readiness.state == "unavailable" else 200
    return JSONResponse(body, status_code=status)
