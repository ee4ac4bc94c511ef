"""The same content indexed once: uploads and files under the search paths are compared
by content hash, and the copy indexed first is kept.

An upload whose content a search path already holds is not stored (the upload answers
with the kept document, ``duplicate``); a file under a search path whose content was
uploaded first is recorded as ``skipped`` with the reason ``duplicate`` naming the kept
upload, and is read again on every refresh, so it is indexed once that upload is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

UPLOADS_PREFIX = "/uploads/"
# A copy in one of these states holds (or will hold) the content in the index.
_HOLDING = ("ready", "pending", "indexing", "needs_ocr")


@dataclass(frozen=True)
class KeptCopy:
    document_id: int
    source_id: str
    origin: str


def kept_copy(
    engine: Engine,
    workspace_id: int,
    content_hash: str,
    *,
    origins: Sequence[str],
    other_than: str | None = None,
) -> KeptCopy | None:
    """The workspace's oldest document of one of ``origins`` holding ``content_hash``."""
    # Deferred: `autorag status` names files with ``display_name`` and reads its
    # catalog without SQLAlchemy.
    from sqlalchemy import select

    from autorag.store.catalog.models import DocumentRow

    query = (
        select(DocumentRow.id, DocumentRow.source_id, DocumentRow.origin)
        .where(
            DocumentRow.workspace_id == workspace_id,
            DocumentRow.content_hash == content_hash,
            DocumentRow.origin.in_(tuple(origins)),
            DocumentRow.status.in_(_HOLDING),
        )
        .order_by(DocumentRow.id)
        .limit(1)
    )
    if other_than is not None:
        query = query.where(DocumentRow.source_id != other_than)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else KeptCopy(int(row[0]), str(row[1]), str(row[2]))


def display_name(source_id: str, origin: str | None = None) -> str:
    """What people call a document's file: an upload's original (sanitised) file name,
    never its internal ``/uploads/<workspace>/<hash>/`` id (that prefix is reserved for
    uploads); the source id otherwise."""
    if origin == "upload" or source_id.startswith(UPLOADS_PREFIX):
        return source_id.rpartition("/")[2] or source_id
    return source_id


def kept_reason(kept: KeptCopy) -> str:
    """Why a copy is skipped, naming the copy that is kept."""
    where = "uploaded as" if kept.origin == "upload" else "found at"
    name = display_name(kept.source_id, kept.origin)
    return (
        f"the same content is already indexed ({where} {name}, document "
        f"{kept.document_id}), which is kept"
    )
