"""Vectors in LanceDB (embedded): one table per workspace.

LanceDB writes its files with the process umask; each write's new files and folders are
set owner-only (0600/0700) right after it, and the whole folder on open.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from autorag.errors import Unavailable
from autorag.models import SearchFilters
from autorag.private_files import make_private_dir, tighten, tighten_tree, warn_repaired
from autorag.store.vectors.base import VectorRecord, check_dimensions
from autorag.store.vectors.exact import ExactIndex
from autorag.store.vectors.lance_count import record_count

if TYPE_CHECKING:
    from lancedb.table import Table

log = logging.getLogger(__name__)

# Up to this many rows search is an exact scan of an in-memory copy (150 MB at 384
# dims); above it, LanceDB's ANN index.
EXACT_MAX_ROWS = 100_000
ANN_INDEX_MIN_ROWS = EXACT_MAX_ROWS


class LanceVectorStore:
    def __init__(
        self, directory: Path, table_name: str, dim: int, *, recreate: bool = False
    ) -> None:
        import lancedb  # deferred: importing lancedb costs start-up time

        self.dim = dim
        self.table_name = table_name
        self._schema = pa.schema(
            [
                ("chunk_id", pa.int64()),
                ("document_id", pa.int64()),
                ("doc_type", pa.string()),
                ("doc_date", pa.timestamp("us", tz="UTC")),
                ("vector", pa.list_(pa.float32(), dim)),
            ]
        )
        self._directory = directory
        self._private: set[tuple[str, int]] = set()  # (path, inode) made owner-only
        try:
            make_private_dir(directory)
            warn_repaired(tighten_tree(directory), "the vector store")
            # Interval 0: every read sees writes made by other processes (workers).
            self._db = lancedb.connect(str(directory), read_consistency_interval=timedelta(0))
            if recreate:
                self._db.drop_table(table_name, ignore_missing=True)  # type: ignore[call-arg]
            self._table = self._open_or_create(table_name)
            self._secure_new_files()
        except Exception as exc:
            raise Unavailable(f"vector store at {directory} unavailable: {exc}") from exc
        self._exact: tuple[int, ExactIndex] | None = None  # (table version, index)
        stored_dim = self._table.schema.field("vector").type.list_size
        if stored_dim != dim:
            raise Unavailable(
                f"vector table {table_name} holds {stored_dim}-dim vectors but the embedding "
                f"model makes {dim}-dim ones: run `autorag reindex`"
            )
        self._written()  # the count is recorded for a table of the right size only

    def _open_or_create(self, table_name: str) -> Table:
        # Opened, not created with exist_ok: that rejects a table of another vector size
        # with a bare schema error, before the dimension check below can say "reindex".
        try:
            return self._db.open_table(table_name)
        except ValueError:  # not found
            return self._db.create_table(table_name, schema=self._schema, exist_ok=True)

    def add(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        check_dimensions(records, self.dim)
        ids = [r.chunk_id for r in records]
        vectors = np.stack([r.vector for r in records]).astype(np.float32, copy=False)
        batch = pa.table(
            {
                "chunk_id": pa.array(ids, pa.int64()),
                "document_id": pa.array([r.document_id for r in records], pa.int64()),
                "doc_type": pa.array([r.doc_type for r in records], pa.string()),
                "doc_date": pa.array([r.doc_date for r in records], pa.timestamp("us", tz="UTC")),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1), pa.float32()), self.dim
                ),
            },
            schema=self._schema,
        )
        self._table.add(batch)
        self._written()

    def delete_documents(self, document_ids: Sequence[int]) -> None:
        for start in range(0, len(document_ids), 1000):
            part = document_ids[start : start + 1000]
            self._table.delete(f"document_id IN ({_int_list(part)})")
        self._written()

    def search(
        self, vector: npt.NDArray[np.float32], *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        exact = self._exact_index()
        if exact is not None:
            return exact.search(vector, depth=depth, filters=filters)
        query: Any = self._table.search(vector.astype(np.float32)).distance_type("cosine")  # type: ignore[attr-defined]
        where = _where(filters)
        if where:
            query = query.where(where, prefilter=True)
        table = query.limit(depth).select(["chunk_id", "_distance"]).to_arrow()
        ids = table.column("chunk_id").to_pylist()
        distances = table.column("_distance").to_pylist()
        return [(int(i), 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]

    def _exact_index(self) -> ExactIndex | None:
        """The in-memory copy, reloaded whenever the table has a new version."""
        version = self._table.version
        if self._exact is not None and self._exact[0] == version:
            return self._exact[1]
        if self._table.count_rows() > EXACT_MAX_ROWS:
            self._exact = None
            return None
        columns = ["chunk_id", "doc_type", "doc_date", "vector"]
        self._exact = (version, ExactIndex(self._table.to_arrow().select(columns)))
        return self._exact[1]

    def count(self) -> int:
        return int(self._table.count_rows())

    def document_ids(self) -> set[int]:
        column = self._table.to_arrow().column("document_id")
        return {int(x) for x in column.unique().to_pylist()}

    def optimize(self) -> None:
        self._table.optimize()
        rows = self.count()
        if rows >= ANN_INDEX_MIN_ROWS:
            log.info("building ANN index over %d vectors", rows)
            self._table.create_index(metric="cosine", index_type="IVF_HNSW_SQ", replace=True)
        self._written()

    def drop(self) -> None:
        self._db.drop_table(self.table_name)

    def copy_to(self, table: str) -> None:
        # An overwrite is one new version of ``table``: open readers move to it whole.
        self._db.create_table(table, data=self._table.to_arrow(), mode="overwrite")
        self._secure_new_files()

    def _written(self) -> None:
        """After a write: its files owner-only, and the count recorded for `status`."""
        self._secure_new_files()
        try:
            rows = self._table.count_rows()
            record_count(self._directory, self.table_name, self._table.version, rows, self.dim)
        except OSError as exc:  # only costs the next `status` the slow way
            log.warning("could not record the vector count of %s: %s", self.table_name, exc)

    def _secure_new_files(self) -> None:
        """Make the files and folders written since the last call owner-only: a listing
        of the folders, where only new entries (path and inode) are looked at."""
        stack = [str(self._directory)]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except FileNotFoundError:  # a table dropped meanwhile
                continue
            for entry in entries:
                key = (entry.path, entry.inode())
                if key not in self._private:
                    tighten(Path(entry.path))
                    self._private.add(key)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)


def _int_list(values: Sequence[int]) -> str:
    return ", ".join(str(int(v)) for v in values)


def _where(filters: SearchFilters) -> str:
    """Filters as a Lance SQL predicate. Types are escaped; dates are formatted by us."""
    parts: list[str] = []
    if filters.document_types:
        quoted = ", ".join("'" + t.replace("'", "''") + "'" for t in filters.document_types)
        parts.append(f"doc_type IN ({quoted})")
    if filters.date_from is not None:
        parts.append(f"doc_date >= {_timestamp(filters.date_from)}")
    if filters.date_to is not None:
        parts.append(f"doc_date < {_timestamp(filters.date_to)}")
    return " AND ".join(parts)


def _timestamp(value: datetime) -> str:
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return f"TIMESTAMP '{utc:%Y-%m-%d %H:%M:%S.%f}'"
