"""Errors as RFC 9457 problem JSON, with the stable code from the one error tree."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from autorag.errors import AutoragError, RateLimited, StaleVersion, Unauthorized

log = logging.getLogger(__name__)
PROBLEM_JSON = "application/problem+json"
# The stable code of an error raised as a plain HTTP status (routing, Starlette).
HTTP_CODES = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    429: "rate_limited",
}


def problem(
    status: int, code: str, detail: str, *, instance: str | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": f"https://autorag.dev/problems/{code}",
        "title": code.replace("_", " "),
        "status": status,
        "detail": detail,
        "code": code,
        **extra,
    }
    if instance:
        body["instance"] = instance
    # Also here, not only in the middleware: the 500 handler answers outside of it.
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AutoragError)
    async def autorag_error(request: Request, exc: AutoragError) -> JSONResponse:
        response = problem(
            exc.status, exc.code, exc.message, instance=request.url.path, **error_fields(exc)
        )
        response.headers.update(error_headers(exc))
        return response

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()
        ]
        return problem(
            422,
            "validation_error",
            "the request is not valid",
            instance=request.url.path,
            errors=errors,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, "http_error")
        response = problem(exc.status_code, code, str(exc.detail), instance=request.url.path)
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        return problem(500, "internal_error", "internal error", instance=request.url.path)


def error_fields(exc: AutoragError) -> dict[str, Any]:
    """What the body carries besides the code: the version a stale save should build on."""
    if isinstance(exc, StaleVersion):
        return {"currentVersion": exc.current_version}
    return {}


def error_headers(exc: AutoragError) -> dict[str, str]:
    """What the status needs besides the body: how to authenticate, when to retry."""
    if isinstance(exc, Unauthorized):
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    return {}
