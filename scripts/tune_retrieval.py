"""Tune retrieval on a BEIR split: fusion, leg weights, document scores (tune on train).

Indexes the corpus once into a kept workspace (``--workdir``), takes each leg's ranking
with its scores per query once (cached as JSON beside the workspace), then re-fuses in
memory for every setting, so a grid of hundreds of points takes seconds. Run it on
``--split train`` to choose, then on ``--split test`` only to report the chosen points.

    .venv/bin/python scripts/tune_retrieval.py ../shared/data/scifact --split train
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select

from autorag.config import IngestSettings
from autorag.context import open_context
from autorag.eval.beir import BeirDataset, load_beir
from autorag.eval.metrics import score_run
from autorag.eval.runner import _item, source_id_for
from autorag.models import SearchFilters
from autorag.retrieval.fusion import Fused, convex_fuse, document_scores, rrf_fuse
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.workspace import init_workspace

DEPTH = 300
Legs = dict[str, dict[str, list[tuple[int, float]]]]  # leg -> query -> [(chunk, score)]


def collect_legs(
    dataset: BeirDataset, workdir: Path, search: dict[str, object], ingest: dict[str, int]
) -> tuple[Legs, dict[int, str]]:
    """Each leg's own ranking with its own scores (cosine similarity, negated BM25)."""
    key = json.dumps({**search, **ingest}, sort_keys=True)
    cache = workdir / f"legs-{dataset.name}-{len(dataset.qrels)}-{key}.json"
    if cache.is_file():
        saved = json.loads(cache.read_text())
        return saved["legs"], {int(k): v for k, v in saved["doc_of"].items()}
    # Each chunking gets its own workspace: its chunks are another index.
    chunking = f"{ingest['chunk_size']}-{ingest['chunk_overlap']}"
    app = open_context(
        init_workspace(workdir),
        workspace=f"tune-{dataset.name}-{chunking}",
        search=search,
        ingest=ingest,
    )
    if app.catalog.chunk_count(app.info.id) == 0:
        app.indexer.index(_item(dataset.name, d) for d in dataset.corpus)
        app.vectors.optimize()
    prefix = source_id_for(dataset.name, "")
    with app.catalog.engine.connect() as conn:
        rows = conn.execute(
            select(ChunkRow.id, DocumentRow.source_id)
            .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
            .where(DocumentRow.workspace_id == app.info.id)
        )
        doc_of = {chunk: source.removeprefix(prefix) for chunk, source in rows}
    legs: Legs = {"vector": {}, "fts": {}}
    nothing = SearchFilters()
    for query_id in dataset.qrels:
        query = dataset.queries[query_id]
        vector = app.embedder.embed_query(query)
        legs["vector"][query_id] = app.vectors.search(vector, depth=DEPTH, filters=nothing)
        legs["fts"][query_id] = app.fulltext.search(
            app.info.id, query, depth=DEPTH, filters=nothing
        )
    app.close()
    cache.write_text(json.dumps({"legs": legs, "doc_of": doc_of}))
    return legs, doc_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/autorag-tune"))
    parser.add_argument("--title-weight", type=float, default=1.0)
    defaults = IngestSettings()  # the product's chunking, so the grids start from it
    parser.add_argument(
        "--chunk-size", type=int, default=defaults.chunk_size, help="ingest.chunk_size"
    )
    parser.add_argument(
        "--overlap", type=int, default=defaults.chunk_overlap, help="ingest.chunk_overlap"
    )
    args = parser.parse_args()

    dataset = load_beir(args.dataset, split=args.split)
    search = {"fts_title_weight": args.title_weight, "candidate_depth": DEPTH}
    ingest = {"chunk_size": args.chunk_size, "chunk_overlap": args.overlap}
    legs, doc_of = collect_legs(dataset, args.workdir, search, ingest)

    def run_for(fuse: Callable[[str], dict[int, Fused]], decay: float) -> dict[str, list[str]]:
        run: dict[str, list[str]] = {}
        for query_id in dataset.qrels:
            fused = fuse(query_id)
            ranked = document_scores(fused, {c: doc_of[c] for c in fused}, decay=decay)
            run[query_id] = ranked[:100]
        return run

    def rrf(k: int, vw: float, depth: int) -> Callable[[str], dict[int, Fused]]:
        def fuse(query_id: str) -> dict[int, Fused]:
            ranked = {m: [c for c, _ in legs[m][query_id][:depth]] for m in ("vector", "fts")}
            return rrf_fuse(ranked, k=k, weights={"vector": vw, "fts": 1.0})

        return fuse

    def convex(alpha: float, depth: int) -> Callable[[str], dict[int, Fused]]:
        def fuse(query_id: str) -> dict[int, Fused]:
            scored = {m: legs[m][query_id][:depth] for m in ("vector", "fts")}
            return convex_fuse(scored, weights={"vector": alpha, "fts": 1.0 - alpha})

        return fuse

    def report(
        label: str, fuse: Callable[[str], dict[int, Fused]], decay: float
    ) -> tuple[float, float]:
        s = score_run(run_for(fuse, decay), dataset.qrels)
        scores = f"nDCG@10={s.ndcg_at_10:.4f} R@100={s.recall_at_100:.4f}"
        print(f"  {label:48} {scores} MRR@10={s.mrr_at_10:.4f}")
        return s.ndcg_at_10, s.recall_at_100

    queries = len(dataset.qrels)
    print(f"{dataset.name} {args.split}: {queries} queries, title_weight={args.title_weight}")
    report("vector only", convex(1.0, DEPTH), 0.0)
    report("fts only", convex(0.0, DEPTH), 0.0)
    report("default: rrf k=60 w=1/1 depth=100 max", rrf(60, 1.0, 100), 0.0)
    results = []
    for k, vw, depth, decay in itertools.product(
        (10, 20, 30, 60, 100), (0.75, 1.0, 1.25, 1.5), (100, 300), (0.0, 0.1, 0.3)
    ):
        s = score_run(run_for(rrf(k, vw, depth), decay), dataset.qrels)
        results.append(
            (s.ndcg_at_10, s.recall_at_100, f"rrf k={k} vw={vw} depth={depth} decay={decay}")
        )
    for alpha, depth, decay in itertools.product(
        (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7), (100, 300), (0.0, 0.1, 0.3)
    ):
        s = score_run(run_for(convex(alpha, depth), decay), dataset.qrels)
        results.append(
            (s.ndcg_at_10, s.recall_at_100, f"convex alpha={alpha} depth={depth} decay={decay}")
        )
    results.sort(reverse=True)
    print("best (nDCG@10, R@100, setting):")
    for row in results[:15]:
        print(f"  {row[0]:.4f} {row[1]:.4f} {row[2]}")
    for decay in (0.0, 0.1, 0.3):
        ranked_k60 = [
            r for r in results if r[2].startswith(f"rrf k=60 vw=1.0 depth=100 decay={decay}")
        ]
        print("  k=60 default depth, decay", decay, ranked_k60[0][:2] if ranked_k60 else "")


if __name__ == "__main__":
    main()
