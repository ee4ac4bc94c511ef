"""``rag_search``: the workspace's hybrid search, as a skill.

Fallback D-07 (seed 003): when the workspace's documents give nothing and an archive is
named (the call's ``archiveId``, else the archive the question is about), the same query
runs over that archive's pages and they come back labelled as archive pages. The agent
knows no archive: the search over one is injected (``ArchiveSearch``, the wiki's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.errors import InvalidInput
from autorag.ingest.reading import section_heading
from autorag.llm.base import ToolSpec
from autorag.models import Citation, SearchFilters, SearchHit
from autorag.retrieval.filters import DOCUMENT_TYPES, build_filters
from autorag.retrieval.hybrid import SearchMode, SearchRequest

MATCH_LABELS = {"both": "semantic+keyword", "vector": "vector", "fts": "fts"}
NO_RESULTS = "No matching passages were found in the workspace's documents."
NO_ARCHIVE_RESULTS = "No matching passages were found in the documents or in the archive."

SPEC = ToolSpec(
    name="rag_search",
    description=(
        "Search the workspace's documents (hybrid: semantic + keyword). Returns numbered "
        "passages; cite them in the answer with their [n]."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "documentTypes": {
                "type": "array",
                "items": {"type": "string", "enum": sorted(DOCUMENT_TYPES)},
                "description": "only these file types",
            },
            "dateFrom": {"type": "string", "description": "ISO date: documents from"},
            "dateTo": {"type": "string", "description": "ISO date: documents up to (inclusive)"},
            "archiveId": {
                "type": "string",
                "description": (
                    "an archive of the workspace (its name or id): its pages are searched "
                    "when the documents have nothing"
                ),
            },
        },
        "required": ["query"],
    },
)


class ArchiveSearch(Protocol):
    """The passages of an archive's pages that match ``query``, as sources numbered from
    ``context.first_citation_number``; ``archive`` is its name, or its id as given."""

    def __call__(self, context: SkillContext, archive: str | int, query: str) -> list[Citation]: ...


@dataclass
class RagSearch:
    spec: ToolSpec = SPEC
    progress: str = "Searching your documents…"
    mode: SearchMode = "hybrid"
    archive_search: ArchiveSearch | None = None  # D-07's fallback; None: no archives

    def available(self, context: SkillContext) -> bool:
        """Offered to whoever may use it at all (``search:read``)."""
        return context.can("search:read")

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("rag_search needs a non-empty 'query' string")
        context.require("search:read", "rag_search")
        filters = _merge(context.filters, _filters(arguments))
        request = SearchRequest(query.strip(), k=context.k, filters=filters, mode=self.mode)
        response = context.app.searcher.search(request)
        first = context.first_citation_number
        engine = context.app.catalog.engine
        citations = [
            citation_from_hit(
                first + i,
                h,
                section=section_heading(engine, h.document_id, h.doc_type, h.char_start, h.text),
            )
            for i, h in enumerate(response.hits)
        ]
        archive = _archive_ref(arguments.get("archiveId"), context.archive)
        if not citations and archive is not None and self.archive_search is not None:
            citations = self.archive_search(context, archive, query.strip())
            content = format_tool_result(citations) if citations else NO_ARCHIVE_RESULTS
            return SkillResult(
                content, citations, status=f"Searched the archive: {len(citations)} passages"
            )
        content = format_tool_result(citations) if citations else NO_RESULTS
        return SkillResult(content, citations, status=f"Searched: {len(citations)} passages")


def _archive_ref(value: Any, default: str | None) -> str | int | None:
    """The call's ``archiveId`` (a name, or an id as a number or digits), else the
    question's archive; None when neither names one."""
    if isinstance(value, bool) or value is None or value == "":
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise InvalidInput("archiveId must be an archive's name or id")


def _filters(arguments: Mapping[str, Any]) -> SearchFilters:
    types = arguments.get("documentTypes") or []
    if isinstance(types, str):
        types = [types]
    if not isinstance(types, list):
        raise InvalidInput("documentTypes must be a list of file types")
    return build_filters(
        [str(t) for t in types],
        _optional_text(arguments.get("dateFrom")),
        _optional_text(arguments.get("dateTo")),
    )


def _optional_text(value: Any) -> str | None:
    return str(value) if value else None


def _merge(request: SearchFilters, chosen: SearchFilters) -> SearchFilters:
    """The request's filters bound the model's: it may narrow them, never widen."""
    types = request.document_types
    if chosen.document_types:
        types = tuple(t for t in chosen.document_types if not types or t in types) or types
    start = max(filter(None, (request.date_from, chosen.date_from)), default=None)
    end = min(filter(None, (request.date_to, chosen.date_to)), default=None)
    return replace(request, document_types=types, date_from=start, date_to=end)


def citation_from_hit(number: int, hit: SearchHit, *, section: str | None = None) -> Citation:
    """``hit`` as source ``number``; ``section``: the heading it sits under."""
    return Citation(
        number=number,
        source=hit.source,
        source_id=hit.source_id,
        title=hit.title,
        text=hit.text,
        page=hit.page,
        paragraph=hit.paragraph,
        score=hit.score,
        legs=hit.legs,
        chunk_id=hit.chunk_id,
        document_id=hit.document_id,
        section=section,
    )


def format_tool_result(citations: list[Citation]) -> str:
    """Sources as the seed formats them for a model: ``[Source: name (match: …)]``."""
    return "\n\n".join(
        f"[{c.number}] [Source: {c.title or c.source} (match: {MATCH_LABELS[c.legs]}, "
        f"score: {c.score:.4f})]\n{c.text}"
        for c in citations
    )
