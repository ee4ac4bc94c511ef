"""Uploaded files: sniffed, stored under their hash, processed.

Nothing here trusts the client. The stored name is the content's SHA-256, the type is
what the bytes say (and it must agree with the extension), and the client's file name
is only sanitised into a title and the source id. The API's multipart receiver
(``autorag.api.multipart``) writes the file as it arrives, never held whole in memory,
and hands it over as a ``ReceivedFile``.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from charset_normalizer import from_bytes
from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from autorag.errors import (
    Conflict,
    InvalidInput,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from autorag.ingest import duplicates
from autorag.ingest.parsers import guards
from autorag.ingest.parsers.base import ParseError
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome
from autorag.private_files import make_private_dir
from autorag.store.catalog import queue
from autorag.store.catalog.models import DocumentRow, utcnow
from autorag.store.catalog.repository import DocumentMeta, WorkspaceInfo, announce_documents
from autorag.times import as_utc
from autorag.workspace import UPLOADS_DIR_NAME

# The document type each accepted extension stands for; nothing else is accepted.
UPLOAD_TYPES: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".txt": "txt",
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".html": "html",
    ".htm": "html",
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".tif": "tiff",
    ".tiff": "tiff",
}
TEXT_TYPES = frozenset({"txt", "md", "csv", "html"})
# The part of a zip container that makes it a document of each Office type.
OFFICE_MAIN_PARTS = {
    "docx": "word/document.xml",
    "pptx": "ppt/presentation.xml",
    "xlsx": "xl/workbook.xml",
}
MIME_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "txt": "text/plain",
    "md": "text/markdown",
    "csv": "text/csv",
    "html": "text/html",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "tiff": "image/tiff",
}
# How each image type starts (TIFF in either byte order); OCR reads images.
IMAGE_MAGIC: dict[str, tuple[bytes, ...]] = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "tiff": (b"II*\x00", b"MM\x00*"),
}
UPLOAD_JOB = "process_upload"
MAX_NAME_CHARS = 120
_SNIFF_BYTES = 64 * 1024
# Bytes of a text file the charset check looks at (the NUL check reads everything).
_TEXT_SAMPLE_BYTES = 64 * 1024
_CONTROL_SHARE = 0.01  # more C0 control characters than this and it is not text
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")
_HTML_TAG = re.compile(rb"<\s*(!doctype|html|head|body|[a-z][a-z0-9]*[\s/>])", re.IGNORECASE)
# Windows forbids these in names; '%' is out too, since decoding it could spell '..' or '/'.
_RESERVED = re.compile(r'[<>:"/\\|?*%]')
_SPACES = re.compile(r"\s+")
_INCOMING_MAX_AGE_S = 24 * 3600

_MAGIC = (
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x7fELF", "application/x-executable"),
    (b"MZ", "application/x-msdownload"),
    (b"\x1f\x8b", "application/gzip"),
)

# Signatures of binary formats; a file starting with one is not text, whatever its bytes.
_FORMAT_MAGIC = tuple(m for m, _ in _MAGIC if m not in (b"MZ", b"GIF8"))


# -- file names -----------------------------------------------------------------------
def sanitize_filename(raw: str) -> str:
    """A client's file name made safe to show and to put in a source id.

    Keeps only the last path component, drops control characters, replaces characters
    that are reserved on some system (or that decode to a separator), strips leading
    dots so ``..`` and hidden names cannot survive, and bounds the length keeping the
    extension. Never empty.
    """
    name = unicodedata.normalize("NFKC", raw)
    name = re.split(r"[/\\]", name)[-1]
    name = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co"))
    name = _SPACES.sub(" ", _RESERVED.sub("_", name)).strip(" .")
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    ext = ext[:16]
    stem = stem.rstrip(" .")[: MAX_NAME_CHARS - len(ext) - 1].rstrip(" .") or "upload"
    return f"{stem}.{ext}" if ext else stem


def upload_type(filename: str) -> str:
    """The document type a (sanitised) name's extension claims; 415 when not accepted."""
    suffix = Path(filename).suffix.lower()
    doc_type = UPLOAD_TYPES.get(suffix)
    if doc_type is None:
        accepted = ", ".join(sorted({t for t in UPLOAD_TYPES.values()}))
        what = f"'{suffix}'" if suffix else "without an extension"
        raise UnsupportedMediaType(f"files {what} are not accepted (accepted: {accepted})")
    return doc_type


def upload_source_id(workspace_name: str, sha256: str, filename: str) -> str:
    """``/uploads/<workspace>/<first 12 hex of sha256>/<sanitised name>`` (seed 000)."""
    return f"/uploads/{workspace_name}/{sha256[:12]}/{filename}"


def uploads_dir(data_dir: Path, workspace: WorkspaceInfo) -> Path:
    """Where a workspace's uploads are kept: ``<data dir>/uploads/<short id>/``."""
    return data_dir / UPLOADS_DIR_NAME / workspace.short_id


def stored_path(data_dir: Path, workspace: WorkspaceInfo, sha256: str, doc_type: str) -> Path:
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise ValueError("a stored upload is named by its SHA-256")
    return uploads_dir(data_dir, workspace) / f"{sha256}.{_extension(doc_type)}"


def _extension(doc_type: str) -> str:
    if doc_type not in MIME_TYPES:
        raise ValueError(f"not an upload type: {doc_type}")
    return doc_type


# -- content sniffing -----------------------------------------------------------------
def detect_mime(head: bytes) -> str:
    """What the first bytes look like, for messages; ``text/plain`` or a guess."""
    for magic, mime in _MAGIC:
        if head.startswith(magic):
            return mime
    if b"%PDF-" in head[:1024]:
        return "application/pdf"
    if b"\x00" in head:
        return "application/octet-stream"
    return "text/plain"


def sniff(path: Path, doc_type: str, limits: guards.IngestLimits) -> None:
    """Check that the bytes at ``path`` really are a ``doc_type`` file.

    Raises ``UnsupportedMediaType`` (415) when they are something else, and
    ``InvalidInput`` with the guard's reason (``zip_bomb``, ``too_large``) when an Office
    container is hostile.
    """
    with path.open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if doc_type == "pdf":
        if b"%PDF-" not in head[:1024]:
            _mismatch(doc_type, head)
    elif doc_type in OFFICE_MAIN_PARTS:
        _sniff_office(path, doc_type, head, limits)
    elif doc_type in TEXT_TYPES:
        _sniff_text(path, doc_type, head)
    elif doc_type in IMAGE_MAGIC:
        if not head.startswith(IMAGE_MAGIC[doc_type]):
            _mismatch(doc_type, head)
    else:
        raise UnsupportedMediaType(f"'{doc_type}' files are not accepted")


def _mismatch(doc_type: str, head: bytes, why: str = "") -> NoReturn:
    found = detect_mime(head)
    detail = f" ({why})" if why else ""
    raise UnsupportedMediaType(
        f"the content is {found}, not {MIME_TYPES[doc_type]} as the .{doc_type} "
        f"extension says{detail}"
    )


def _sniff_office(path: Path, doc_type: str, head: bytes, limits: guards.IngestLimits) -> None:
    if not head.startswith(b"PK\x03\x04"):
        _mismatch(doc_type, head)
    try:
        with zipfile.ZipFile(path) as archive:  # reads the central directory only
            names = set(archive.namelist())
    except (zipfile.BadZipFile, EOFError, ValueError, OSError):
        _mismatch(doc_type, head, "not a readable zip container")
    if "[Content_Types].xml" not in names or OFFICE_MAIN_PARTS[doc_type] not in names:
        _mismatch(doc_type, head, f"a zip without {OFFICE_MAIN_PARTS[doc_type]}")
    if path.suffix != f".{doc_type}":
        raise ValueError("the guards pick zip checks by extension: name the file .<type>")
    try:
        guards.check_file(path, limits)
    except ParseError as exc:
        raise _guard_error(exc) from exc


def _guard_error(exc: ParseError) -> InvalidInput:
    if exc.reason == "too_large":
        return PayloadTooLarge(exc.message)
    if exc.reason in ("corrupt", "unsupported_type"):
        return UnsupportedMediaType(exc.message)
    return InvalidInput(exc.message, code=exc.reason)


def _sniff_text(path: Path, doc_type: str, head: bytes) -> None:
    if head.startswith(_FORMAT_MAGIC):
        _mismatch(doc_type, head)  # a PDF can be all ASCII, yet it is no text file
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            if b"\x00" in block:
                _mismatch(doc_type, head, "text never holds NUL bytes")
    sample = head[:_TEXT_SAMPLE_BYTES]
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    if sample and controls / len(sample) > _CONTROL_SHARE:
        _mismatch(doc_type, head, "too many control characters for text")
    if not _decodes_as_text(sample):
        _mismatch(doc_type, head, "it does not decode as text")
    if doc_type == "html" and not _HTML_TAG.search(sample):
        raise UnsupportedMediaType("the content is text/plain, not text/html: it has no HTML tag")


def _decodes_as_text(sample: bytes) -> bool:
    if not sample:
        return True
    try:
        sample.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data":
            return True  # a character cut by the sample's end
    return from_bytes(sample).best() is not None


# -- a received file ------------------------------------------------------------------
@dataclass(frozen=True)
class ReceivedFile:
    """An uploaded file written to disk: where, the client's (raw) name, size and hash."""

    path: Path
    filename: str
    size: int
    sha256: str

    @property
    def doc_type(self) -> str:
        return upload_type(self.filename)


def sweep_incoming(directory: Path, *, max_age_s: float = _INCOMING_MAX_AGE_S) -> int:
    """Remove partial uploads a killed process left behind (older than ``max_age_s``)."""
    removed = 0
    if not directory.is_dir():
        return 0
    cutoff = time.time() - max_age_s
    for entry in directory.iterdir():
        try:
            if entry.is_file() and entry.stat().st_mtime < cutoff:
                entry.unlink()
                removed += 1
        except OSError:
            continue
    return removed


# -- registering an upload ------------------------------------------------------------
@dataclass(frozen=True)
class StoredUpload:
    document_id: int
    duplicate: bool
    job_id: int | None = None


def store_upload(
    engine: Engine,
    workspace: WorkspaceInfo,
    data_dir: Path,
    received: ReceivedFile,
    limits: guards.IngestLimits,
    *,
    ocr_mode: str = "auto",
    uploaded_by: str | None = None,
) -> StoredUpload:
    """Sniff ``received``, then keep it once per content hash and queue its processing.

    A file whose content the workspace already holds, as an upload or as a file under
    a search path, is not stored again: the result names the existing (kept) document
    with ``duplicate=True``. Otherwise the file
    moves to ``<uploads>/<sha256>.<ext>`` and a ``pending`` document and its job are
    written in one transaction. ``ocr_mode`` (auto, vision, skip) rides on the job: it
    says how pages without a text layer are read; ``uploaded_by`` too (the username
    that the document's events name as their actor).
    """
    try:
        filename = sanitize_filename(received.filename)
        doc_type = upload_type(filename)
        sniff(received.path, doc_type, limits)
        existing = find_upload(engine, workspace.id, received.sha256)
        if existing is None:
            kept = duplicates.kept_copy(engine, workspace.id, received.sha256, origins=("file",))
            existing = None if kept is None else kept.document_id
        if existing is not None:
            return StoredUpload(existing, duplicate=True)
        target = stored_path(data_dir, workspace, received.sha256, doc_type)
        make_private_dir(target.parent)
        os.replace(received.path, target)  # same content, same name: a racing twin is harmless
    finally:
        received.path.unlink(missing_ok=True)
    now = utcnow()
    try:
        with engine.begin() as conn:
            document_id = conn.execute(
                insert(DocumentRow)
                .values(
                    workspace_id=workspace.id,
                    source_id=upload_source_id(workspace.name, received.sha256, filename),
                    origin="upload",
                    title=Path(filename).stem,
                    doc_type=doc_type,
                    size=received.size,
                    mtime_ns=0,
                    content_hash=received.sha256,
                    status="pending",
                    chunk_count=0,
                    doc_date=now,
                    created_at=now,
                    updated_at=now,
                )
                .returning(DocumentRow.id)
            ).scalar_one()
            job_id = queue.enqueue(
                conn,
                workspace.id,
                UPLOAD_JOB,
                document_id=document_id,
                payload={"ocr_mode": ocr_mode, "by": uploaded_by},
            )
    except IntegrityError:
        # A concurrent upload of the same content won the unique (workspace, hash) index.
        existing = find_upload(engine, workspace.id, received.sha256)
        if existing is None:
            raise Conflict("the upload clashes with another document; try again") from None
        return StoredUpload(existing, duplicate=True)
    return StoredUpload(int(document_id), duplicate=False, job_id=job_id)


def find_upload(engine: Engine, workspace_id: int, sha256: str) -> int | None:
    query = select(DocumentRow.id).where(
        DocumentRow.workspace_id == workspace_id,
        DocumentRow.origin == "upload",
        DocumentRow.content_hash == sha256,
    )
    with engine.connect() as conn:
        found = conn.execute(query).scalar()
    return None if found is None else int(found)


# -- processing -----------------------------------------------------------------------
def process_upload(
    indexer: Indexer, data_dir: Path, document_id: int, *, ocr_follows: bool = False
) -> IngestOutcome | None:
    """Parse, chunk, embed and index one uploaded document (a worker's job).

    Idempotent: a document already ``ready`` is left alone, so a job redone after a
    crash does its work once; ``None`` when the document is gone (deleted meanwhile).
    """
    engine = indexer.catalog.engine
    workspace = indexer.workspace
    with Session(engine, expire_on_commit=False) as session:
        document = session.get(DocumentRow, document_id)
    if document is None or document.workspace_id != workspace.id:
        return None
    if document.status == "deleting":
        return None
    if document.status == "ready":
        return IngestOutcome(document.source_id, "unchanged", chunks=document.chunk_count)
    set_status(engine, document_id, "indexing")
    assert document.content_hash is not None
    meta = DocumentMeta(
        source_id=document.source_id,
        doc_type=document.doc_type,
        title=document.title,
        size=document.size,
        mtime_ns=0,
        content_hash=document.content_hash,
        doc_date=as_utc(document.doc_date),
        origin="upload",
    )
    path = stored_path(data_dir, workspace, document.content_hash, document.doc_type)
    outcomes: list[IngestOutcome] = []
    item = IngestItem(
        meta,
        path=path,
        ocr_follows=ocr_follows,
        shown_name=duplicates.display_name(document.source_id),
    )
    indexer.index([item], outcomes.append)
    return outcomes[0] if outcomes else None


def set_status(
    engine: Engine,
    document_id: int,
    status: str,
    *,
    code: str | None = None,
    message: str | None = None,
) -> None:
    with engine.begin() as conn:
        moved = conn.execute(
            update(DocumentRow)
            .where(DocumentRow.id == document_id, DocumentRow.status != "deleting")
            .values(status=status, error_code=code, error=message, updated_at=utcnow())
        ).rowcount
        if moved and status == "failed":
            announce_documents(conn, [document_id], "document.failed")
