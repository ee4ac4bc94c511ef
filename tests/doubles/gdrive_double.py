"""``GoogleDriveDouble``: an ASGI app speaking the parts of Google Drive's API v3 the backup
destination uses, as documented (developers.google.com/drive/api, "Upload file data",
"Search for files").

- ``POST /upload/drive/v3/files?uploadType=resumable`` with the file's JSON metadata
  (``name``, ``parents``) starts a session; its URL comes back in ``Location``.
- ``PUT <session URL>`` sends bytes with ``Content-Range: bytes a-b/total`` (or
  ``bytes */total`` to ask for the status). Chunks but the last must be multiples of
  256 KiB (400 otherwise); a chunk must start where the held bytes end (else the answer
  is a 308 saying what is held). 308 + ``Range: bytes=0-N`` until complete, then 200
  with the file's metadata. ``hold_back_once`` makes the double keep 256 KiB less of
  the next chunk than it was sent, as Drive may: the client must resend from ``Range``.
- ``GET /drive/v3/files?q=…`` lists, ``pageSize`` (capped at ``page_size``) at a time with
  ``nextPageToken``; it understands the queries the destination sends: ``'<folder>' in
  parents and trashed=false and mimeType != '<folder type>'``, optionally followed by
  ``and name = '…'`` (quotes and backslashes escaped).
- ``GET /drive/v3/files/<id>?alt=media`` downloads, ``DELETE /drive/v3/files/<id>`` deletes.

Every call needs ``Authorization: Bearer <token>`` (401 with Google's error JSON).
``fail_next`` makes the next N calls answer 503.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CHUNK_UNIT = 256 * 1024
_RANGE = re.compile(r"^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$")
_QUERY = re.compile(
    r"^'([A-Za-z0-9_-]+)' in parents and trashed=false"
    r" and mimeType != 'application/vnd\.google-apps\.folder'"
    r"(?: and name = '((?:[^'\\]|\\.)*)')?$"
)


@dataclass
class DriveFile:
    id: str
    name: str
    parents: list[str]
    data: bytes
    modified: datetime


@dataclass
class Session:
    name: str
    parents: list[str]
    total: int | None
    held: bytearray = field(default_factory=bytearray)


class GoogleDriveDouble:
    def __init__(self, token: str, *, page_size: int = 2) -> None:
        self.token = token
        self.page_size = page_size
        self.files: dict[str, DriveFile] = {}
        self.sessions: dict[str, Session] = {}
        self.ranges: list[str] = []  # every Content-Range received, in order
        self.fail_next = 0
        self.hold_back_once = False
        routes = [
            Route("/upload/drive/v3/files", self._upload, methods=["POST", "PUT"]),
            Route("/drive/v3/files", self._list, methods=["GET"]),
            Route("/drive/v3/files/{file_id}", self._file, methods=["GET", "DELETE"]),
        ]
        self.app = Starlette(routes=routes)

    def reset(self) -> None:
        self.files.clear()
        self.sessions.clear()
        self.ranges.clear()
        self.fail_next = 0
        self.hold_back_once = False

    def add_file(self, name: str, parent: str, data: bytes) -> DriveFile:
        """Put a file there as another Drive client would."""
        made = DriveFile(secrets.token_hex(8), name, [parent], data, datetime.now(UTC))
        self.files[made.id] = made
        return made

    async def _upload(self, request: Request) -> Response:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        if request.method == "POST":
            return await self._start(request)
        return await self._put(request)

    async def _start(self, request: Request) -> Response:
        if request.query_params.get("uploadType") != "resumable":
            return _error(400, "this double only takes resumable uploads", "badRequest")
        metadata = json.loads(await request.body())
        length = request.headers.get("x-upload-content-length")
        upload_id = secrets.token_hex(8)
        self.sessions[upload_id] = Session(
            metadata["name"], list(metadata.get("parents", [])), int(length) if length else None
        )
        location = (
            f"{request.base_url}upload/drive/v3/files?uploadType=resumable&upload_id={upload_id}"
        )
        return Response(status_code=200, headers={"Location": location})

    async def _put(self, request: Request) -> Response:
        session = self.sessions.get(request.query_params.get("upload_id", ""))
        if session is None:
            return _error(404, "no such upload session", "notFound")
        body = await request.body()
        span = request.headers.get("content-range", "")
        self.ranges.append(span)
        match = _RANGE.match(span)
        if match is None:
            return _error(400, f"bad Content-Range {span!r}", "badContentRange")
        first, last, total_text = match.groups()
        total = None if total_text == "*" else int(total_text)
        if first is not None:
            start, end = int(first), int(last)
            if len(body) != end - start + 1:
                return _error(
                    400, "Content-Range does not match the body's length", "badContentRange"
                )
            final = total is not None and end + 1 == total
            if not final and len(body) % CHUNK_UNIT:
                return _error(400, "chunks but the last must be multiples of 256 KiB", "badChunk")
            if start == len(session.held):  # else: not where we are; say where (308)
                if self.hold_back_once and not final and len(body) > CHUNK_UNIT:
                    self.hold_back_once = False
                    body = body[: len(body) - CHUNK_UNIT]
                session.held.extend(body)
        if total is not None and len(session.held) == total:
            return self._complete(request.query_params["upload_id"], session)
        headers = {"Range": f"bytes=0-{len(session.held) - 1}"} if session.held else {}
        return Response(status_code=308, headers=headers)

    def _complete(self, upload_id: str, session: Session) -> Response:
        del self.sessions[upload_id]
        made = DriveFile(
            secrets.token_hex(8),
            session.name,
            session.parents,
            bytes(session.held),
            datetime.now(UTC),
        )
        self.files[made.id] = made
        return JSONResponse({"kind": "drive#file", "id": made.id, "name": made.name})

    async def _list(self, request: Request) -> Response:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        match = _QUERY.match(request.query_params.get("q", ""))
        if match is None:
            return _error(
                400,
                f"this double does not understand q={request.query_params.get('q')!r}",
                "invalidQuery",
            )
        folder, quoted = match.groups()
        value = None if quoted is None else re.sub(r"\\(.)", r"\1", quoted)
        found = sorted(
            (
                item
                for item in self.files.values()
                if folder in item.parents and (value is None or item.name == value)
            ),
            key=lambda item: (item.modified, item.id),
        )
        size = min(int(request.query_params.get("pageSize", "100")), self.page_size)
        start = int(request.query_params.get("pageToken", "0"))
        page = found[start : start + size]
        body: dict[str, Any] = {
            "kind": "drive#fileList",
            "files": [_metadata(item) for item in page],
        }
        if start + size < len(found):
            body["nextPageToken"] = str(start + size)
        return JSONResponse(body)

    async def _file(self, request: Request) -> Response:
        refused = self._refusal(request)
        if refused is not None:
            return refused
        file_id = request.path_params["file_id"]
        item = self.files.get(file_id)
        if item is None:
            return _error(404, f"File not found: {file_id}.", "notFound")
        if request.method == "DELETE":
            del self.files[file_id]
            return Response(status_code=204)
        if request.query_params.get("alt") != "media":
            return JSONResponse(_metadata(item))
        return Response(item.data, media_type="application/octet-stream")

    def _refusal(self, request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return _error(401, "Request had invalid authentication credentials.", "authError")
        if self.fail_next > 0:
            self.fail_next -= 1
            return _error(503, "The service is currently unavailable.", "backendError")
        return None


def _metadata(item: DriveFile) -> dict[str, Any]:
    return {
        "id": item.id,
        "name": item.name,
        "size": str(len(item.data)),  # Drive sends sizes as strings (int64)
        "modifiedTime": item.modified.strftime("%Y-%m-%dT%H:%M:%S.")
        + f"{item.modified.microsecond // 1000:03d}Z",
    }


def _error(status: int, message: str, reason: str) -> JSONResponse:
    body = {
        "error": {
            "code": status,
            "message": message,
            "errors": [{"reason": reason, "message": message}],
        }
    }
    return JSONResponse(body, status_code=status)
