"""TREC-style retrieval metrics, following pytrec_eval as BEIR uses it.

A doc counts as relevant when its grade is > 0; nDCG uses the grade itself as the gain.
A ranked list may repeat a doc: only its first occurrence counts, so a run cannot earn
gain twice for one doc (pytrec_eval's dict-shaped runs cannot repeat one at all).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autorag.errors import InvalidInput


@dataclass
class RetrievalScores:
    """Means over every judged query of one split."""

    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG@k with gain = grade and discount log2(rank + 2) for 0-based rank."""
    _check_k(k)
    ideal = sorted((grade for grade in relevant.values() if grade > 0), reverse=True)
    ideal_dcg = _dcg(ideal[:k])
    if ideal_dcg == 0.0:
        return 0.0
    gains = [max(relevant.get(doc_id, 0), 0) for doc_id in _top_unique(ranked, k)]
    return _dcg(gains) / ideal_dcg


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Share of the relevant docs found in the top k; 0 when nothing is relevant."""
    _check_k(k)
    wanted = {doc_id for doc_id, grade in relevant.items() if grade > 0}
    if not wanted:
        return 0.0
    found = wanted.intersection(_top_unique(ranked, k))
    return len(found) / len(wanted)


def mrr_at_k(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant doc within the top k, else 0."""
    _check_k(k)
    for rank, doc_id in enumerate(_top_unique(ranked, k), start=1):
        if relevant.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) with linear interpolation, as numpy's default."""
    if not values:
        raise InvalidInput("percentile of no values")
    if not 0.0 <= p <= 100.0:
        raise InvalidInput(f"percentile must be within 0..100, got {p}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def score_run(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> RetrievalScores:
    """Mean nDCG@10, Recall@100 and MRR@10 over every query in ``qrels``.

    A judged query missing from ``run`` scores 0; run queries without judgments are ignored.
    """
    if not qrels:
        raise InvalidInput("cannot score a run without judged queries")
    ndcg = recall = mrr = 0.0
    for query_id, relevant in qrels.items():
        ranked = run.get(query_id, ())
        ndcg += ndcg_at_k(ranked, relevant, 10)
        recall += recall_at_k(ranked, relevant, 100)
        mrr += mrr_at_k(ranked, relevant, 10)
    count = len(qrels)
    return RetrievalScores(
        ndcg_at_10=ndcg / count, recall_at_100=recall / count, mrr_at_10=mrr / count, queries=count
    )


def _check_k(k: int) -> None:
    if k < 1:
        raise InvalidInput(f"cutoff k must be >= 1, got {k}")


def _top_unique(ranked: Sequence[str], k: int) -> list[str]:
    """The first k distinct doc ids of ``ranked``, in order."""
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranked:
        if doc_id not in seen:
            seen.add(doc_id)
            top.append(doc_id)
            if len(top) == k:
                break
    return top


def _dcg(gains: Sequence[int]) -> float:
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
