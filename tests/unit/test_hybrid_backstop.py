"""The backstop asks the catalog nothing when there is nothing to check."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autorag.config import SearchSettings
from autorag.models import SearchFilters
from autorag.retrieval.hybrid import HybridSearcher, SearchRequest
from autorag.store.catalog.repository import WorkspaceInfo


class NoMatches:
    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        return []


class Catalog:
    def __init__(self, visible: dict[int, tuple[int, int]]) -> None:
        self.visible = visible
        self.asked: list[tuple[str, list[int]]] = []

    def visible_positions(
        self, workspace_id: int, chunk_ids: Iterable[int], filters: SearchFilters
    ) -> dict[int, tuple[int, int]]:
        ids = list(chunk_ids)
        self.asked.append(("positions", ids))
        return {i: self.visible[i] for i in ids if i in self.visible}

    def visible_chunks(
        self, workspace_id: int, chunk_ids: Iterable[int], filters: SearchFilters
    ) -> dict[int, Any]:
        self.asked.append(("chunks", list(chunk_ids)))
        return {}


class Ranked:
    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        return [(i, 1.0) for i in self.ids]


def searcher(catalog: Catalog, fulltext: object) -> HybridSearcher:
    def unused() -> Any:
        raise AssertionError("an fts search needs neither vectors nor a model")

    return HybridSearcher(
        catalog,  # type: ignore[arg-type]
        WorkspaceInfo(1, "default", "abc123"),
        fulltext,  # type: ignore[arg-type]
        vectors=unused,
        embedder=unused,
        settings=SearchSettings(),
        roots=[],
    )


def test_no_candidates_no_catalog_queries() -> None:
    catalog = Catalog({})
    response = searcher(catalog, NoMatches()).search(SearchRequest("zzz", mode="fts"))
    assert response.hits == []
    assert catalog.asked == []


def test_no_visible_candidates_no_text_fetched() -> None:
    catalog = Catalog({})  # every candidate belongs to a deleted or pending document
    response = searcher(catalog, Ranked([7, 8])).search(SearchRequest("q", mode="fts"))
    assert response.hits == []
    assert catalog.asked == [("positions", [7, 8])]
