"""``DropboxDouble``: an ASGI app speaking the parts of Dropbox's HTTP API v2 the backup
destination uses, as documented (developers.dropbox.com, "HTTP documentation").

Content host (arguments as JSON in the ``Dropbox-API-Arg`` header, data as the body):
``/2/files/upload``, ``/2/files/upload_session/start``, ``…/append_v2``, ``…/finish``,
``/2/files/download``. RPC host (JSON in and out): ``/2/files/list_folder``,
``…/list_folder/continue``, ``/2/files/delete_v2``. Both are this one app.

Like Dropbox it demands ``Authorization: Bearer <token>`` (401 otherwise), an ASCII
JSON ``Dropbox-API-Arg`` (400 otherwise), session offsets that match what it holds
(409 ``incorrect_offset``), and answers endpoint errors with 409 and an
``error_summary`` (``path/not_found/…``). Listings come ``page_size`` entries at a time
(``has_more`` and a ``cursor``). ``fail_next`` makes the next N calls answer 503.
``calls`` records (endpoint, argument) of each call.

    double = DropboxDouble(token="tok")
    base_url = serve_asgi(double.app)
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class StoredFile:
    path_display: str
    data: bytes
    modified: datetime


class DropboxDouble:
    def __init__(self, token: str, *, page_size: int = 2) -> None:
        self.token = token
        self.page_size = page_size
        self.files: dict[str, StoredFile] = {}  # by lower-case path, as Dropbox compares
        self.sessions: dict[str, bytearray] = {}
        self.calls: list[tuple[str, Any]] = []
        self.fail_next = 0
        routes = [
            Route("/2/files/upload", self._upload, methods=["POST"]),
            Route("/2/files/upload_session/start", self._start, methods=["POST"]),
            Route("/2/files/upload_session/append_v2", self._append, methods=["POST"]),
            Route("/2/files/upload_session/finish", self._finish, methods=["POST"]),
            Route("/2/files/download", self._download, methods=["POST"]),
            Route("/2/files/list_folder", self._list, methods=["POST"]),
            Route("/2/files/list_folder/continue", self._continue, methods=["POST"]),
            Route("/2/files/delete_v2", self._delete, methods=["POST"]),
        ]
        self.app = Starlette(routes=routes)

    def reset(self) -> None:
        self.files.clear()
        self.sessions.clear()
        self.calls.clear()
        self.fail_next = 0

    def add_file(self, path: str, data: bytes) -> None:
        """Put a file there as another Dropbox client would."""
        self.files[path.lower()] = StoredFile(path, data, datetime.now(UTC))

    def endpoints(self) -> list[str]:
        return [endpoint for endpoint, _ in self.calls]

    # -- the endpoints -------------------------------------------------------------

    async def _upload(self, request: Request) -> Response:
        return await self._handled(request, "upload", self._do_upload, content=True)

    async def _start(self, request: Request) -> Response:
        return await self._handled(request, "upload_session/start", self._do_start, content=True)

    async def _append(self, request: Request) -> Response:
        return await self._handled(
            request, "upload_session/append_v2", self._do_append, content=True
        )

    async def _finish(self, request: Request) -> Response:
        return await self._handled(request, "upload_session/finish", self._do_finish, content=True)

    async def _download(self, request: Request) -> Response:
        return await self._handled(request, "download", self._do_download, content=True)

    async def _list(self, request: Request) -> Response:
        return await self._handled(request, "list_folder", self._do_list)

    async def _continue(self, request: Request) -> Response:
        return await self._handled(request, "list_folder/continue", self._do_continue)

    async def _delete(self, request: Request) -> Response:
        return await self._handled(request, "delete_v2", self._do_delete)

    async def _handled(
        self, request: Request, endpoint: str, action: Any, *, content: bool = False
    ) -> Response:
        """Authorization, failure injection and argument parsing, as Dropbox checks them."""
        given = request.headers.get("authorization", "")
        if given != f"Bearer {self.token}":
            summary = f"invalid_access_token/.. (token {given.removeprefix('Bearer ')!r})"
            return _error(401, summary, "invalid_access_token")
        if self.fail_next > 0:
            self.fail_next -= 1
            return Response("Service Unavailable: try again", status_code=503)
        body = await request.body()
        if content:
            header = request.headers.get("dropbox-api-arg")
            if header is None or not header.isascii():
                return _error(400, "Dropbox-API-Arg missing or not ASCII", "bad_request")
            arg = json.loads(header)
        else:
            if request.headers.get("content-type", "").split(";")[0] != "application/json":
                return _error(400, "Content-Type must be application/json", "bad_request")
            arg = json.loads(body)
        self.calls.append((endpoint, arg))
        result: Response = action(arg, body)
        return result

    def _do_upload(self, arg: dict[str, Any], body: bytes) -> Response:
        return JSONResponse(self._commit(arg, bytes(body)))

    def _do_start(self, arg: dict[str, Any], body: bytes) -> Response:
        session_id = secrets.token_hex(8)
        self.sessions[session_id] = bytearray(body)
        return JSONResponse({"session_id": session_id})

    def _do_append(self, arg: dict[str, Any], body: bytes) -> Response:
        refused = self._check_cursor(arg["cursor"])
        if refused is not None:
            return refused
        self.sessions[arg["cursor"]["session_id"]].extend(body)
        return JSONResponse(None)

    def _do_finish(self, arg: dict[str, Any], body: bytes) -> Response:
        refused = self._check_cursor(arg["cursor"])
        if refused is not None:
            return refused
        data = self.sessions.pop(arg["cursor"]["session_id"])
        data.extend(body)
        return JSONResponse(self._commit(arg["commit"], bytes(data)))

    def _do_download(self, arg: dict[str, Any], body: bytes) -> Response:
        stored = self.files.get(arg["path"].lower())
        if stored is None:
            return _error(409, "path/not_found/..", "path")
        metadata = json.dumps(_metadata(stored))
        return Response(stored.data, headers={"Dropbox-API-Result": metadata})

    def _do_list(self, arg: dict[str, Any], body: bytes) -> Response:
        folder = arg["path"].lower()
        if folder and not any(path.startswith(folder + "/") for path in self.files):
            return _error(409, "path/not_found/...", "path")
        return self._page(folder, 0)

    def _do_continue(self, arg: dict[str, Any], body: bytes) -> Response:
        folder, _, start = str(arg["cursor"]).rpartition("|")
        return self._page(folder, int(start))

    def _do_delete(self, arg: dict[str, Any], body: bytes) -> Response:
        stored = self.files.pop(arg["path"].lower(), None)
        if stored is None:
            return _error(409, "path_lookup/not_found/..", "path_lookup")
        return JSONResponse({"metadata": _metadata(stored)})

    # -- helpers -------------------------------------------------------------------

    def _commit(self, commit: dict[str, Any], data: bytes) -> dict[str, Any]:
        assert commit["mode"] == "overwrite", commit
        stored = StoredFile(commit["path"], data, datetime.now(UTC).replace(microsecond=0))
        self.files[commit["path"].lower()] = stored
        return _metadata(stored)

    def _check_cursor(self, cursor: dict[str, Any]) -> Response | None:
        held = self.sessions.get(cursor["session_id"])
        if held is None:
            return _error(409, "not_found/..", "not_found")
        if cursor["offset"] != len(held):
            return JSONResponse(
                {
                    "error_summary": "incorrect_offset/..",
                    "error": {".tag": "incorrect_offset", "correct_offset": len(held)},
                },
                status_code=409,
            )
        return None

    def _page(self, folder: str, start: int) -> Response:
        children = [
            self.files[path] for path in sorted(self.files) if path.rpartition("/")[0] == folder
        ]
        page = children[start : start + self.page_size]
        more = start + self.page_size < len(children)
        return JSONResponse(
            {
                "entries": [_metadata(stored) for stored in page],
                "cursor": f"{folder}|{start + self.page_size}",
                "has_more": more,
            }
        )


def _metadata(stored: StoredFile) -> dict[str, Any]:
    return {
        ".tag": "file",
        "name": stored.path_display.rpartition("/")[2],
        "path_lower": stored.path_display.lower(),
        "path_display": stored.path_display,
        "id": "id:" + secrets.token_hex(6),
        "client_modified": stored.modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server_modified": stored.modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rev": secrets.token_hex(5),
        "size": len(stored.data),
    }


def _error(status: int, summary: str, tag: str) -> JSONResponse:
    return JSONResponse({"error_summary": summary, "error": {".tag": tag}}, status_code=status)
