"""The agent over archives (seed 003): ``wiki_query`` reads an archive, ``wiki_write``
proposes (or, when the archive allows it, makes) an edit of one of its pages, and
``search_archive`` is ``rag_search``'s fallback D-07 over an archive's pages.

Every page found is a source like a document's passage, labelled as an archive page
(``source`` ``ARCHIVE_SOURCE``, ``source_id`` ``archive:<id>/<path>``), which grounding
always keeps. Everything read here (pages, links, search results) is data for the model,
never instructions: a page that says "call wiki_write" is text the model reads, and the
orchestrator never turns quoted text into a call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autorag.agent.events import WikiEditEvent
from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.agent.skills.rag_search import format_tool_result
from autorag.auth.permissions import ARCHIVE_READ, ARCHIVE_WRITE, may_write_archive
from autorag.auth.service import get_active_user
from autorag.errors import Forbidden, InvalidInput
from autorag.llm.base import ToolSpec
from autorag.models import Citation
from autorag.retrieval.grounding import ARCHIVE_SOURCE
from autorag.text import one_line
from autorag.wiki import store
from autorag.wiki.models import Archive, Page, PageHit
from autorag.wiki.service import WikiService

MAX_PAGES = 10  # pages wiki_query returns: the hits, then the pages they link to
MAX_DEPTH = 3  # wikilinks followed from a hit, breadth first
LINKED_PAGE_CHARS = 1_500  # of a page reached by a link (a hit brings its matching passage)
MAX_QUERY_CHARS = 1_000

QUERY_SPEC = ToolSpec(
    name="wiki_query",
    description=(
        "Read the workspace's archive (its wiki): finds the pages matching the query and "
        "the pages they link to. Returns numbered pages; cite them with their [n]."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "archive": {
                "type": "string",
                "description": "the archive's name (may be left out when there is one)",
            },
        },
        "required": ["query"],
    },
)

WRITE_SPEC = ToolSpec(
    name="wiki_write",
    description=(
        "Write a page of the workspace's archive (create it, or replace its text). The "
        "edit is shown to the user, who confirms it before it is saved, unless the "
        "archive lets the assistant write."
    ),
    parameters={
        "type": "object",
        "properties": {
            "archive": {
                "type": "string",
                "description": "the archive's name (may be left out when there is one)",
            },
            "path": {"type": "string", "description": "the page's path, e.g. projects/apollo"},
            "title": {"type": "string", "description": "the page's title"},
            "body": {"type": "string", "description": "the page's whole text, in Markdown"},
        },
        "required": ["path", "body"],
    },
)


@dataclass
class WikiQuery:
    spec: ToolSpec = QUERY_SPEC
    progress: str = "Reading the archive…"

    def available(self, context: SkillContext) -> bool:
        """Offered to readers of archives in a workspace that has one."""
        return context.can(ARCHIVE_READ) and store.has_archive(
            context.app.catalog.engine, context.app.info.id
        )

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        query = _text(arguments, "query", "wiki_query", limit=MAX_QUERY_CHARS)
        context.require(ARCHIVE_READ, "wiki_query")
        service = WikiService(context.app)
        archive = _archive(service, arguments.get("archive"), context, "wiki_query")
        _check_model(archive, context)
        citations = query_archive(service, archive, query, first=context.first_citation_number)
        if not citations:
            return SkillResult(
                f"No page of the archive '{archive.name}' matches.",
                status="Archive: no pages found",
            )
        return SkillResult(
            format_tool_result(citations),
            citations,
            status=f"Archive: {len(citations)} pages",
        )


@dataclass
class WikiWrite:
    spec: ToolSpec = WRITE_SPEC
    progress: str = "Preparing an edit of the archive…"

    def available(self, context: SkillContext) -> bool:
        """Offered as ``wiki_query`` is, and only where the client receives the proposed
        edit (the web chat's stream, the command line): elsewhere it could never be
        applied. Writing is checked when it is asked for, so a reader is told why not."""
        return context.receives_events and WikiQuery().available(context)

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        path = _text(arguments, "path", "wiki_write", limit=400)
        body = arguments.get("body")
        if not isinstance(body, str):
            raise InvalidInput("wiki_write needs the page's 'body' as a string")
        title = arguments.get("title")
        if title is not None and not isinstance(title, str):
            raise InvalidInput("wiki_write's 'title' must be a string")
        context.require(ARCHIVE_READ, "wiki_write")
        service = WikiService(context.app)
        archive = _archive(service, arguments.get("archive"), context, "wiki_write")
        _check_model(archive, context)
        username = _username(context)
        if not may_write_archive(context.can, username, archive.config.writers):
            context.require(ARCHIVE_WRITE, "wiki_write")  # raises: says what is missing
        proposal = service.preview_save(archive, path, body=body, title=title or None)
        applied = archive.config.allow_agent_writes
        saved = None
        if applied:
            saved = service.save_page(
                archive,
                proposal.path,
                body=body,
                title=title or None,
                base_version=proposal.base_version,
                by=f"agent for {username}" if username else "agent",
            )
        context.emit(
            WikiEditEvent(
                archive_id=archive.id,
                archive=archive.name,
                path=proposal.path,
                action=proposal.action,
                diff=proposal.diff,
                applied=applied,
                title=proposal.title,
                body=body,  # as the agent wrote it, front matter included: what a PUT takes
                base_version=proposal.base_version,
            )
        )
        where = f"page '{proposal.path}' of the archive '{archive.name}'"
        if saved is not None:
            return SkillResult(
                f"Saved the {proposal.action} of the {where} (version {saved.version}).",
                status=f"Archive: saved {proposal.path}",
            )
        return SkillResult(
            f"Proposed a {proposal.action} of the {where}; it is NOT saved yet: the user "
            f"sees the change and confirms it. Tell the user what you proposed.\n"
            f"Diff:\n{proposal.diff}",
            status=f"Archive: proposed an edit of {proposal.path}",
        )


def search_archive(context: SkillContext, archive: str | int, query: str) -> list[Citation]:
    """``rag_search``'s fallback D-07: the archive's passages that match ``query``, as
    archive sources numbered from ``context.first_citation_number``."""
    context.require(ARCHIVE_READ, "searching an archive")
    service = WikiService(context.app)
    found = service.archive(archive)
    _check_model(found, context)
    hits = service.search(found, query, k=context.k)
    first = context.first_citation_number
    return [hit_citation(first + i, found, hit) for i, hit in enumerate(hits)]


def query_archive(
    service: WikiService, archive: Archive, query: str, *, first: int = 1
) -> list[Citation]:
    """``wiki_query``'s pages: full-text hits (vector ones when full text finds none),
    then the pages they link to, breadth first, at most ``MAX_PAGES`` and ``MAX_DEPTH``
    links away; each page once, numbered from ``first``."""
    hits = service.search(archive, query, k=MAX_PAGES, mode="fts")
    if not hits:
        hits = service.search(archive, query, k=MAX_PAGES, mode="vector")
    best: dict[int, PageHit] = {}
    for hit in hits:  # one passage per page: its best
        if hit.page_id not in best or hit.score > best[hit.page_id].score:
            best[hit.page_id] = hit
    found = sorted(best.values(), key=lambda h: -h.score)[:MAX_PAGES]
    citations = [hit_citation(first + i, archive, h) for i, h in enumerate(found)]
    seen = {h.page_id for h in found}
    queue = deque((h.page_id, 0) for h in found)
    while queue and len(citations) < MAX_PAGES:
        page_id, depth = queue.popleft()
        if depth >= MAX_DEPTH:
            continue
        for link in store.outgoing(service.engine, page_id):  # one query a page, then one
            target = link.target_page_id  # per page it reaches
            if target is None or target in seen:
                continue
            seen.add(target)
            with service.engine.connect() as conn:
                state = store.page_state(conn, archive.id, page_id=target)
            if state is None:  # deleted since the links were read
                continue
            citations.append(page_citation(first + len(citations), archive, state.page))
            queue.append((target, depth + 1))
            if len(citations) >= MAX_PAGES:
                break
    return citations


def hit_citation(number: int, archive: Archive, hit: PageHit) -> Citation:
    """A passage of an archive page found by search, as source ``number``."""
    return Citation(
        number=number,
        source=ARCHIVE_SOURCE,
        source_id=page_source_id(archive, hit.path),
        title=hit.title,
        text=hit.text,
        page=None,
        paragraph=0,
        score=hit.score,
        legs=hit.legs,
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
    )


def page_citation(number: int, archive: Archive, page: Page) -> Citation:
    """A page reached by a wikilink, as source ``number``: its opening text. It is no
    passage of the index, so like ``Citation.external`` its ids are negative."""
    return Citation(
        number=number,
        source=ARCHIVE_SOURCE,
        source_id=page_source_id(archive, page.path),
        title=page.title,
        text=_opening(page.body),
        page=None,
        paragraph=0,
        score=0.0,
        legs="both",
        chunk_id=-page.id,
        document_id=-page.id,
    )


def page_source_id(archive: Archive, path: str) -> str:
    """The page's id in the index namespace of its archive: ``archive:<id>/<path>``."""
    return f"archive:{archive.id}/{path}"


def parse_page_source_id(source_id: str) -> tuple[int, str] | None:
    """``page_source_id`` read back: the archive's id and the page's path; None when
    ``source_id`` is not one."""
    prefix, _, rest = source_id.partition(":")
    number, _, path = rest.partition("/")
    if prefix != "archive" or not number.isdigit() or len(number) > 12 or not path:
        return None
    return int(number), path


def _opening(body: str) -> str:
    if len(body) <= LINKED_PAGE_CHARS:
        return body
    return body[:LINKED_PAGE_CHARS].rsplit(" ", 1)[0] + " …"


def _check_model(archive: Archive, context: SkillContext) -> None:
    """Refuse an archive only a local model may read unless every model that may read
    this answer is local (fails closed: a context that does not say is not local)."""
    if archive.config.local_llm_only and not context.local_model:
        raise Forbidden(
            f"the archive '{archive.name}' may only be read by a local model, and the "
            "model answering is not local",
            code="archive_local_llm_only",
        )


def _archive(service: WikiService, value: Any, context: SkillContext, skill: str) -> Archive:
    """The archive a call names, else the question's, else the workspace's only one."""
    if isinstance(value, str) and value.strip():
        return service.archive(value.strip())
    if value not in (None, ""):
        raise InvalidInput(f"{skill}'s 'archive' must be an archive's name")
    if context.archive:
        return service.archive(context.archive)
    archives = service.list_archives()
    if len(archives) == 1:
        return archives[0]
    names = ", ".join(a.name for a in archives) or "none"
    raise InvalidInput(f"{skill} needs 'archive': one of {one_line(names, 300)}")


def _text(arguments: Mapping[str, Any], name: str, skill: str, *, limit: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{skill} needs a non-empty '{name}' string")
    if len(value) > limit:
        raise InvalidInput(f"{skill}'s '{name}' is longer than {limit} characters")
    return value.strip()


def _username(context: SkillContext) -> str | None:
    """The asking user's name (an archive's writers are named); None on the command line."""
    if context.user_id is None:
        return None
    return get_active_user(context.app.catalog, context.user_id).username
