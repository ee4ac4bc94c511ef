"""The vector store protocol: derived data keyed by chunk id, rebuildable from the catalog."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from autorag.errors import InvalidInput
from autorag.models import SearchFilters

if TYPE_CHECKING:  # annotations only: `autorag status` counts vectors without NumPy
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True)
class VectorRecord:
    chunk_id: int
    document_id: int
    doc_type: str
    doc_date: datetime
    vector: npt.NDArray[np.float32]


def check_dimensions(records: Sequence[VectorRecord], dim: int) -> None:
    """Reject vectors of another size before a store half-writes a batch."""
    for record in records:
        if record.vector.shape != (dim,):
            raise InvalidInput(
                f"chunk {record.chunk_id}: a vector of shape {record.vector.shape} "
                f"in a store of {dim}-dim vectors"
            )


class VectorStore(Protocol):
    """One workspace's vectors. Scores are cosine similarity, higher is better."""

    def add(self, records: Sequence[VectorRecord]) -> None:
        """Append vectors; callers delete a document's old vectors before re-adding."""
        ...

    def delete_documents(self, document_ids: Sequence[int]) -> None: ...

    def search(
        self, vector: npt.NDArray[np.float32], *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        """``(chunk_id, similarity)`` best first; filters applied before the ANN search."""
        ...

    def count(self) -> int: ...

    def document_ids(self) -> set[int]: ...

    def optimize(self) -> None:
        """Compact after many writes; build an ANN index once the table is large."""
        ...

    def drop(self) -> None: ...

    def copy_to(self, table: str) -> None:
        """Replace table ``table`` of the same store with this table's rows.

        Readers of ``table`` see its old rows or the new ones, never a mix or nothing:
        this is how a shadow table is swapped in.
        """
        ...
