"""Errors on ``/v1`` in OpenAI's shape, so the ``openai`` SDK raises its own exceptions
with a readable message: ``{"error": {"message", "type", "param", "code"}}``.

``type`` is OpenAI's word for the status (``invalid_request_error``,
``authentication_error``, ``permission_error``, ``rate_limit_error``, ``server_error``);
``code`` is AutoRAG's stable error code (``model_not_found``, ``invalid_input``…);
``param`` names the request field at fault, when one is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from autorag.api.errors import HTTP_CODES, error_headers
from autorag.errors import AutoragError, InvalidInput, NotFound

log = logging.getLogger(__name__)

_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
}
_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "none", "list", "dict"})


class InvalidParam(InvalidInput):
    """A request field OpenAI's API defines, with a value this server refuses."""

    def __init__(self, param: str, message: str, *, code: str = "invalid_value") -> None:
        super().__init__(message, code=code)
        self.param = param


class ModelNotFound(NotFound):
    """A model the caller may not use, or that does not exist: the message lists the
    ones they may."""

    code = "model_not_found"

    def __init__(self, model: str, valid: Sequence[str], *, what: str = "models") -> None:
        listed = ", ".join(valid) if valid else "none"
        super().__init__(
            f"The model {model!r} does not exist or you do not have access to it. "
            f"Valid {what}: {listed}."
        )
        self.param = "model"


PREFIX = "/v1"  # the OpenAI-compatible API: its clients read errors in OpenAI's shape


def is_openai_path(path: str) -> bool:
    return path == PREFIX or path.startswith(f"{PREFIX}/")


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error under ``/v1`` in OpenAI's shape, those raised before a route
    runs too (no such path, a method it does not take); the rest keep their handlers.
    Called after ``api.errors.install_error_handlers``, whose handlers it falls back on."""
    for kind in (AutoragError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, _openai_first(app.exception_handlers[kind]))


def _openai_first(fallback: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        if is_openai_path(request.url.path):
            return error_response(request, exc)
        response: Response = await fallback(request, exc)
        return response

    return handle


def error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    return _TYPES.get(status, "invalid_request_error")


def error_body(
    status: int, message: str, code: str, param: str | None = None
) -> dict[str, dict[str, Any]]:
    return {"error": {"message": message, "type": error_type(status), "param": param, "code": code}}


def stream_error(error: BaseException) -> dict[str, dict[str, Any]]:
    """The body of an error that ends a stream already begun (the SDK raises it)."""
    if isinstance(error, AutoragError):
        return error_body(error.status, error.message, error.code, _param(error))
    return error_body(500, "the answer failed", "internal_error")


def error_response(request: Request, exc: Exception) -> JSONResponse:
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if isinstance(exc, AutoragError):
        status, body = exc.status, error_body(exc.status, exc.message, exc.code, _param(exc))
        headers.update(error_headers(exc))
    elif isinstance(exc, RequestValidationError):
        status, body = 400, _validation_body(exc)
    elif isinstance(exc, StarletteHTTPException):
        status = exc.status_code
        code = HTTP_CODES.get(status, "http_error")
        body = error_body(status, str(exc.detail), code)
        headers.update(exc.headers or {})
    else:
        log.exception("unhandled error on %s", request.url.path)
        status, body = 500, error_body(500, "internal error", "internal_error")
    return JSONResponse(body, status_code=status, headers=headers)


def _param(error: AutoragError) -> str | None:
    param = getattr(error, "param", None)
    return param if isinstance(param, str) else None


def _validation_body(exc: RequestValidationError) -> dict[str, dict[str, Any]]:
    """The first problem, named by its field (``messages[0].role``), as OpenAI does."""
    errors = exc.errors()
    if not errors:
        return error_body(400, "the request is not valid", "invalid_request")
    first = errors[0]
    if first.get("type") == "json_invalid":
        return error_body(400, "the request body is not valid JSON", "invalid_json")
    param = _field(first.get("loc", ()))
    message = str(first.get("msg", "is not valid"))
    if param is None:
        return error_body(400, f"the request body is not valid: {message}", "invalid_request")
    code = "missing_required_parameter" if first.get("type") == "missing" else "invalid_value"
    return error_body(400, f"{param}: {message}", code, param)


def _field(loc: Sequence[Any]) -> str | None:
    parts = list(loc[1:] if loc and loc[0] in ("body", "query", "path") else loc)
    name = ""
    for part in parts:
        if isinstance(part, int):
            name += f"[{part}]"
        elif not str(part).isidentifier() or part in _TYPE_NAMES:
            continue  # pydantic names the union member it tried: not a field
        else:
            name += f".{part}" if name else str(part)
    return name or None
