"""The tools' work, on the services the API uses (never over HTTP): hybrid search, the
chat service, the documents listing and reading, the archives' ``wiki_query``.

Each function checks the caller's permission in the workspace first (``McpCall``),
and redacts what it returns as the API route of the same data does (DLP).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from autorag.agent.events import ignore
from autorag.chat.service import ChatTurn, ChatUser
from autorag.context import AppContext
from autorag.errors import Forbidden, InvalidInput, NotFound
from autorag.ingest import documents as docs
from autorag.ingest import reading
from autorag.ingest.duplicates import display_name
from autorag.mcp_server.access import McpCall
from autorag.mcp_server.models import (
    Answer,
    Diagnostic,
    Document,
    DocumentList,
    DocumentText,
    Hit,
    SearchResult,
    Source,
    WikiPage,
    WikiResult,
)
from autorag.models import Citation
from autorag.retrieval.filters import build_filters
from autorag.retrieval.grounding import is_archive_page
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.models import DocumentRow
from autorag.text import one_line
from autorag.times import as_utc
from autorag.wiki.models import Archive
from autorag.wiki.service import WikiService
from autorag.wiki.skills import parse_page_source_id, query_archive
from autorag.wiki.store import archive_names

PASSAGE_CHARS = 2_000  # of a passage sent with a hit or a source
SEARCH_READ, CHAT_USE, DOCUMENTS_READ, ARCHIVE_READ = (
    "search:read",
    "chat:use",
    "documents:read",
    "archive:read",
)


def search(
    call: McpCall,
    query: str,
    workspace: str | None = None,
    *,
    k: int = 8,
    document_types: Sequence[str] = (),
    date_from: str | None = None,
    date_to: str | None = None,
) -> SearchResult:
    app = call.workspace(workspace, SEARCH_READ)
    filters = build_filters(document_types, date_from, date_to)
    response = app.searcher.search(SearchRequest(query, k=k, filters=filters))
    # Redacted whole, then cut: a secret cut in half would no longer be recognised.
    scanned = call.dlp(app, "search").scan_many([h.text for h in response.hits])
    hits = [
        Hit(
            sourceId=h.source_id,
            name=display_name(h.source_id),
            title=h.title,
            type=h.doc_type,
            documentId=h.document_id,
            chunkId=h.chunk_id,
            page=h.page,
            paragraph=h.paragraph,
            score=h.score,
            text=_cut(s.redacted_text),
            redacted=s.has_match,
        )
        for h, s in zip(response.hits, scanned, strict=True)
    ]
    diagnostics = [Diagnostic(code=d.code, message=d.message, severity=d.severity)
                   for d in response.diagnostics]  # fmt: skip
    return SearchResult(workspace=app.info.name, hits=hits, diagnostics=diagnostics)


def ask(
    call: McpCall,
    question: str,
    workspace: str | None = None,
    *,
    cancel: threading.Event | None = None,
) -> Answer:
    """An answer from the chat service, as the chat API gives it: DLP on the question
    and the answer, sources numbered as the answer cites them. Not kept as a chat.
    ``cancel`` set: the answer stops (the client went away)."""
    app = call.workspace(workspace, CHAT_USE)
    user = call.user
    chat_user = ChatUser(user.user_id, user.custom_instructions, user.caller)
    # No events reach an MCP client: a proposed page edit could never be applied.
    turn = ChatTurn(question, store=False, receives_events=False)
    service = call.services.chat
    prepared = service.prepare(app, turn, user=chat_user, dlp=call.dlp(app, "chat"))
    outcome = prepared.run(ignore, cancel)
    result = outcome.result
    return Answer(
        workspace=app.info.name,
        answer=result.text,
        sources=_sources(app, result.citations),
        modelUsed=result.model_used,
        abortReason=result.abort_reason,
        dlpWarning=outcome.dlp_warning,
    )


def list_documents(
    call: McpCall,
    workspace: str | None = None,
    *,
    status: docs.ApiStatus | None = None,
    doc_type: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> DocumentList:
    app = call.workspace(workspace, DOCUMENTS_READ)
    page = docs.list_documents(
        app.catalog, app.info, status=status, doc_type=doc_type, limit=limit, offset=offset
    )
    return DocumentList(
        workspace=app.info.name,
        items=[_document(row) for row in page.items],
        total=page.total,
        limit=limit,
        offset=offset,
    )


def get_document(
    call: McpCall,
    workspace: str | None = None,
    *,
    document_id: int | None = None,
    source_id: str | None = None,
    page: int | None = None,
    chunk_id: int | None = None,
) -> DocumentText:
    """One page (or section) of a document's text, found by id or canonical source id;
    with ``chunk_id`` the page holding that passage."""
    app = call.workspace(workspace, DOCUMENTS_READ)
    if (document_id is None) == (source_id is None):
        raise InvalidInput("give exactly one of documentId and sourceId")
    if document_id is None:
        assert source_id is not None
        document_id = _by_source_id(app, source_id)
    read = reading.read_page(
        app.catalog, app.info, document_id, page=page, chunk_id=chunk_id,
        dlp=call.dlp(app, "documents"),
    )  # fmt: skip
    return DocumentText(
        workspace=app.info.name,
        document=_document(read.document),
        paged=read.paged,
        pageCount=read.page_count,
        page=read.number,
        text=read.text,
        redacted=read.redacted,
    )


def wiki_query(
    call: McpCall, query: str, workspace: str | None = None, *, archive: str | None = None
) -> WikiResult:
    """The archive's pages matching ``query`` and those they link to (the agent's own
    ``wiki_query``), their text redacted as documents' are."""
    app = call.workspace(workspace, ARCHIVE_READ)
    service = WikiService(app)
    found = _archive(service, archive)
    if found.config.local_llm_only:  # fails closed: nothing says the client's model is local
        raise Forbidden(
            f"the archive '{found.name}' may only be read by a local model; an MCP client's"
            " model is not known to be one",
            code="archive_local_llm_only",
        )
    citations = query_archive(service, found, query)
    scanned = call.dlp(app, "archive").scan_many([c.text for c in citations])
    pages = [
        WikiPage(
            number=c.number,
            sourceId=c.source_id,
            path=_page_path(c.source_id),
            title=c.title,
            text=_cut(s.redacted_text),
            score=c.score,
            redacted=s.has_match,
        )
        for c, s in zip(citations, scanned, strict=True)
    ]
    return WikiResult(workspace=app.info.name, archive=found.name, pages=pages)


# -- helpers ------------------------------------------------------------------------------
def _cut(text: str) -> str:
    return text if len(text) <= PASSAGE_CHARS else text[: PASSAGE_CHARS - 1] + "…"


def _document(row: DocumentRow) -> Document:
    return Document(
        id=row.id,
        sourceId=row.source_id,
        name=display_name(row.source_id, row.origin),
        title=row.title,
        type=row.doc_type,
        origin=row.origin,
        status=docs.api_status(row.status),
        pages=row.pages,
        chunks=row.chunk_count,
        size=row.size,
        documentDate=as_utc(row.doc_date).isoformat(),
    )


def _by_source_id(app: AppContext, source_id: str) -> int:
    query = select(DocumentRow.id).where(
        DocumentRow.workspace_id == app.info.id,
        DocumentRow.source_id == source_id,
        DocumentRow.status != "deleting",
    )
    with Session(app.catalog.engine) as session:
        found = session.scalars(query).first()
    if found is None:
        raise NotFound(f"no document {one_line(source_id, 200)!r} in this workspace")
    return found


def _archive(service: WikiService, name: str | None) -> Archive:
    """The archive named, else the workspace's only one."""
    if name and name.strip():
        return service.archive(name.strip())
    archives = service.list_archives()
    if len(archives) == 1:
        return archives[0]
    if not archives:
        raise NotFound("this workspace has no archive")
    names = ", ".join(a.name for a in archives)
    raise InvalidInput(f"name the archive: one of {one_line(names, 300)}")


def _page_path(source_id: str) -> str:
    parsed = parse_page_source_id(source_id)
    return parsed[1] if parsed else ""


def _sources(app: AppContext, citations: Sequence[Citation]) -> list[Source]:
    """The answer's sources as the chat API numbers them; an archive page names its
    archive and path, and no document of this workspace."""
    pages = {c.number: parse_page_source_id(c.source_id) for c in citations if is_archive_page(c)}
    ids = [p[0] for p in pages.values() if p is not None]
    names = archive_names(app.catalog.engine, app.info.id, ids) if ids else {}
    sources = []
    for c in citations:
        page = pages.get(c.number)
        archive = names.get(page[0]) if page is not None else None
        sources.append(
            Source(
                number=c.number,
                sourceId=c.source_id,
                title=c.title,
                text=_cut(c.text),
                page=c.page,
                paragraph=c.paragraph,
                score=c.score,
                documentId=0 if is_archive_page(c) else c.document_id,
                chunkId=0 if is_archive_page(c) else c.chunk_id,
                archive=archive,
                pagePath=page[1] if page is not None and archive is not None else None,
                cited=c.cited,
            )
        )
    return sources
