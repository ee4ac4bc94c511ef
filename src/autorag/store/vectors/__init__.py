"""Vector stores, registered by name (``vector_store`` in the settings)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autorag.config import VectorSettings
from autorag.errors import InvalidInput
from autorag.store.vectors.base import VectorRecord, VectorStore

if TYPE_CHECKING:  # the store's package is read by `autorag status` without SQLAlchemy
    from sqlalchemy import Engine


@dataclass(frozen=True)
class StoreLocation:
    """What the stores need to find a workspace's vectors; each uses its own part."""

    directory: Path  # embedded stores' folder (LanceDB; Qdrant's local mode beside it)
    engine: Engine | None = None  # the catalog database (pgvector)
    settings: VectorSettings = field(default_factory=VectorSettings)


# (location, table, dimension, recreate) -> store; imports are deferred so a store's
# client library loads only when that store is chosen.
Factory = Callable[[StoreLocation, str, int, bool], VectorStore]


def _lancedb(location: StoreLocation, table: str, dim: int, recreate: bool) -> VectorStore:
    from autorag.store.vectors.lancedb import LanceVectorStore

    return LanceVectorStore(location.directory, table, dim, recreate=recreate)


def _pgvector(location: StoreLocation, table: str, dim: int, recreate: bool) -> VectorStore:
    from autorag.store.vectors.pgvector import PgVectorStore

    if location.engine is None:
        raise InvalidInput("vector_store 'pgvector' needs the catalog database's engine")
    return PgVectorStore(location.engine, table, dim, settings=location.settings, recreate=recreate)


def _qdrant(location: StoreLocation, table: str, dim: int, recreate: bool) -> VectorStore:
    from autorag.store.vectors.qdrant import QdrantVectorStore, qdrant_client

    client = qdrant_client(location.settings, location.directory.parent / "qdrant")
    return QdrantVectorStore(client, table, dim, settings=location.settings, recreate=recreate)


VECTOR_STORES: dict[str, Factory] = {
    "lancedb": _lancedb,
    "pgvector": _pgvector,
    "qdrant": _qdrant,
}


def open_vector_store(
    name: str,
    directory: Path,
    table: str,
    dim: int,
    *,
    recreate: bool = False,
    engine: Engine | None = None,
    settings: VectorSettings | None = None,
) -> VectorStore:
    """Open a workspace's vector table; ``recreate`` empties it first (reindex).

    ``engine`` is the catalog database (pgvector keeps its tables there); ``settings``
    the ``vectors`` group (Qdrant's server, pgvector's index parameters).
    """
    try:
        factory = VECTOR_STORES[name]
    except KeyError:
        known = ", ".join(sorted(VECTOR_STORES))
        raise InvalidInput(f"unknown vector store {name!r} (known: {known})") from None
    location = StoreLocation(directory, engine, settings or VectorSettings())
    return factory(location, table, dim, recreate)


__all__ = ["VECTOR_STORES", "StoreLocation", "VectorRecord", "VectorStore", "open_vector_store"]
