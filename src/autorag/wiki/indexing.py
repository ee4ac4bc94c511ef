"""An archive's search index: its pages as documents of a hidden catalog workspace.

Each archive has a workspace row named ``archive:<archive id>`` of kind ``archive``
(never listed, never looked up by name as a workspace), with the stores any workspace
has: documents and chunks in the catalog, full-text rows, a vector table. Each page is
one document there (origin ``archive``, source id ``archive:<id>/<path>``, type ``md``,
the page's title), chunked 800/100 whatever ``ingest.chunk_size`` says and embedded
through the normal ``Indexer`` with the app's model and cache, so a save re-embeds only
the chunks whose text changed. The front matter is not indexed; the title is (in every
chunk's embedded text and full-text title).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import get_args

from autorag.context import AppContext
from autorag.errors import AutoragError, InvalidInput
from autorag.ingest.documents import get_document
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome
from autorag.models import ParsedDocument, Segment
from autorag.retrieval.hybrid import SearchMode, SearchRequest
from autorag.store.catalog.repository import DocumentMeta, WorkspaceInfo
from autorag.wiki import store
from autorag.wiki.models import Archive, Page, PageHit

NAMESPACE_KIND = "archive"
ORIGIN = "archive"
DOC_TYPE = "md"
CHUNK_SIZE = 800
CHUNK_OVERLAP = 100
MAX_K = 100
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)

# One writer at a time per namespace: two saves in one archive must not interleave
# their vector table writes (LanceDB and Qdrant's local mode take one writer).
_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()
# Pages are saved one at a time, each a small write (LanceDB: a fragment, a deletion
# file): the table is compacted after this many, as a refresh does after its batches.
COMPACT_EVERY = 100
_WRITES: dict[str, int] = {}  # vector table -> pages written since its last compaction


def namespace_name(archive_id: int) -> str:
    """The hidden workspace row of an archive's index."""
    return f"archive:{archive_id}"


def page_source_id(archive: Archive, path: str) -> str:
    return f"{namespace_name(archive.id)}/{path}"


class PageIndex:
    """Puts pages in, takes them out, drops an archive's whole index, searches it."""

    def __init__(self, app: AppContext) -> None:
        self._app = app

    # -- writes ---------------------------------------------------------------------
    def put(self, archive: Archive, page: Page) -> int:
        """(Re)index one page; its catalog document id. A page whose path changed is a
        new document (the source id holds the path): the caller removes the old one."""
        return self.put_many(archive, [page])[page.id]

    def put_many(self, archive: Archive, pages: Sequence[Page]) -> dict[int, int]:
        """``put`` for many pages at once (embedded and written in batches): page id to
        document id."""
        if not pages:
            return {}
        scoped = self._scoped(self._app.catalog.ensure_namespace(_name(archive), NAMESPACE_KIND))
        items = {page_source_id(archive, page.path): page for page in pages}
        ingest = [_item(archive, page) for page in items.values()]
        outcomes: list[IngestOutcome] = []
        with _write_lock(scoped.info):
            _indexer(scoped, self._app.info).index(ingest, outcomes.append)
            _compact_now_and_then(scoped, len(items))
        indexed: dict[int, int] = {}
        for outcome in outcomes:
            page = items[outcome.source_id]
            if outcome.status != "ready" or outcome.document_id is None:
                raise AutoragError(
                    f"page {page.path!r} could not be indexed: {outcome.error or outcome.status}",
                    code="page_not_indexed",
                )
            indexed[page.id] = outcome.document_id
        return indexed

    def remove(self, archive: Archive, document_id: int) -> None:
        """Take one page's document out of the archive's index (no-op when gone)."""
        info = self._namespace(archive)
        if info is None:
            return
        try:
            get_document(self._app.catalog, info, document_id)  # only this namespace's
        except AutoragError:
            return
        scoped = self._scoped(info)
        with _write_lock(info):
            _indexer(scoped, self._app.info).remove([document_id])

    def drop(self, archive: Archive) -> None:
        """The whole namespace: documents, chunks, full-text rows, the vector table."""
        info = self._namespace(archive)
        if info is None:
            return
        scoped = self._scoped(info)
        with _write_lock(info):
            _WRITES.pop(info.vector_table, None)
            self._app.catalog.delete_workspace_rows(info.id)
            # Recreate-then-drop opens the table whatever vector size it holds.
            scoped.open_vectors(recreate=True).drop()

    # -- reads ----------------------------------------------------------------------
    def search(self, archive: Archive, query: str, *, k: int, mode: str) -> list[PageHit]:
        """The pages that best match ``query`` (hybrid: vector and full-text legs fused
        by RRF, as documents are), the best passage of each."""
        if mode not in SEARCH_MODES:
            raise InvalidInput(
                f"unknown search mode {mode!r}: use one of {', '.join(SEARCH_MODES)}",
                code="invalid_search_mode",
            )
        if not 1 <= k <= MAX_K:
            raise InvalidInput(f"k must be between 1 and {MAX_K}", code="invalid_k")
        if not query.strip():
            raise InvalidInput("the search query is empty", code="empty_query")
        info = self._namespace(archive)
        if info is None:  # nothing was ever saved in it
            return []
        request = SearchRequest(query, k=k, mode=mode, per_document=True)  # type: ignore[arg-type]
        hits = self._scoped(info).searcher.search(request).hits
        prefix = page_source_id(archive, "")
        paths = [hit.source_id.removeprefix(prefix) for hit in hits]
        pages = store.pages_by_paths(self._app.catalog.engine, archive.id, paths)
        found: list[PageHit] = []
        for hit, path in zip(hits, paths, strict=True):
            page = pages.get(path)
            if page is None:  # deleted or renamed since the search began
                continue
            found.append(
                PageHit(
                    page_id=page.id,
                    path=page.path,
                    title=page.title,
                    text=hit.text,
                    score=hit.score,
                    chunk_id=hit.chunk_id,
                    document_id=hit.document_id,
                    legs=hit.legs,
                )
            )
        return found

    # -- the namespace ----------------------------------------------------------------
    def _namespace(self, archive: Archive) -> WorkspaceInfo | None:
        return self._app.catalog.find_namespace(_name(archive), NAMESPACE_KIND)

    def _scoped(self, info: WorkspaceInfo) -> AppContext:
        return self._app.for_workspace(info)


def _name(archive: Archive) -> str:
    return namespace_name(archive.id)


def _item(archive: Archive, page: Page) -> IngestItem:
    """A page as the indexer takes it: its title and body (never its front matter)."""
    text = page.body if page.body.strip() else page.title  # an empty page: found by title
    body = text.encode()
    meta = DocumentMeta(
        source_id=page_source_id(archive, page.path),
        doc_type=DOC_TYPE,
        title=page.title,
        size=len(body),
        mtime_ns=int(page.updated_at.timestamp() * 1e9),
        content_hash=hashlib.sha256(page.title.encode() + b"\0" + body).hexdigest(),
        doc_date=page.updated_at,
        origin=ORIGIN,
    )
    parsed = ParsedDocument([Segment(text)], title=page.title, doc_type=DOC_TYPE)
    return IngestItem(meta, parsed=parsed)


def _indexer(scoped: AppContext, workspace: WorkspaceInfo) -> Indexer:
    """The namespace's indexer with the archive's chunk sizes (cheap to build: the
    vector table and the model come from the context, opened once); ``workspace``'s
    settings apply (its ``redact_on_ingest``: the hidden row has no settings of its own)."""
    settings = scoped.settings.ingest.model_copy(
        update={"chunk_size": CHUNK_SIZE, "chunk_overlap": CHUNK_OVERLAP}
    )
    return Indexer(
        scoped.catalog,
        scoped.info,
        vectors=lambda: scoped.vectors,
        embedder=lambda: scoped.embedder,
        settings=settings,
        settings_of=workspace,
    )


def _compact_now_and_then(scoped: AppContext, written: int) -> None:
    """Compact the namespace's vector table every ``COMPACT_EVERY`` pages written by
    this process (the caller holds the namespace's write lock)."""
    table = scoped.info.vector_table
    count = _WRITES.get(table, 0) + written
    if count < COMPACT_EVERY:
        _WRITES[table] = count
        return
    _WRITES[table] = 0
    scoped.vectors.optimize()


def _write_lock(info: WorkspaceInfo) -> threading.Lock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(info.vector_table, threading.Lock())
