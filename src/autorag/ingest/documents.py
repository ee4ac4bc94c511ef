"""Documents as the API shows them: four statuses, pages of a listing, removal.

The catalog keeps finer states than a client needs; ``api_status`` folds them into
``pending | processing | ready | failed | skipped`` (skipped: not read by design, such as
an empty file or a duplicate of content already indexed; the reason says which). Every
read is scoped to one workspace: an id from another workspace is simply not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from autorag.errors import NotFound
from autorag.ingest.pipeline import Indexer
from autorag.ingest.uploads import stored_path
from autorag.store.catalog.models import DocumentRow
from autorag.store.catalog.repository import Catalog, WorkspaceInfo

ApiStatus = Literal["pending", "processing", "ready", "failed", "skipped"]
API_STATUSES: tuple[ApiStatus, ...] = ("pending", "processing", "ready", "failed", "skipped")
# Catalog states behind each API status; ``deleting`` documents are already gone.
_STORED: dict[ApiStatus, tuple[str, ...]] = {
    "pending": ("pending",),
    "processing": ("indexing",),
    "ready": ("ready",),
    "failed": ("failed", "needs_ocr"),
    "skipped": ("skipped",),
}
_API: dict[str, ApiStatus] = {s: api for api, stored in _STORED.items() for s in stored}


def api_status(stored: str) -> ApiStatus:
    return _API.get(stored, "processing")


@dataclass(frozen=True)
class DocumentPage:
    items: list[DocumentRow]
    total: int


def list_documents(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    *,
    status: ApiStatus | None = None,
    doc_type: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> DocumentPage:
    """Newest first, filtered by API status and type, with the total before paging."""
    where = [
        DocumentRow.workspace_id == workspace.id,
        DocumentRow.status != "deleting",
    ]
    if status is not None:
        where.append(DocumentRow.status.in_(_STORED[status]))
    if doc_type:
        where.append(DocumentRow.doc_type == doc_type)
    query = select(DocumentRow).where(*where).order_by(DocumentRow.id.desc())
    with Session(catalog.engine, expire_on_commit=False) as session:
        total = session.scalar(select(func.count(DocumentRow.id)).where(*where)) or 0
        items = list(session.scalars(query.limit(limit).offset(offset)))
    return DocumentPage(items, int(total))


def get_document(catalog: Catalog, workspace: WorkspaceInfo, document_id: int) -> DocumentRow:
    """The workspace's document ``document_id``; ``NotFound`` for any other workspace's."""
    query = select(DocumentRow).where(
        DocumentRow.id == document_id,
        DocumentRow.workspace_id == workspace.id,
        DocumentRow.status != "deleting",
    )
    with Session(catalog.engine, expire_on_commit=False) as session:
        document = session.scalars(query).first()
    if document is None:
        raise NotFound(f"no document {document_id} in this workspace")
    return document


def delete_document(indexer: Indexer, data_dir: Path, document: DocumentRow) -> None:
    """Remove a document from the catalog, full-text index, vectors and upload store."""
    indexer.remove([document.id])
    if document.origin == "upload" and document.content_hash:
        stored_path(data_dir, indexer.workspace, document.content_hash, document.doc_type).unlink(
            missing_ok=True
        )
