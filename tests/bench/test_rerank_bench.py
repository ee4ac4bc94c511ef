"""Benchmark: what the rerank stage adds to a search, with the HTTP rerank API double
(TEI's shape) on loopback: ``top_n`` = 30 passages of about 300 characters sent, scored
and put back in order, against the same search without the stage.

Run with ``pytest -m bench -s tests/bench/test_rerank_bench.py`` (never in the normal
suite). Full-text searches (no embedding model) over 60 one-chunk files that all match,
so every search reranks 30; the two kinds alternate, 200 timed each after 20 untimed.
The figure is the stage's own cost (the request, the double's scoring, the reorder): a
real cross-encoder or API adds its model's time on top, which is not measured here (no
reranker weights can be downloaded on this machine).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from autorag.context import AppContext, open_context
from autorag.eval.metrics import percentile
from autorag.ingest.minsync import refresh
from autorag.retrieval.hybrid import SearchRequest
from tests.doubles.rerank_server import RerankDouble
from tests.integration.test_event_emission import HashEmbedder
from tests.integration.test_rerank import with_rerank
from tests.workspaces import new_workspace

pytestmark = pytest.mark.bench

FILES = 60
SEARCHES = 200
WARMUP = 20
WORDS = ["tide", "pier", "crane", "rope", "buoy", "anchor", "quay", "dock", "lamp", "fog"]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppContext]:
    root = tmp_path_factory.mktemp("rerank-bench")
    rng = random.Random(23)
    (root / "docs").mkdir()
    for n in range(FILES):
        words = " ".join(rng.choice(WORDS) for _ in range(45))
        (root / "docs" / f"note-{n:03}.txt").write_text(f"Harbour note {n}: {words}.")
    context = open_context(new_workspace(root / "kb", search_paths=[str(root / "docs")]))
    context.__dict__["embedder"] = HashEmbedder()
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
    try:
        yield context
    finally:
        context.close()


def test_rerank_stage_overhead(app: AppContext) -> None:
    with RerankDouble() as server:
        server.prefer("lamp")
        reranking = with_rerank(app, provider="http", url=f"{server.base_url}/rerank", top_n=30)
        request = SearchRequest("harbour", k=10, mode="fts")
        plain_ms: list[float] = []
        reranked_ms: list[float] = []
        stage_ms: list[float] = []
        for n in range(WARMUP + SEARCHES):
            plain = app.searcher.search(request)
            reranked = reranking.searcher.search(request)
            assert reranked.diagnostics == [] and len(reranked.hits) == 10
            assert len(server.requests[-1]["texts"]) == 30
            if n >= WARMUP:
                plain_ms.append(plain.timings_ms["total_ms"])
                reranked_ms.append(reranked.timings_ms["total_ms"])
                stage_ms.append(reranked.timings_ms["rerank_ms"])
    p50_plain, p50_reranked = percentile(plain_ms, 50), percentile(reranked_ms, 50)
    print(
        f"\nrerank stage over {SEARCHES} searches (top_n 30, HTTP double on loopback): "
        f"rerank_ms p50 {percentile(stage_ms, 50):.2f} p95 {percentile(stage_ms, 95):.2f}; "
        f"search total p50 {p50_plain:.2f} ms without, {p50_reranked:.2f} ms with "
        f"(+{p50_reranked - p50_plain:.2f} ms)"
    )
