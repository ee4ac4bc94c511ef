"""``dropbox:/folder``: Dropbox's HTTP API v2 with the OAuth access token of
``[backup.dropbox] access_token``.

An archive up to ``UPLOAD_CHUNK`` goes up in one ``files/upload``; a larger one through
an upload session (``upload_session/start``, ``append_v2``…, ``finish`` with the last
piece), one chunk in memory at a time. ``api_url``/``content_url`` point elsewhere than
Dropbox's hosts (a double in tests).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

from autorag.backup.destinations.base import (
    StoredArchive,
    check_name,
    is_archive_name,
    oldest_first,
    receiving,
)
from autorag.backup.destinations.cloud_http import CloudApi, json_body, parse_time
from autorag.backup.destinations.urls import DestinationUrl
from autorag.config import BackupSettings, OAuthUploadSettings
from autorag.errors import InvalidInput

API_URL = "https://api.dropboxapi.com"
CONTENT_URL = "https://content.dropboxapi.com"
# Dropbox takes at most 150 MB per request; sessions' pieces should be multiples of
# 4 MiB. Tests shrink this.
UPLOAD_CHUNK = 8 * 1024 * 1024
TOKEN_SETTING = "[backup.dropbox] access_token (AUTORAG_BACKUP__DROPBOX__ACCESS_TOKEN)"


class DropboxDestination:
    def __init__(self, folder: str, settings: OAuthUploadSettings, label: str) -> None:
        self.folder = folder  # "" is the root, else "/a/b" (Dropbox's spelling)
        self.label = label
        self._api_url = (settings.api_url or API_URL).rstrip("/")
        self._content_url = (settings.content_url or CONTENT_URL).rstrip("/")
        self._api = CloudApi(label, settings.access_token, TOKEN_SETTING)

    def put(self, local: Path, name: str) -> None:
        commit = {"path": self._path(name), "mode": "overwrite", "autorename": False, "mute": True}
        size = local.stat().st_size
        with local.open("rb") as source:
            first = source.read(UPLOAD_CHUNK)
            if len(first) >= size:
                self._content("files/upload", commit, first, what=f"upload {name}")
                return
            self._session_upload(source, first, size, commit, name)

    def _session_upload(
        self, source: BinaryIO, first: bytes, size: int, commit: dict[str, Any], name: str
    ) -> None:
        what = f"upload {name}"
        started = self._content("files/upload_session/start", {"close": False}, first, what=what)
        session_id = json_body(started, self._api, what).get("session_id")
        if not isinstance(session_id, str):
            raise self._api.failed(what, f"upload_session/start gave no session_id: {started.text}")
        offset = len(first)
        while True:
            chunk = source.read(UPLOAD_CHUNK)
            cursor = {"session_id": session_id, "offset": offset}
            # The last piece commits the file (an empty read too: never loop on nothing).
            if not chunk or offset + len(chunk) >= size:
                self._content(
                    "files/upload_session/finish",
                    {"cursor": cursor, "commit": commit},
                    chunk,
                    what=what,
                )
                return
            self._content(
                "files/upload_session/append_v2",
                {"cursor": cursor, "close": False},
                chunk,
                what=what,
            )
            offset += len(chunk)

    def list(self) -> list[StoredArchive]:
        arg = {"path": self.folder, "recursive": False}
        url = f"{self._api_url}/2/files/list_folder"
        response = self._api.call("POST", url, what="list", ok=(200, 409), json=arg)
        if response.status_code == 409:
            if "not_found" in response.text:
                return []  # no folder yet: nothing was ever put here
            raise self._api.status_error(response, "list")
        body = json_body(response, self._api, "list")
        archives = _archives(body.get("entries"))
        while body.get("has_more"):
            body = self._rpc(
                "files/list_folder/continue", {"cursor": body.get("cursor")}, what="list"
            )
            archives.extend(_archives(body.get("entries")))
        return oldest_first(archives)

    def get(self, name: str, local: Path) -> None:
        arg = {"path": self._path(name)}
        url = f"{self._content_url}/2/files/download"
        headers = {"Dropbox-API-Arg": _header_json(arg)}
        with (
            self._api.stream(
                "POST", url, what=f"download {name}", missing=name, headers=headers
            ) as body,
            receiving(local) as sink,
        ):
            for piece in body:
                sink.write(piece)

    def delete(self, name: str) -> None:
        self._rpc(
            "files/delete_v2", {"path": self._path(name)}, what=f"delete {name}", missing=name
        )

    def _path(self, name: str) -> str:
        return f"{self.folder}/{check_name(name)}"

    def _content(self, endpoint: str, arg: dict[str, Any], data: bytes, *, what: str) -> Any:
        """A content-host call: arguments in the Dropbox-API-Arg header, data as the body."""
        headers = {"Dropbox-API-Arg": _header_json(arg), "Content-Type": "application/octet-stream"}
        url = f"{self._content_url}/2/{endpoint}"
        return self._api.call("POST", url, what=what, headers=headers, content=data)

    def _rpc(
        self, endpoint: str, arg: dict[str, Any], *, what: str, missing: str | None = None
    ) -> dict[str, Any]:
        """An RPC call: JSON in, JSON out."""
        url = f"{self._api_url}/2/{endpoint}"
        response = self._api.call("POST", url, what=what, missing=missing, json=arg)
        return json_body(response, self._api, what)


def _header_json(arg: dict[str, Any]) -> str:
    """JSON for an HTTP header: Dropbox asks for every non-ASCII character escaped, and
    0x7F too (json's ensure_ascii leaves that one)."""
    return json.dumps(arg, ensure_ascii=True).replace("\x7f", "\\u007f")


def _archives(entries: Any) -> list[StoredArchive]:
    if not isinstance(entries, list):
        return []
    return [
        StoredArchive(
            str(entry["name"]), int(entry.get("size", 0)), parse_time(entry.get("server_modified"))
        )
        for entry in entries
        if isinstance(entry, dict)
        and entry.get(".tag") == "file"
        and is_archive_name(str(entry.get("name", "")))
    ]


def open_dropbox(
    url: DestinationUrl, settings: BackupSettings, default_dir: Path
) -> DropboxDestination:
    folder = url.rest.strip()
    if folder.startswith("//"):
        raise InvalidInput(f"write a Dropbox folder as dropbox:/folder, not {url.text!r}")
    parts = [part for part in folder.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise InvalidInput(f"backup destination {url.text!r}: '.' and '..' are not folders")
    normal = "/" + "/".join(parts) if parts else ""
    return DropboxDestination(normal, settings.dropbox, f"dropbox:{normal or '/'}")
