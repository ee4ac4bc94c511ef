"""``gdrive:<folder id>``: Google Drive's API v3 with the OAuth access token of
``[backup.gdrive] access_token``.

Uploads are resumable sessions: ``POST /upload/drive/v3/files?uploadType=resumable``
with the file's metadata, then the bytes ``PUT`` in chunks of ``UPLOAD_CHUNK`` (a
multiple of 256 KiB, as Drive demands) with ``Content-Range``; each ``308`` answer's
``Range`` says what Drive holds, and the next chunk starts there. Drive allows several
files of one name: a ``put`` replaces the older ones once the new one is complete.
``api_url`` points elsewhere than Google's host (a double in tests).
"""

from __future__ import annotations

import builtins
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
from autorag.errors import InvalidInput, NotFound

API_URL = "https://www.googleapis.com"
CHUNK_UNIT = 256 * 1024  # Drive takes chunks in multiples of this (but the last)
UPLOAD_CHUNK = 32 * CHUNK_UNIT  # 8 MiB; tests shrink this
PAGE_SIZE = 1000
# Chunks in a row after which Drive holds no more than before: the upload is stuck.
MAX_STALLS = 3
TOKEN_SETTING = "[backup.gdrive] access_token (AUTORAG_BACKUP__GDRIVE__ACCESS_TOKEN)"
_FOLDER_ID = re.compile(r"^[A-Za-z0-9_-]{1,200}$")  # Drive's ids (and "root")
_FIELDS = "nextPageToken, files(id, name, size, modifiedTime)"
_FOLDER = "application/vnd.google-apps.folder"
_ALL_DRIVES = {"supportsAllDrives": "true"}  # folders in shared drives too
_RANGE = re.compile(r"^bytes=0-(\d+)$")


class GoogleDriveDestination:
    def __init__(self, folder_id: str, settings: OAuthUploadSettings, label: str) -> None:
        self.folder_id = folder_id
        self.label = label
        self._api_url = (settings.api_url or API_URL).rstrip("/")
        self._api = CloudApi(label, settings.access_token, TOKEN_SETTING)

    def put(self, local: Path, name: str) -> None:
        check_name(name)
        if UPLOAD_CHUNK % CHUNK_UNIT:
            raise InvalidInput(f"UPLOAD_CHUNK must be a multiple of {CHUNK_UNIT} bytes")
        older = [file["id"] for file in self._files(name)]
        session = self._start_session(local, name)
        self._send(local, session, name)
        for file_id in older:  # the new one is complete: the old ones go
            self._delete_id(file_id, name)

    def list(self) -> list[StoredArchive]:
        archives = [
            StoredArchive(
                file["name"], int(file.get("size") or 0), parse_time(file.get("modifiedTime"))
            )
            for file in self._files()
            if is_archive_name(file["name"])
        ]
        return oldest_first(archives)

    def get(self, name: str, local: Path) -> None:
        newest = self._existing(name)[-1]
        url = f"{self._api_url}/drive/v3/files/{newest}"
        params = {"alt": "media", **_ALL_DRIVES}
        with (
            self._api.stream(
                "GET", url, what=f"download {name}", missing=name, params=params
            ) as body,
            receiving(local) as sink,
        ):
            for piece in body:
                sink.write(piece)

    def delete(self, name: str) -> None:
        for file_id in self._existing(name):
            self._delete_id(file_id, name)

    def _start_session(self, local: Path, name: str) -> str:
        """A resumable upload session's URL (Drive's ``Location`` answer)."""
        what = f"upload {name}"
        url = f"{self._api_url}/upload/drive/v3/files"
        response = self._api.call(
            "POST",
            url,
            what=what,
            params={"uploadType": "resumable", **_ALL_DRIVES},
            json={"name": name, "parents": [self.folder_id]},
            headers={
                "X-Upload-Content-Type": "application/octet-stream",
                "X-Upload-Content-Length": str(local.stat().st_size),
            },
        )
        session = str(response.headers.get("location", ""))
        # The token goes with every chunk: only ever to the API's own host.
        if _origin(session) != _origin(self._api_url):
            raise self._api.failed(
                what, f"the upload session is not on {self._api_url}: {session!r}"
            )
        return session

    def _send(self, local: Path, session: str, name: str) -> None:
        """PUT the file in chunks, each from where Drive says it holds the bytes up to."""
        what = f"upload {name}"
        size = local.stat().st_size
        offset = stalls = 0
        with local.open("rb") as source:
            while True:
                source.seek(offset)
                chunk = source.read(UPLOAD_CHUNK)
                end = offset + len(chunk)
                span = f"bytes {offset}-{end - 1}/{size}" if chunk else f"bytes */{size}"
                headers = {"Content-Range": span}
                ok = (200, 201, 308)
                response = self._api.call(
                    "PUT", session, what=what, ok=ok, content=chunk, headers=headers
                )
                if response.status_code != 308:
                    return
                held = _held(response.headers.get("range"))
                if held is None or held > size:
                    reason = f"Drive answered {span} with Range {response.headers.get('range')!r}"
                    raise self._api.failed(what, reason)
                stalls = stalls + 1 if held <= offset else 0
                if stalls > MAX_STALLS:
                    raise self._api.failed(what, f"Drive holds no more than {held} bytes")
                offset = held

    def _files(self, name: str | None = None) -> builtins.list[dict[str, Any]]:
        """The files in the folder (not its subfolders): those named ``name``, or all.

        Listing all and keeping the archives here, rather than asking for
        ``name contains '.autorag-backup'``: Drive's ``contains`` matches the start of a
        name's words only, so it is no test of a suffix.
        """
        query = f"'{self.folder_id}' in parents and trashed=false and mimeType != '{_FOLDER}'"
        if name is not None:
            query += f" and name = '{_quoted(name)}'"
        params = {
            "q": query,
            "fields": _FIELDS,
            "pageSize": str(PAGE_SIZE),
            "orderBy": "modifiedTime",
            "includeItemsFromAllDrives": "true",
            **_ALL_DRIVES,
        }
        files: builtins.list[dict[str, Any]] = []
        while True:
            response = self._api.call(
                "GET", f"{self._api_url}/drive/v3/files", what="list", params=params
            )
            body = json_body(response, self._api, "list")
            listed = body.get("files")
            files.extend(item for item in listed or [] if _is_file(item))
            token = body.get("nextPageToken")
            if not token:
                return files
            params["pageToken"] = str(token)

    def _existing(self, name: str) -> builtins.list[str]:
        """The ids of the files named ``name``, oldest first; ``NotFound`` when none."""
        ids = [file["id"] for file in self._files(check_name(name))]
        if not ids:
            raise NotFound(f"no backup {name!r} in {self.label}")
        return ids

    def _delete_id(self, file_id: str, name: str) -> None:
        url = f"{self._api_url}/drive/v3/files/{file_id}"
        self._api.call(
            "DELETE", url, what=f"delete {name}", missing=name, ok=(200, 204), params=_ALL_DRIVES
        )


def _is_file(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("id"), str)
        and _FOLDER_ID.match(item["id"]) is not None  # it goes into a URL path
    )


def _held(header: str | None) -> int | None:
    """How many bytes Drive holds, from a 308's ``Range: bytes=0-N`` (none: 0)."""
    if header is None:
        return 0
    match = _RANGE.match(header.strip())
    return int(match.group(1)) + 1 if match else None


def _quoted(value: str) -> str:
    """A string for a Drive query literal: backslashes and single quotes escaped."""
    return value.replace("\\", "\\\\").replace("'", "\\'")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc


def open_gdrive(
    url: DestinationUrl, settings: BackupSettings, default_dir: Path
) -> GoogleDriveDestination:
    folder_id = url.rest.strip()
    if not _FOLDER_ID.match(folder_id):
        raise InvalidInput(
            f"backup destination {url.text!r}: write gdrive:<folder id> (the id ends the "
            "folder's Drive URL: letters, digits, '-' and '_')"
        )
    return GoogleDriveDestination(folder_id, settings.gdrive, f"gdrive:{folder_id}")
