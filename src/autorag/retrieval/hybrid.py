"""Hybrid search: vector and full-text legs in parallel, fused with RRF, then the
catalog backstop (ready documents only, filters re-applied) and a deterministic order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal

from autorag.config import SearchSettings
from autorag.embeddings.base import EmbeddingProvider
from autorag.models import Diagnostic, SearchFilters, SearchHit, SearchResponse
from autorag.rerank.stage import RerankStage
from autorag.retrieval.fusion import Fused, convex_fuse, rank_fused, rrf_fuse
from autorag.retrieval.query_batcher import QueryBatcher
from autorag.retrieval.query_language import SILENT_WEIGHT, query_language, vector_reads
from autorag.sources import SourceRoot, to_real_path
from autorag.store.catalog.repository import Catalog, ChunkView, WorkspaceInfo
from autorag.store.fulltext.base import FullTextIndex
from autorag.store.vectors.base import VectorStore
from autorag.text.language import language_name

SearchMode = Literal["hybrid", "vector", "fts"]
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-leg")


@dataclass(frozen=True)
class SearchRequest:
    query: str
    k: int = 10
    filters: SearchFilters = field(default_factory=SearchFilters)
    mode: SearchMode = "hybrid"
    per_document: bool = False  # at most one hit (the best chunk) per document
    rerank: bool | None = None  # None: as the workspace says (when a reranker is set)


class HybridSearcher:
    def __init__(
        self,
        catalog: Catalog,
        workspace: WorkspaceInfo,
        fulltext: FullTextIndex,
        vectors: Callable[[], VectorStore],
        embedder: Callable[[], EmbeddingProvider],
        settings: SearchSettings,
        roots: Sequence[SourceRoot],
        reranker: RerankStage | None = None,
        vector_languages: frozenset[str] | None = None,
    ) -> None:
        self.catalog = catalog
        self.workspace = workspace
        self.fulltext = fulltext
        self._vectors = vectors  # opened lazily: an FTS-only search needs no model
        self._embedder = embedder
        self.settings = settings
        self.roots = roots
        self._batcher: QueryBatcher | None = None
        self.reranker = reranker  # see autorag.rerank.stage
        self.vector_languages = vector_languages  # what the model reads (None: any)

    def search(self, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        diagnostics: list[Diagnostic] = []
        timings: dict[str, float] = {}
        hits = self._reranked(request, diagnostics, timings)
        if not hits and request.filters.active:
            diagnostics.extend(self._outside_filters(request))
        timings["total_ms"] = (time.perf_counter() - started) * 1000
        return SearchResponse(hits, diagnostics, timings)

    def _reranked(
        self, request: SearchRequest, diagnostics: list[Diagnostic], timings: dict[str, float]
    ) -> list[SearchHit]:
        """The first stage's hits, reordered by the reranker when one is configured and
        wanted (it takes its ``top_n`` and gives back ``k``)."""
        stage = self.reranker
        if stage is None or not stage.wanted(request.rerank):
            if request.rerank and stage is None:
                diagnostics.append(_NO_RERANKER)
            return self._search(request, diagnostics, timings)
        first = replace(request, k=stage.depth(request.k))
        hits = self._search(first, diagnostics, timings)
        return stage.apply(request.query, hits, request.k, diagnostics, timings)

    def _outside_filters(self, request: SearchRequest) -> list[Diagnostic]:
        """When filters left nothing: how many matches they excluded, and which filter
        (the dates first), so that people know to widen it rather than reword."""
        filters = request.filters
        dated = filters.date_from is not None or filters.date_to is not None
        wider = (
            replace(filters, date_from=None, date_to=None)
            if dated
            else replace(filters, document_types=())
        )
        outside = len(self._search(replace(request, filters=wider), [], {}))
        if not outside:
            return []
        matches = "1 match was" if outside == 1 else f"{outside} matches were"
        why = (
            "outside the dates you chose (each document's own date: from its metadata, "
            "else when the file was last modified)"
            if dated
            else "of other types than the ones you chose"
        )
        return [Diagnostic("outside_filters", f"{matches} {why}", "info")]

    def _search(
        self, request: SearchRequest, diagnostics: list[Diagnostic], timings: dict[str, float]
    ) -> list[SearchHit]:
        depth = max(self.settings.candidate_depth, request.k * (4 if request.per_document else 1))
        use_vector = request.mode in ("hybrid", "vector") and self._vector_leg_allowed(diagnostics)
        use_fts = request.mode in ("hybrid", "fts")
        vector_future = (
            _LEG_POOL.submit(self._vector_leg, request, depth, timings) if use_vector else None
        )
        fts_future = _LEG_POOL.submit(self._fts_leg, request, depth, timings) if use_fts else None
        legs = {name: _result(f) for name, f in (("vector", vector_future), ("fts", fts_future))}
        scored = {name: hits for name, hits in legs.items() if hits is not None}
        weights = self._leg_weights(request, len(scored) > 1, diagnostics)
        return self._backstop(self._fuse(scored, weights), request)

    def _leg_weights(
        self, request: SearchRequest, fused: bool, diagnostics: list[Diagnostic]
    ) -> dict[str, float]:
        """The settings' leg weights, the vector leg's all but silenced for a question in
        a language the embedding model does not read (see ``query_language``)."""
        weights = {"vector": self.settings.vector_weight, "fts": self.settings.fts_weight}
        if not fused or self.vector_languages is None:
            return weights
        language = query_language(request.query, self.catalog.languages(self.workspace.id))
        if not vector_reads(self.vector_languages, language):
            weights["vector"] = SILENT_WEIGHT
            diagnostics.append(_vector_language(self.vector_languages, language))
        return weights

    def _fuse(
        self, scored: dict[str, list[tuple[int, float]]], weights: dict[str, float]
    ) -> dict[int, Fused]:
        """RRF over the legs' ranks (the seed's default), or a convex combination of
        their normalised scores (``search.fusion = "convex"``)."""
        if self.settings.fusion == "convex":
            return convex_fuse(scored, weights=weights)
        ranked = {name: [chunk_id for chunk_id, _ in hits] for name, hits in scored.items()}
        return rrf_fuse(ranked, k=self.settings.rrf_k, weights=weights)

    def _vector_leg_allowed(self, diagnostics: list[Diagnostic]) -> bool:
        """Guard D-01: never compare vectors from different models."""
        configured = self._embedder().model_id
        stored = self.catalog.embedding_models(self.workspace.id)
        mismatched = sorted(stored - {configured})
        if mismatched:
            diagnostics.append(
                Diagnostic(
                    "embedding_model_mismatch",
                    f"documents were embedded with {', '.join(mismatched)} but the configured "
                    f"model is {configured}: vector search skipped (full-text only); "
                    "run `autorag reindex` to re-embed",
                    "warning",
                )
            )
            return False
        return True

    def _vector_leg(
        self, request: SearchRequest, depth: int, timings: dict[str, float]
    ) -> list[tuple[int, float]]:
        started = time.perf_counter()
        vector = self._query_batcher().embed_query(request.query)
        embedded = time.perf_counter()
        found = self._vectors().search(vector, depth=depth, filters=request.filters)
        timings["embed_ms"] = (embedded - started) * 1000
        timings["vector_ms"] = (time.perf_counter() - embedded) * 1000
        return found

    def _query_batcher(self) -> QueryBatcher:
        """Concurrent searches embed their queries together (see ``query_batcher``)."""
        embedder = self._embedder()
        batcher = self._batcher
        if batcher is None or batcher.embedder is not embedder:
            # Two threads may both get here first: one batcher is kept, the other's
            # queries are simply not batched with the kept one's.
            batcher = self._batcher = QueryBatcher(embedder)
        return batcher

    def _fts_leg(
        self, request: SearchRequest, depth: int, timings: dict[str, float]
    ) -> list[tuple[int, float]]:
        started = time.perf_counter()
        found = self.fulltext.search(
            self.workspace.id, request.query, depth=depth, filters=request.filters
        )
        timings["fts_ms"] = (time.perf_counter() - started) * 1000
        return found

    def _backstop(self, fused: dict[int, Fused], request: SearchRequest) -> list[SearchHit]:
        if not fused:  # nothing to check (an empty IN list costs the catalog a full scan)
            return []
        position = self.catalog.visible_positions(self.workspace.id, fused, request.filters)
        chosen: list[Fused] = []
        seen_documents: set[int] = set()
        for entry in rank_fused(fused, position):
            document_id = position[entry.chunk_id][0]
            if request.per_document and document_id in seen_documents:
                continue
            seen_documents.add(document_id)
            chosen.append(entry)
            if len(chosen) == request.k:
                break
        if not chosen:
            return []
        views = self.catalog.visible_chunks(
            self.workspace.id, [e.chunk_id for e in chosen], request.filters
        )
        return [self._hit(e, views[e.chunk_id]) for e in chosen if e.chunk_id in views]

    def _hit(self, entry: Fused, view: ChunkView) -> SearchHit:
        # Seed 000: local files come back as OS-absolute real paths, datasource
        # records as their slash identity.
        source = to_real_path(view.source_id, self.roots) or view.source_id
        return SearchHit(
            chunk_id=view.chunk_id,
            document_id=view.document_id,
            chunk_index=view.chunk_index,
            source=source,
            source_id=view.source_id,
            title=view.title,
            doc_type=view.doc_type,
            text=view.text,
            page=view.page,
            paragraph=view.paragraph,
            char_start=view.char_start,
            score=entry.score,
            legs=entry.legs,
            vector_rank=entry.ranks.get("vector"),
            fts_rank=entry.ranks.get("fts"),
        )


_NO_RERANKER = Diagnostic(
    "rerank_not_configured",
    "reranking was asked for but no reranker is configured (search.rerank.provider)",
    "warning",
)


def _vector_language(reads: frozenset[str], language: str | None) -> Diagnostic:
    names = " and ".join(sorted(language_name(code) for code in reads))
    return Diagnostic(
        "vector_language",
        f"the embedding model reads {names} only, so this question in "
        f"{language_name(language or '')} was ranked by its words (full-text search); "
        "a multilingual model is one setting away (README: Languages)",
        "info",
    )


def _result(
    future: Future[list[tuple[int, float]]] | None,
) -> list[tuple[int, float]] | None:
    return None if future is None else future.result()
