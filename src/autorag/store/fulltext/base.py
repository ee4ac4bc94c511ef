"""The full-text index protocol."""

from __future__ import annotations

from typing import Protocol

from autorag.models import SearchFilters


class FullTextIndex(Protocol):
    """Ranks chunks of a workspace's ready documents for a free-text query."""

    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        """``(chunk_id, score)`` best first; higher score is better."""
        ...

    def rebuild(self) -> None:
        """Rebuild the index from the catalog's chunk text."""
        ...
