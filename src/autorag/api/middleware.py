"""ASGI middleware: request bodies capped before any route reads them, and the headers
every response carries.

``BodyLimit`` refuses a body over its route's cap with 413 problem JSON: at once when the
``Content-Length`` says so, else as soon as the streamed bytes (chunked, or a lying
length) pass the cap, so an oversized body is never buffered whole nor parsed. Uploads
(documents, chat attachments, an archive's import) may be ``server.max_upload_mb`` plus
the multipart framing; a wiki page saved or previewed ``PAGE_BODY_BYTES``; every other
body (search, chat, the rest of the JSON API) ``server.max_body_kb``.

``SecurityHeaders`` adds ``X-Content-Type-Options: nosniff`` to every response and
``Cache-Control: no-store`` to the API's, unless the route chose its own caching.
"""

from __future__ import annotations

import re

from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autorag.api.errors import problem
from autorag.api.multipart import DRAIN_MAX_BYTES, FORM_OVERHEAD_BYTES
from autorag.api.openai.errors import error_body, is_openai_path
from autorag.ingest.parsers.guards import human_size

# The upload receiver's own bounds serve here too: FORM_OVERHEAD_BYTES of multipart framing
# around the file, and DRAIN_MAX_BYTES of a refused body read and dropped so that a client
# still sending it sees the 413 rather than a reset connection (past it: closed).
UPLOAD_PATH = re.compile(
    r"^/api/workspaces/[^/]+/(documents|chats/[^/]+/attachments|archives/[^/]+/import)/?$"
)
# A wiki page's markdown (up to 2 MB, autorag.wiki) saved or previewed as JSON, where
# escaping may swell it: this cap, or server.max_body_kb when that is larger.
PAGE_PATH = re.compile(r"^/api/workspaces/[^/]+/archives/[^/]+/pages/.+$")
PAGE_BODY_BYTES = 8 * 1024**2
API_PATH = re.compile(r"^/(api|v1)/")
NOSNIFF = ("x-content-type-options", "nosniff")


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` once a body passes its cap; answered as 413 problem JSON."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the {human_size(limit)} limit")


class BodyLimit:
    """Caps request bodies by route (see the module's docstring)."""

    def __init__(self, app: ASGIApp, *, body_bytes: int, upload_bytes: int) -> None:
        self.app = app
        self.body_bytes = body_bytes
        self.upload_bytes = upload_bytes + FORM_OVERHEAD_BYTES

    def limit_for(self, method: str, path: str) -> int:
        if method in ("POST", "PUT") and UPLOAD_PATH.match(path):
            return self.upload_bytes
        if method in ("POST", "PUT") and PAGE_PATH.match(path):
            return max(self.body_bytes, PAGE_BODY_BYTES)
        return self.body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            if declared <= DRAIN_MAX_BYTES:
                await _drain(receive, 0)
            await _refuse(scope, send, BodyTooLarge(limit))
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    if message.get("more_body", False):
                        await _drain(receive, received)
                    raise BodyTooLarge(limit)
            return message

        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started |= message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except BodyTooLarge as exc:  # raised where no handler turned it into a response
            if started:
                raise
            await _refuse(scope, send, exc)


class SecurityHeaders:
    """``nosniff`` on every response; ``no-store`` on the API's (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = bool(API_PATH.match(scope["path"]))

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault(*NOSNIFF)
                content_type = headers.get("content-type", "")
                if "cache-control" not in headers and (api or _is_json(content_type)):
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _drain(receive: Receive, already: int) -> None:
    """Read and drop the rest of the body, up to ``DRAIN_MAX_BYTES`` in all."""
    read = already
    while read <= DRAIN_MAX_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return  # the client went away
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _refuse(scope: Scope, send: Send, exc: BodyTooLarge) -> None:
    path = scope["path"]
    if is_openai_path(path):  # as the route would have answered had it read the body
        body = error_body(413, str(exc.detail), "payload_too_large")
        response: JSONResponse = JSONResponse(body, status_code=413)
    else:
        response = problem(413, "payload_too_large", str(exc.detail), instance=path)
    response.headers["connection"] = "close"
    await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
