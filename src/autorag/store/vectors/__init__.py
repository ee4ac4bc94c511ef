"""Vector stores, registered by name (``vector_store`` in the settings)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autorag.errors import InvalidInput
from autorag.store.vectors.base import VectorRecord, VectorStore


def _lancedb(directory: Path, table: str, dim: int, recreate: bool) -> VectorStore:
    from autorag.store.vectors.lancedb import LanceVectorStore

    return LanceVectorStore(directory, table, dim, recreate=recreate)


VECTOR_STORES: dict[str, Callable[[Path, str, int, bool], VectorStore]] = {"lancedb": _lancedb}


def open_vector_store(
    name: str, directory: Path, table: str, dim: int, *, recreate: bool = False
) -> VectorStore:
    """Open a workspace's vector table; ``recreate`` empties it first (reindex)."""
    try:
        factory = VECTOR_STORES[name]
    except KeyError:
        known = ", ".join(sorted(VECTOR_STORES))
        raise InvalidInput(f"unknown vector store {name!r} (known: {known})") from None
    return factory(directory, table, dim, recreate)


__all__ = ["VECTOR_STORES", "VectorRecord", "VectorStore", "open_vector_store"]
