"""Reciprocal Rank Fusion (pure): the seed's ``score += 1/(k + rank + 1)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from autorag.models import Leg


@dataclass
class Fused:
    chunk_id: int
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # leg name -> 0-based rank

    @property
    def legs(self) -> Leg:
        """``vector``, ``fts`` or ``both``: which legs found this chunk."""
        if len(self.ranks) > 1:
            return "both"
        return "vector" if "vector" in self.ranks else "fts"


def rrf_fuse(
    ranked_legs: Mapping[str, Sequence[int]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> dict[int, Fused]:
    """Fuse ranked chunk-id lists; a leg's weight scales its contributions (default 1)."""
    fused: dict[int, Fused] = {}
    for leg, chunk_ids in ranked_legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for rank, chunk_id in enumerate(chunk_ids):
            entry = fused.setdefault(chunk_id, Fused(chunk_id))
            if leg in entry.ranks:
                continue  # a leg that lists a chunk twice counts its best rank only
            entry.ranks[leg] = rank
            entry.score += weight / (k + rank + 1)
    return fused


def rank_fused(fused: Mapping[int, Fused], position: Mapping[int, tuple[int, int]]) -> list[Fused]:
    """Order fused chunks: score desc, then documentId asc, then chunkIndex asc.

    ``position`` maps each chunk id to its (document id, chunk index); chunks missing
    from it (dropped by the catalog backstop) are left out.
    """
    kept = [fused[chunk_id] for chunk_id in position if chunk_id in fused]
    return sorted(kept, key=lambda f: (-f.score, *position[f.chunk_id]))
