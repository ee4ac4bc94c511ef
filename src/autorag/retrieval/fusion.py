"""Reciprocal Rank Fusion (pure): the seed's ``score += 1/(k + rank + 1)``."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from autorag.models import Leg

T = TypeVar("T", bound=Hashable)


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


def convex_fuse(
    scored_legs: Mapping[str, Sequence[tuple[int, float]]],
    *,
    weights: Mapping[str, float] | None = None,
) -> dict[int, Fused]:
    """Fuse by a weighted sum of each leg's scores, min-max normalised over the leg's own
    candidates (its best 1, its last 0; a chunk a leg did not list gets 0 from it)."""
    fused: dict[int, Fused] = {}
    for leg, hits in scored_legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        if not hits:
            continue
        scores = [score for _, score in hits]
        low, spread = min(scores), (max(scores) - min(scores)) or 1.0
        for rank, (chunk_id, score) in enumerate(hits):
            entry = fused.setdefault(chunk_id, Fused(chunk_id))
            if leg in entry.ranks:
                continue
            entry.ranks[leg] = rank
            entry.score += weight * (score - low) / spread
    return fused


def document_scores(
    fused: Mapping[int, Fused], document_of: Mapping[int, T], *, decay: float = 0.0
) -> list[T]:
    """Documents best first, each scored from its chunks: the best chunk's score plus
    ``decay`` times the second's, ``decay**2`` times the third's… (0: the best chunk alone)."""
    chunk_scores: dict[T, list[float]] = {}
    for chunk_id, entry in fused.items():
        chunk_scores.setdefault(document_of[chunk_id], []).append(entry.score)
    totals = {
        document: sum(s * decay**i for i, s in enumerate(sorted(scores, reverse=True)))
        for document, scores in chunk_scores.items()
    }
    return sorted(totals, key=lambda document: -totals[document])
