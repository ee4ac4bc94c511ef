"""Receiving an upload: a ``multipart/form-data`` body streamed to disk under a size cap.

The file part is written as it arrives, never held whole in memory, and handed to ingest
as a ``ReceivedFile``; what it holds is checked there (``autorag.ingest.uploads``). Its
type is judged by the extension before a byte is stored, and again by the content later.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

from fastapi import Request
from python_multipart.exceptions import FormParserError, MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from autorag.errors import (
    AutoragError,
    InvalidInput,
    MalformedUpload,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from autorag.ingest.parsers.guards import human_size
from autorag.ingest.uploads import ReceivedFile, sanitize_filename, upload_type
from autorag.private_files import create_private, make_private_dir

FILE_FIELD = "file"
# Multipart framing and small fields around the file; more than this is refused.
FORM_OVERHEAD_BYTES = 1024**2
# Body bytes read and dropped after a refusal, so the client reads the answer instead of
# a reset connection; a bigger body is cut off.
DRAIN_MAX_BYTES = 64 * 1024**2
_FEED_BYTES = 1024**2  # body bytes handed to the parser thread at a time
# Non-file form fields are ignored, but not without bound.
_MAX_FIELD_BYTES = 64 * 1024


async def receive_upload(
    request: Request,
    incoming: Path,
    limit: int,
    *,
    file_type: Callable[[str], str] = upload_type,
) -> ReceivedFile:
    """The request's ``file`` part, written under ``incoming``; at most ``limit`` bytes.
    ``file_type`` names the type a file name claims, refusing (415) what is not
    accepted: by default the document types ingest takes.

    On a refusal the partial file is removed and the rest of the body read and dropped
    (bounded), so the client sees the answer.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + FORM_OVERHEAD_BYTES:
        if int(declared) <= DRAIN_MAX_BYTES:
            await _drain(request)
        raise PayloadTooLarge(f"the upload is over the {human_size(limit)} limit")
    receiver = MultipartReceiver(
        request.headers.get("content-type"), incoming, max_bytes=limit, file_type=file_type
    )
    read = 0
    buffer = bytearray()
    try:
        async for chunk in request.stream():
            read += len(chunk)
            if read > limit + FORM_OVERHEAD_BYTES:
                raise PayloadTooLarge(f"the upload is over the {human_size(limit)} limit")
            buffer += chunk
            if len(buffer) >= _FEED_BYTES:
                await run_in_threadpool(receiver.feed, bytes(buffer))
                buffer.clear()
        await run_in_threadpool(receiver.feed, bytes(buffer))
        return receiver.finish()
    except ClientDisconnect:
        receiver.discard()
        raise InvalidInput("the client went away mid-upload", code="client_disconnected") from None
    except AutoragError:
        receiver.discard()
        await _drain(request, already=read)
        raise
    except BaseException:
        receiver.discard()
        raise


async def _drain(request: Request, already: int = 0) -> None:
    """Read and drop the rest of the body (bounded) so the refusal reaches the client."""
    read = already
    try:
        async for chunk in request.stream():
            read += len(chunk)
            if read > DRAIN_MAX_BYTES:
                return
    except (ClientDisconnect, RuntimeError):
        return


class MultipartReceiver:
    """Parses a ``multipart/form-data`` body fed in pieces; writes the ``file`` part.

    The file part goes straight to ``directory`` while its SHA-256 is computed; past
    ``max_bytes`` the receiver stops with ``PayloadTooLarge``. Feed with :meth:`feed`,
    end with :meth:`finish`; call :meth:`discard` on any error to remove the partial file.
    """

    def __init__(
        self,
        content_type: str | None,
        directory: Path,
        *,
        max_bytes: int,
        file_type: Callable[[str], str] = upload_type,
    ) -> None:
        mime, params = parse_options_header(content_type or "")
        if mime != b"multipart/form-data":
            raise UnsupportedMediaType(
                "upload with a multipart/form-data body holding a `file` part"
            )
        boundary = params.get(b"boundary")
        if not boundary:
            raise MalformedUpload("the multipart body has no boundary")
        self.directory = directory
        self.max_bytes = max_bytes
        self._file_type = file_type
        self._headers: list[tuple[bytes, bytes]] = []
        self._field = b""
        self._value = b""
        self._sink: BinaryIO | None = None
        self._in_file = False
        self._file_done = False
        self._field_bytes = 0
        self._size = 0
        self._digest = hashlib.sha256()
        self._filename = ""
        self._path: Path | None = None
        self._ended = False
        try:
            self._parser = MultipartParser(
                boundary,
                callbacks={
                    "on_part_begin": self._part_begin,
                    "on_header_field": self._header_field,
                    "on_header_value": self._header_value,
                    "on_header_end": self._header_end,
                    "on_headers_finished": self._headers_finished,
                    "on_part_data": self._part_data,
                    "on_part_end": self._part_end,
                    "on_end": self._end,
                },
                max_header_count=16,
            )
        except FormParserError as exc:
            raise MalformedUpload(f"the multipart boundary is not valid: {exc}") from exc

    def feed(self, data: bytes) -> None:
        if self._ended:
            return  # an epilogue after the closing boundary is ignored
        try:
            self._parser.write(data)
        except (MultipartParseError, FormParserError) as exc:
            raise MalformedUpload(f"the multipart body is malformed: {exc}") from exc

    def finish(self) -> ReceivedFile:
        if not self._ended:
            raise MalformedUpload("the multipart body ended before its closing boundary")
        if not self._file_done or self._path is None:
            raise InvalidInput(
                f"the upload has no `{FILE_FIELD}` part with a file name", code="missing_file"
            )
        return ReceivedFile(self._path, self._filename, self._size, self._digest.hexdigest())

    def discard(self) -> None:
        self._close_sink()
        if self._path is not None:
            self._path.unlink(missing_ok=True)
            self._path = None

    # parser callbacks ----------------------------------------------------------------
    def _part_begin(self) -> None:
        self._headers = []
        self._field = self._value = b""

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers.append((self._field.strip().lower(), self._value.strip()))
        self._field = self._value = b""

    def _headers_finished(self) -> None:
        disposition = next((v for k, v in self._headers if k == b"content-disposition"), None)
        if disposition is None:
            raise MalformedUpload("a multipart part has no Content-Disposition header")
        kind, params = parse_options_header(disposition)
        if kind != b"form-data":
            raise MalformedUpload("a multipart part is not form-data")
        name = params.get(b"name", b"").decode("utf-8", "replace")
        filename = _disposition_filename(disposition, params)
        self._in_file = filename is not None
        if filename is None:
            return
        if name != FILE_FIELD:
            raise InvalidInput(
                f"unexpected file field {name!r}: send the file as `{FILE_FIELD}`",
                code="unexpected_field",
            )
        if self._path is not None:
            raise InvalidInput("upload one file per request", code="too_many_files")
        self._filename = filename
        doc_type = self._file_type(sanitize_filename(filename))  # 415 before a byte is stored
        make_private_dir(self.directory)
        self._path = self.directory / f"{secrets.token_hex(16)}.{doc_type}"
        self._sink = create_private(self._path)

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        piece = data[start:end]
        if not self._in_file:
            self._field_bytes += len(piece)
            if self._field_bytes > _MAX_FIELD_BYTES:
                raise PayloadTooLarge("form fields besides the file are limited to 64 KiB")
            return
        self._size += len(piece)
        if self._size > self.max_bytes:
            raise PayloadTooLarge(f"the file is over the {human_size(self.max_bytes)} upload limit")
        self._digest.update(piece)
        assert self._sink is not None
        self._sink.write(piece)

    def _part_end(self) -> None:
        if self._in_file:
            self._close_sink()
            self._file_done = True
        self._in_file = False

    def _end(self) -> None:
        self._ended = True

    def _close_sink(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None


def _disposition_filename(header: bytes, params: dict[bytes, bytes]) -> str | None:
    """``filename*`` (RFC 5987, UTF-8) when given, else ``filename``; ``None`` if neither."""
    extended = re.search(rb"filename\*\s*=\s*([^;]+)", header, re.IGNORECASE)
    if extended:
        charset, _, rest = extended.group(1).strip().strip(b'"').partition(b"'")
        _language, _, encoded = rest.partition(b"'")
        encoding = charset.decode("ascii", "replace") or "utf-8"
        try:
            return unquote(encoded.decode("ascii", "replace"), encoding=encoding, errors="replace")
        except LookupError:
            return unquote(encoded.decode("ascii", "replace"), errors="replace")
    if b"filename" in params:
        return params[b"filename"].decode("utf-8", "replace")
    return None
