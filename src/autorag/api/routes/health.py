"""Liveness and readiness probes.

``/healthz`` is a coroutine that does nothing but answer: it never waits for a worker
thread, so it stays fast while every thread is busy with searches and answers (see
``tests/bench/test_health_bench.py``). ``/readyz`` asks the catalog, in a thread; an
anonymous caller learns the state only, a signed-in one also the reason and the counts.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from autorag.api.auth import Principal, current_principal
from autorag.api.deps import AppDep, AuthDep
from autorag.errors import AutoragError
from autorag.store.catalog.db import ping

router = APIRouter(tags=["health"])
_bearer = HTTPBearer(auto_error=False, description="Optional: the details of /readyz")


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (answered on the event loop, never behind request work)."""
    return {"status": "ok"}


def optional_principal(
    context: AppDep,
    auth: AuthDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal | None:
    """The caller if the request carries valid credentials; None otherwise (a probe with
    a stale token is answered as an anonymous one, never refused)."""
    if credentials is None:
        return None
    try:
        return current_principal(context, auth, credentials)
    except AutoragError:
        return None


@router.get("/readyz", responses={503: {"description": "not ready"}})
def readyz(
    context: AppDep, principal: Annotated[Principal | None, Depends(optional_principal)]
) -> JSONResponse:
    """The catalog answers and the index is usable (ready or degraded). Anonymous callers
    get ``state`` only; signed-in ones also the reason and the document and chunk counts."""
    body: dict[str, Any] = {"database": "ok"}
    try:
        ping(context.catalog.engine)
    except Exception as exc:  # any driver error: the database is unreachable
        body["database"] = f"unreachable: {type(exc).__name__}"
        body["state"] = "unavailable"
        return JSONResponse(_shown(body, principal), status_code=503)
    readiness = context.readiness()
    body |= {
        "state": readiness.state,
        "reason": readiness.reason,
        "documents": dict(readiness.documents),
        "chunks": readiness.chunks,
    }
    status = 503 if readiness.state == "unavailable" else 200
    return JSONResponse(_shown(body, principal), status_code=status)


def _shown(body: dict[str, Any], principal: Principal | None) -> dict[str, Any]:
    return body if principal is not None else {"state": body["state"]}
