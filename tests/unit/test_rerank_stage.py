"""The rerank stage's rules with a scripted reranker (the stage is what is tested here;
the real rerankers are in tests/integration/test_rerank*.py), and the llm reranker's
reading of a model's answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from autorag.config import RerankSettings
from autorag.errors import Unavailable
from autorag.models import Diagnostic, SearchHit
from autorag.rerank.llm import parse_order, scores_from_order
from autorag.rerank.stage import RerankStage


@dataclass
class Scripted:
    """Gives ``scores`` (or raises ``error``); remembers what it was sent."""

    scores: Sequence[object] = ()
    error: Exception | None = None
    local: bool = True
    label: str = "scripted reranker"

    def __post_init__(self) -> None:
        self.sent: list[list[str]] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.sent.append(list(passages))
        if self.error is not None:
            raise self.error
        return list(self.scores)  # type: ignore[arg-type]  # the stage must check them


def hit(n: int, source: str = "/docs/a.md") -> SearchHit:
    return SearchHit(
        chunk_id=n, document_id=n, chunk_index=0, source=source, source_id=source, title="",
        doc_type="md", text=f"passage {n}", page=None, paragraph=0, char_start=0,
        score=1.0 / n, legs="fts",
    )  # fmt: skip


def stage(reranker: Scripted, shared: Sequence[str] = (), **settings: Any) -> RerankStage:
    config = RerankSettings(provider="llm", **settings)
    return RerankStage(lambda: reranker, config, lambda: True, lambda _: set(shared))


def run(s: RerankStage, hits: list[SearchHit], k: int = 10) -> tuple[list[int], list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    timings: dict[str, float] = {}
    out = s.apply("q", hits, k, diagnostics, timings)
    assert "rerank_ms" in timings
    return [h.chunk_id for h in out], diagnostics


def test_top_n_reordered_the_rest_follow_scores_stay_with_places() -> None:
    hits = [hit(n) for n in range(1, 6)]
    reranker = Scripted([0.1, 0.9, 0.5])
    diagnostics: list[Diagnostic] = []
    out = stage(reranker, top_n=3).apply("q", hits, 4, diagnostics, {})
    assert [h.chunk_id for h in out] == [2, 3, 1, 4] and diagnostics == []
    assert [h.score for h in out] == [h.score for h in hits[:4]]
    assert reranker.sent == [["passage 1", "passage 2", "passage 3"]]


def test_ties_keep_the_first_stage_order() -> None:
    assert run(stage(Scripted([1.0, 2.0, 1.0, 2.0])), [hit(n) for n in range(1, 5)])[0] == [
        2, 4, 1, 3,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("reranker", "code"),
    [
        (Scripted(error=Unavailable("server down")), "rerank_failed"),
        (Scripted(error=ZeroDivisionError()), "rerank_failed"),  # a bug is no crash
        (Scripted([1.0]), "rerank_failed"),  # too few scores
        (Scripted([1.0, float("nan"), 0.0]), "rerank_failed"),
        (Scripted([1.0, "high", 0.0]), "rerank_failed"),
    ],
)
def test_failures_keep_the_first_stage_order(reranker: Scripted, code: str) -> None:
    order, diagnostics = run(stage(reranker), [hit(1), hit(2), hit(3)])
    assert order == [1, 2, 3]
    assert [(d.code, d.severity) for d in diagnostics] == [(code, "warning")]


def test_a_hosted_reranker_sees_only_shared_sources_which_move_among_their_places() -> None:
    hits = [
        hit(1, "/docs/private/a"),
        hit(2, "/docs/x"),
        hit(3, "/docs/private/b"),
        hit(4, "/docs/y"),
    ]
    reranker = Scripted([0.0, 1.0], local=False)
    order, diagnostics = run(stage(reranker, ["/docs/x", "/docs/y"]), hits)
    assert reranker.sent == [["passage 2", "passage 4"]]
    assert order == [1, 4, 3, 2]
    assert [d.code for d in diagnostics] == ["rerank_withheld"]


def test_one_hit_or_one_shareable_hit_is_not_sent() -> None:
    reranker = Scripted([1.0])
    assert run(stage(reranker), [hit(1)]) == ([1], [])
    hosted = Scripted([1.0], local=False)
    order, diagnostics = run(stage(hosted, ["/docs/x"]), [hit(1), hit(2, "/docs/x")])
    assert order == [1, 2] and hosted.sent == [] and diagnostics[0].code == "rerank_withheld"


def test_passages_are_cut_to_the_limit() -> None:
    long = hit(1)
    long.text = "x" * 500
    reranker = Scripted([0.0, 1.0])
    run(stage(reranker, max_passage_chars=100), [long, hit(2)])
    assert [len(p) for p in reranker.sent[0]] == [100, 9]


@pytest.mark.parametrize(
    ("answer", "order"),
    [
        ('{"order": [3, 1, 2]}', [2, 0, 1]),
        ('```json\n{"order": [2, 3]}\n```', [1, 2]),
        ("[2, 2, 9, 1, true]", [1, 0]),  # repeats, strangers and booleans dropped
        ("3, 1, 2", [2, 0, 1]),
        ("[3] > [1] > [2]", [2, 0, 1]),
        ("Passage 3 is best, then 1", []),  # prose is no order
        ('{"best": 3}', []),
        ("", []),
    ],
)
def test_parse_order(answer: str, order: list[int]) -> None:
    assert parse_order(answer, 3) == order


def test_scores_from_order_put_the_unlisted_after_in_their_order() -> None:
    scores = scores_from_order([2], 4)
    assert sorted(range(4), key=lambda n: -scores[n]) == [2, 0, 1, 3]


def test_settings_need_their_url_or_model() -> None:
    with pytest.raises(ValueError, match=r"needs search\.rerank\.url"):
        RerankSettings(provider="http")
    with pytest.raises(ValueError, match="path of a local model directory"):
        RerankSettings(provider="cross-encoder")
    assert RerankSettings().provider == "none"  # off by default
