"""Ingest flow: item -> parse -> chunk -> embed (cached) -> catalog + vectors -> ready.

Crash safety: a batch is written to the catalog as ``indexing`` (invisible to search),
then its vectors are replaced, then it is marked ``ready``. A process killed anywhere in
between leaves documents that search does not show and that the next refresh redoes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from autorag.config import IngestSettings
from autorag.dlp.service import DlpService
from autorag.embeddings.base import EmbeddingProvider
from autorag.ingest import duplicates
from autorag.ingest.chunker import chunk_document
from autorag.ingest.parsers import parse_file
from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.readiness import SKIPPED_REASONS
from autorag.models import Chunk, ParsedDocument
from autorag.store.catalog.repository import (
    Catalog,
    DocumentMeta,
    StagedDocument,
    WorkspaceInfo,
)
from autorag.store.vectors.base import VectorRecord, VectorStore
from autorag.text.language import detect_language
from autorag.workspace_settings import read_settings

OutcomeStatus = Literal["ready", "failed", "skipped", "needs_ocr", "unchanged", "deleted"]

# What a file keeps while its bytes are the same: its text indexed, or its scanned pages
# waiting for OCR or read by it (reviewed, rejected…). Parsing them again changes nothing.
_KEPT_ON_SAME_CONTENT = frozenset({"ready", "pending", "needs_ocr"})


@dataclass(frozen=True)
class IngestItem:
    """Something to index: a file to parse, or a record whose text is already known."""

    meta: DocumentMeta
    path: Path | None = None
    parsed: ParsedDocument | None = None
    # Content hash and status recorded by the last index, to skip unchanged content.
    known_hash: str | None = None
    known_status: str | None = None
    known_document_id: int | None = None
    # OCR is queued next for pages without text: a scan then waits as pending, not failed.
    ocr_follows: bool = False
    # The name people know the file by, when ``path`` is not it (an upload is stored under
    # its hash): reasons name this instead.
    shown_name: str | None = None


@dataclass(frozen=True)
class IngestOutcome:
    source_id: str
    status: OutcomeStatus
    document_id: int | None = None  # the catalog row written, when one was
    chunks: int = 0
    error_code: str | None = None
    error: str | None = None
    # Pages without a usable text layer, for OCR to read (autorag.ocr).
    ocr_pages: tuple[int, ...] = ()


@dataclass
class _Prepared:
    meta: DocumentMeta
    chunks: list[Chunk]
    ocr_pages: tuple[int, ...] = ()


OutcomeHook = Callable[[IngestOutcome], None]
Redaction = Callable[[ParsedDocument], ParsedDocument]


def file_hash(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _shown(message: str, item: IngestItem) -> str:
    if item.path is None or item.shown_name is None:
        return message
    return message.replace(item.path.name, item.shown_name)


def embedding_text(title: str, chunk_text: str) -> str:
    """What gets embedded: the title gives every chunk its document's context."""
    return f"{title}\n\n{chunk_text}" if title and not chunk_text.startswith(title) else chunk_text


class Indexer:
    def __init__(
        self,
        catalog: Catalog,
        workspace: WorkspaceInfo,
        vectors: Callable[[], VectorStore],
        embedder: Callable[[], EmbeddingProvider],
        settings: IngestSettings,
        *,
        settings_of: WorkspaceInfo | None = None,
    ) -> None:
        """``settings_of``: the workspace whose settings (``redact_on_ingest``) apply,
        when not ``workspace`` itself (an archive's hidden index: its workspace's)."""
        self.catalog = catalog
        self.workspace = workspace
        self.settings_of = settings_of or workspace
        # Opened on first use: a refresh with nothing to do must not pay for loading
        # the vector store or the embedding model.
        self._vectors = vectors
        self._embedder = embedder
        self.settings = settings
        self.limits = IngestLimits(
            max_file_bytes=int(settings.max_file_mb * 1024**2),
            max_unzipped_bytes=int(settings.max_unzipped_mb * 1024**2),
        )

    @property
    def vectors(self) -> VectorStore:
        return self._vectors()

    @property
    def embedder(self) -> EmbeddingProvider:
        return self._embedder()

    def index(self, items: Iterable[IngestItem], on_outcome: OutcomeHook | None = None) -> None:
        """Index items in batches of about ``batch_chunks`` chunks."""
        report = on_outcome or (lambda _outcome: None)
        redact = self._ingest_redaction()
        batch: list[_Prepared] = []
        batch_chunks = 0
        for item in items:
            prepared = self._prepare(item, redact)
            if isinstance(prepared, IngestOutcome):
                report(prepared)
                continue
            batch.append(prepared)
            batch_chunks += len(prepared.chunks)
            if batch_chunks >= self.settings.batch_chunks:
                self._write(batch, report)
                batch, batch_chunks = [], 0
        if batch:
            self._write(batch, report)

    def remove(self, document_ids: Sequence[int]) -> None:
        """Delete documents from every store; ``deleting`` marks unfinished removals."""
        if not document_ids:
            return
        self.catalog.mark_deleting(document_ids)
        self.vectors.delete_documents(document_ids)
        self.catalog.delete_documents(document_ids)

    def _ingest_redaction(self) -> Redaction | None:
        """The workspace's ``redact_on_ingest``: chunks are then stored and embedded with
        DLP matches replaced, so no store downstream ever holds them."""
        if not read_settings(self.catalog, self.settings_of).redact_on_ingest:
            return None
        return DlpService(self.catalog).redact_document

    def _prepare(
        self, item: IngestItem, redact: Redaction | None = None
    ) -> _Prepared | IngestOutcome:
        meta = item.meta
        try:
            if item.path is not None:
                meta = replace(meta, content_hash=file_hash(item.path))
                if (
                    item.known_document_id is not None
                    and item.known_status in _KEPT_ON_SAME_CONTENT
                    and item.known_hash == meta.content_hash
                ):
                    self.catalog.touch(item.known_document_id, meta.size, meta.mtime_ns)
                    return IngestOutcome(meta.source_id, "unchanged")
                kept = self._kept_copy(meta)
                if kept is not None:
                    return self._unindexed(meta, "skipped", "duplicate", kept)
                parsed = parse_file(item.path, limits=self.limits)
            elif item.parsed is not None:
                parsed = item.parsed
            else:
                raise ValueError("an IngestItem needs a path or parsed text")
        except ParseError as exc:
            status: Literal["failed", "skipped"] = (
                "skipped" if exc.reason in SKIPPED_REASONS else "failed"
            )
            return self._unindexed(meta, status, exc.reason, _shown(exc.message, item))
        except OSError as exc:
            return self._unindexed(meta, "failed", "unreadable", f"cannot read file: {exc}")
        meta = replace(
            meta,
            doc_type=parsed.doc_type,
            title=parsed.title or meta.title,
            pages=parsed.pages,
            # The document's own date when its metadata has one; else the file's mtime
            # (an upload's arrival) that the caller put there.
            doc_date=parsed.date or meta.doc_date,
        )
        if parsed.needs_ocr:
            reason = "no usable text layer (under 100 characters); OCR needed"
            if item.ocr_follows:
                outcome = self._unindexed(
                    meta, "needs_ocr", "ocr_queued", "waiting for OCR", stored="pending"
                )
            else:
                outcome = self._unindexed(meta, "needs_ocr", "needs_ocr", reason)
            return replace(outcome, ocr_pages=parsed.ocr_pages)
        if redact is not None:
            parsed = redact(parsed)
        chunks = chunk_document(
            parsed, chunk_size=self.settings.chunk_size, overlap=self.settings.chunk_overlap
        )
        return _Prepared(meta, chunks, parsed.ocr_pages)

    def _kept_copy(self, meta: DocumentMeta) -> str | None:
        """Why a file under a search path is not indexed: the same content was uploaded
        first (that copy is kept). Uploads check the other way round when they arrive."""
        if meta.origin != "file" or meta.content_hash is None:
            return None
        kept = duplicates.kept_copy(
            self.catalog.engine,
            self.workspace.id,
            meta.content_hash,
            origins=("upload",),
            other_than=meta.source_id,
        )
        return None if kept is None else duplicates.kept_reason(kept)

    def record_failure(self, meta: DocumentMeta, code: str, reason: str) -> IngestOutcome:
        """Record a file that was found but not read (a link not followed, a name that
        cannot carry an id...), so that it is listed with its reason like any failure."""
        return self._unindexed(meta, "failed", code, reason)

    def _unindexed(
        self,
        meta: DocumentMeta,
        status: Literal["failed", "skipped", "needs_ocr"],
        code: str,
        reason: str,
        *,
        stored: str | None = None,
    ) -> IngestOutcome:
        document_id = self.catalog.record_unindexed(
            self.workspace.id, meta, stored or status, code, reason
        )
        self.vectors.delete_documents([document_id])
        return IngestOutcome(meta.source_id, status, document_id, error_code=code, error=reason)

    def _language(self, chunks: Sequence[Chunk]) -> str:
        """The document's language, from the start of its text (or as configured)."""
        if self.settings.language != "auto":
            return self.settings.language
        sample = " ".join(c.text for c in chunks[:4])
        return detect_language(sample, default=self.settings.default_language)

    def _write(self, batch: list[_Prepared], report: OutcomeHook) -> None:
        texts = [embedding_text(p.meta.title, c.text) for p in batch for c in p.chunks]
        vectors = self.embedder.embed(texts)
        written = self.catalog.stage_documents(
            self.workspace.id,
            [StagedDocument(p.meta, p.chunks, self._language(p.chunks)) for p in batch],
        )
        records: list[VectorRecord] = []
        row = 0
        for prepared in batch:
            document_id, chunk_ids = written[prepared.meta.source_id]
            for chunk_id in chunk_ids:
                records.append(
                    VectorRecord(
                        chunk_id,
                        document_id,
                        prepared.meta.doc_type,
                        prepared.meta.doc_date,
                        vectors[row],
                    )
                )
                row += 1
        document_ids = [written[p.meta.source_id][0] for p in batch]
        self.vectors.delete_documents(document_ids)
        self.vectors.add(records)
        self.catalog.mark_ready(document_ids, self.embedder.model_id, announce=True)
        for prepared, document_id in zip(batch, document_ids, strict=True):
            report(
                IngestOutcome(
                    prepared.meta.source_id,
                    "ready",
                    document_id,
                    chunks=len(prepared.chunks),
                    ocr_pages=prepared.ocr_pages,
                )
            )
