"""Vectors in Qdrant: one collection per workspace, reached through an alias.

The workspace's table name is a Qdrant *alias* of a collection ``<table>__<suffix>``.
Every read and write goes through the alias, and aliases switch atomically: that is how
``copy_to`` swaps a filled shadow collection in (readers see the old points or the new
ones, never a mix or nothing), and how ``recreate`` empties a table under open readers.

Points are keyed by chunk id (an upsert replaces a chunk) and carry a payload of
document id, type and date (microseconds since the epoch, a number: Qdrant ranges are
numeric), each with a payload index so filters are ``must`` conditions evaluated during
the HNSW search.

Only calls a Qdrant server also serves are used: tests run qdrant-client's in-process
local mode (``qdrant_path``), deployments a server (``qdrant_url``).
"""

from __future__ import annotations

import atexit
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from qdrant_client import QdrantClient, models

from autorag.config import VectorSettings
from autorag.errors import Unavailable
from autorag.models import SearchFilters
from autorag.store.vectors.base import VectorRecord, check_dimensions

# Payload fields and the index type each is searched with.
PAYLOAD_INDEXES = {
    "document_id": models.PayloadSchemaType.INTEGER,
    "doc_type": models.PayloadSchemaType.KEYWORD,
    "doc_date": models.PayloadSchemaType.INTEGER,
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DELETE_BATCH = 1000  # document ids in one delete filter
SCROLL_PAGE = 1000

_clients: dict[tuple[str | None, str | None], QdrantClient] = {}
_clients_lock = threading.Lock()


def qdrant_client(settings: VectorSettings, default_path: Path) -> QdrantClient:
    """One client per server or local folder for the process.

    Local mode locks its folder for one client; a server client pools its connections.
    """
    path = None if settings.qdrant_url else str(settings.qdrant_path or default_path)
    key = (settings.qdrant_url, path)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = _connect(settings, path)
        return _clients[key]


@atexit.register
def close_clients() -> None:
    """Close every client: local mode releases its folder lock (also run at exit, before
    the interpreter tears down what the clients' own finalizers import)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


def _connect(settings: VectorSettings, path: str | None) -> QdrantClient:
    try:
        if path is not None:
            Path(path).mkdir(parents=True, exist_ok=True)
            return QdrantClient(path=path)
        api_key = settings.qdrant_api_key
        return QdrantClient(
            url=settings.qdrant_url,
            api_key=api_key.get_secret_value() if api_key else None,
            timeout=int(settings.qdrant_timeout_s),
        )
    except Exception as exc:  # a locked folder, a malformed URL
        raise Unavailable(f"Qdrant unavailable: {exc}") from exc


class QdrantVectorStore:
    def __init__(
        self,
        client: QdrantClient,
        table_name: str,
        dim: int,
        *,
        settings: VectorSettings,
        recreate: bool = False,
    ) -> None:
        self._client = client
        self._batch = settings.qdrant_batch_size
        self.dim = dim
        self.table_name = table_name
        try:
            stored = self._open(recreate)
        except Unavailable:
            raise
        except Exception as exc:  # connection refused, unauthorized, timeouts
            raise Unavailable(f"Qdrant collection {table_name} unavailable: {exc}") from exc
        if stored != dim:
            raise Unavailable(
                f"vector table {table_name} holds {stored}-dim vectors but the embedding "
                f"model makes {dim}-dim ones: run `autorag reindex`"
            )

    def _open(self, recreate: bool) -> int:
        """Point the alias at a collection (a new one when recreating); its dimension."""
        current = _resolve(self._client, self.table_name)
        if current is None:
            # The first collection has a fixed name: two processes opening a new
            # workspace at once create it once.
            current = _create(self._client, f"{self.table_name}__1", self.dim, exist_ok=True)
            _point_alias(self._client, self.table_name, current)
        elif recreate:
            fresh = _create(self._client, _new_name(self.table_name), self.dim)
            _point_alias(self._client, self.table_name, fresh)
            self._client.delete_collection(current)
            current = fresh
        return _dimension(self._client, current)

    def add(self, records: Sequence[VectorRecord]) -> None:
        check_dimensions(records, self.dim)
        for start in range(0, len(records), self._batch):
            part = records[start : start + self._batch]
            batch = models.Batch(
                ids=[r.chunk_id for r in part],
                vectors=[np.asarray(r.vector, dtype=np.float32).tolist() for r in part],
                payloads=[_payload(r) for r in part],
            )
            self._client.upsert(self.table_name, points=batch, wait=True)

    def delete_documents(self, document_ids: Sequence[int]) -> None:
        for start in range(0, len(document_ids), DELETE_BATCH):
            ids = [int(d) for d in document_ids[start : start + DELETE_BATCH]]
            selector = models.FilterSelector(
                filter=models.Filter(must=[_match("document_id", ids)])
            )
            self._client.delete(self.table_name, points_selector=selector, wait=True)

    def search(
        self, vector: npt.NDArray[np.float32], *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        found = self._client.query_points(
            self.table_name,
            query=np.asarray(vector, dtype=np.float32).tolist(),
            query_filter=_filter(filters),
            limit=depth,
            with_payload=False,
        )
        return [(int(point.id), float(point.score)) for point in found.points]

    def count(self) -> int:
        return int(self._client.count(self.table_name, exact=True).count)

    def document_ids(self) -> set[int]:
        records = self._scroll(["document_id"], False)
        return {int(r.payload["document_id"]) for r in records if r.payload}

    def optimize(self) -> None:
        """Nothing to do: Qdrant's optimizers index and compact segments by themselves."""

    def drop(self) -> None:
        current = _resolve(self._client, self.table_name)
        if current is None:
            return
        delete = models.DeleteAliasOperation(
            delete_alias=models.DeleteAlias(alias_name=self.table_name)
        )
        self._client.update_collection_aliases(change_aliases_operations=[delete])
        self._client.delete_collection(current)

    def copy_to(self, table: str) -> None:
        """Copy the points into a new collection, then switch ``table``'s alias to it."""
        fresh = _create(self._client, _new_name(table), self.dim)
        points: list[models.Record] = []
        for record in self._scroll(True, True):
            points.append(record)
            if len(points) == self._batch:
                _upsert_records(self._client, fresh, points)
                points = []
        _upsert_records(self._client, fresh, points)
        previous = _resolve(self._client, table)
        _point_alias(self._client, table, fresh)
        if previous is not None:
            self._client.delete_collection(previous)

    def _scroll(self, payload: bool | list[str], vectors: bool) -> Iterator[models.Record]:
        offset: Any = None
        while True:
            records, offset = self._client.scroll(
                self.table_name,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=payload,
                with_vectors=vectors,
            )
            yield from records
            if offset is None:
                return


def _create(client: QdrantClient, name: str, dim: int, *, exist_ok: bool = False) -> str:
    if exist_ok and client.collection_exists(name):
        return name
    client.create_collection(
        name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
    )
    for field, schema in PAYLOAD_INDEXES.items():
        client.create_payload_index(name, field_name=field, field_schema=schema, wait=True)
    return name


def _new_name(table: str) -> str:
    return f"{table}__{uuid.uuid4().hex[:12]}"


def _resolve(client: QdrantClient, alias: str) -> str | None:
    """The collection ``alias`` points at, or None."""
    for entry in client.get_aliases().aliases:
        if entry.alias_name == alias:
            return entry.collection_name
    return None


def _point_alias(client: QdrantClient, alias: str, collection: str) -> None:
    """Move ``alias`` to ``collection`` in one atomic change."""
    operations: list[Any] = []
    if _resolve(client, alias) is not None:
        operations.append(
            models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias))
        )
    operations.append(
        models.CreateAliasOperation(
            create_alias=models.CreateAlias(collection_name=collection, alias_name=alias)
        )
    )
    client.update_collection_aliases(change_aliases_operations=operations)


def _dimension(client: QdrantClient, collection: str) -> int:
    vectors = client.get_collection(collection).config.params.vectors
    if not isinstance(vectors, models.VectorParams):  # named vectors: not one of ours
        raise Unavailable(f"Qdrant collection {collection} was not made by autorag")
    return int(vectors.size)


def _upsert_records(client: QdrantClient, collection: str, records: list[models.Record]) -> None:
    if not records:
        return
    batch = models.Batch(
        ids=[r.id for r in records],
        vectors=[_plain(r.vector) for r in records],
        payloads=[r.payload or {} for r in records],
    )
    client.upsert(collection, points=batch, wait=True)


def _plain(vector: Any) -> list[float]:
    """A record's vector: our collections hold one unnamed dense vector per point."""
    if not isinstance(vector, list):
        raise Unavailable("a Qdrant point without a plain vector: not a collection of ours")
    return [float(x) for x in vector]


def _payload(record: VectorRecord) -> dict[str, Any]:
    return {
        "document_id": record.document_id,
        "doc_type": record.doc_type,
        "doc_date": _micros(record.doc_date),
    }


def _filter(filters: SearchFilters) -> models.Filter | None:
    must: list[models.Condition] = []
    if filters.document_types:
        must.append(
            models.FieldCondition(
                key="doc_type", match=models.MatchAny(any=list(filters.document_types))
            )
        )
    if filters.date_from is not None or filters.date_to is not None:
        window = models.Range(
            gte=_micros(filters.date_from) if filters.date_from else None,
            lt=_micros(filters.date_to) if filters.date_to else None,
        )
        must.append(models.FieldCondition(key="doc_date", range=window))
    return models.Filter(must=must) if must else None


def _match(key: str, values: list[int]) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchAny(any=values))


def _micros(value: datetime) -> int:
    # Integer arithmetic (a float timestamp can be a microsecond off at a boundary);
    # the result stays exact in Qdrant's float ranges (< 2**53).
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return (utc - _EPOCH) // timedelta(microseconds=1)
