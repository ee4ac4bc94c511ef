from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

from autorag.errors import InvalidInput
from autorag.eval.metrics import (
    RetrievalScores,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
    score_run,
)


def test_ndcg_perfect_ranking_is_one() -> None:
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}, 10) == pytest.approx(1.0)


def test_ndcg_graded_relevance_by_hand() -> None:
    relevant = {"a": 2, "b": 1, "c": 1}
    # DCG: x at rank 0 gains 0, a (2) at rank 1, b (1) at rank 2.
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    # Ideal: grades 2, 1, 1 at ranks 0, 1, 2.
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(["x", "a", "b"], relevant, 3) == pytest.approx(dcg / ideal)
    assert dcg / ideal == pytest.approx(0.562727, abs=1e-6)


def test_ndcg_ideal_is_cut_at_k() -> None:
    # Only one slot: the ideal list is [2], so ranking the grade-1 doc first scores 1/2.
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 1) == pytest.approx(0.5)


def test_ndcg_counts_a_duplicate_only_once() -> None:
    # Top-2 distinct docs are a, b: a perfect ranking, not a counted twice.
    assert ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)
    # The repeat of a does not push b out of the cutoff either.
    assert ndcg_at_k(["x", "x", "a"], {"a": 1}, 2) == pytest.approx(1 / math.log2(3))


def test_ndcg_zero_grades_are_not_relevant() -> None:
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    assert ndcg_at_k(["a"], {}, 10) == 0.0


def test_recall_at_k_by_hand() -> None:
    relevant = {"a": 1, "b": 2, "c": 1, "d": 0}
    assert recall_at_k(["a", "x", "b", "c"], relevant, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "a", "a", "b"], relevant, 2) == pytest.approx(2 / 3)
    assert recall_at_k(["d"], relevant, 10) == 0.0
    assert recall_at_k(["a"], {}, 10) == 0.0


def test_mrr_at_k_by_hand() -> None:
    relevant = {"a": 1, "b": 1}
    assert mrr_at_k(["x", "y", "b", "a"], relevant, 10) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "b"], relevant, 2) == 0.0
    assert mrr_at_k(["x", "x", "a"], relevant, 2) == pytest.approx(1 / 2)
    assert mrr_at_k(["z"], {"z": 0}, 10) == 0.0


@pytest.mark.parametrize("metric", [ndcg_at_k, recall_at_k, mrr_at_k])
def test_cutoff_must_be_positive(
    metric: Callable[[Sequence[str], Mapping[str, int], int], float],
) -> None:
    with pytest.raises(InvalidInput):
        metric(["a"], {"a": 1}, 0)


@pytest.mark.parametrize(
    ("p", "expected"), [(0, 1.0), (50, 2.5), (90, 3.7), (100, 4.0), (25, 1.75)]
)
def test_percentile_interpolates_linearly(p: float, expected: float) -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], p) == pytest.approx(expected)


def test_percentile_matches_numpy_default() -> None:
    values = [0.3, 12.0, 7.5, 7.5, -2.0, 40.0, 1.25]
    for p in (0, 5, 33.3, 50, 95, 99, 100):
        assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)))


def test_percentile_single_value_and_errors() -> None:
    assert percentile([5.0], 95) == 5.0
    with pytest.raises(InvalidInput):
        percentile([], 50)
    with pytest.raises(InvalidInput):
        percentile([1.0], 101)


def test_score_run_averages_over_judged_queries() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1, "d": 1}}
    run = {
        "q1": ["a"],  # ndcg 1, recall 1, mrr 1
        "q3": ["x", "c"],  # ndcg (1/log2 3) / (1 + 1/log2 3), recall 1/2, mrr 1/2
        "unjudged": ["a"],  # ignored
    }  # q2 is missing from the run: scores 0
    ndcg_q3 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    scores = score_run(run, qrels)
    assert isinstance(scores, RetrievalScores)
    assert scores.queries == 3
    assert scores.ndcg_at_10 == pytest.approx((1 + ndcg_q3) / 3)
    assert scores.recall_at_100 == pytest.approx(1.5 / 3)
    assert scores.mrr_at_10 == pytest.approx(1.5 / 3)


def test_score_run_cutoffs_are_10_and_100() -> None:
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    scores = score_run({"q": ranked}, {"q": {"a": 1}})
    assert (scores.ndcg_at_10, scores.mrr_at_10, scores.recall_at_100) == (0.0, 0.0, 1.0)


def test_score_run_needs_judged_queries() -> None:
    with pytest.raises(InvalidInput):
        score_run({"q": ["a"]}, {})
