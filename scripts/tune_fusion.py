"""Grid-search the fusion settings on a BEIR split (tune on train, report on test).

Indexes the corpus once into a kept workspace, takes each leg's ranking per query once,
then re-fuses in memory for every setting, so a grid of hundreds of points takes seconds.

    .venv/bin/python scripts/tune_fusion.py ../shared/data/scifact --split train
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

from autorag.context import open_context
from autorag.eval.beir import load_beir
from autorag.eval.metrics import score_run
from autorag.eval.runner import _item, source_id_for
from autorag.retrieval.fusion import rrf_fuse
from autorag.retrieval.hybrid import SearchRequest
from autorag.workspace import init_workspace

DEPTH = 300


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="train")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/autorag-tune"))
    parser.add_argument("--title-weights", default="1.0")
    args = parser.parse_args()

    dataset = load_beir(args.dataset, split=args.split)
    for title_weight in [float(w) for w in args.title_weights.split(",")]:
        app = open_context(
            init_workspace(args.workdir),
            workspace=f"tune-{dataset.name}",
            search={"fts_title_weight": title_weight, "candidate_depth": DEPTH},
        )
        if app.catalog.chunk_count(app.info.id) == 0:
            app.indexer.index(_item(dataset.name, d) for d in dataset.corpus)
            app.vectors.optimize()
        prefix = source_id_for(dataset.name, "")
        doc_of: dict[int, str] = {}
        legs: dict[str, dict[str, list[int]]] = {"vector": {}, "fts": {}}
        for query_id in dataset.qrels:
            for mode in ("vector", "fts"):
                hits = app.searcher.search(
                    SearchRequest(dataset.queries[query_id], k=DEPTH, mode=mode)  # type: ignore[arg-type]
                ).hits
                legs[mode][query_id] = [h.chunk_id for h in hits]
                doc_of.update((h.chunk_id, h.source_id.removeprefix(prefix)) for h in hits)

        def run_for(k: int, vw: float, fw: float, depth: int) -> dict[str, list[str]]:
            run: dict[str, list[str]] = {}
            for query_id in dataset.qrels:
                fused = rrf_fuse(
                    {
                        "vector": legs["vector"][query_id][:depth],
                        "fts": legs["fts"][query_id][:depth],
                    },
                    k=k,
                    weights={"vector": vw, "fts": fw},
                )
                ordered = sorted(fused.values(), key=lambda f: -f.score)
                docs: list[str] = []
                for entry in ordered:
                    doc = doc_of[entry.chunk_id]
                    if doc not in docs:
                        docs.append(doc)
                run[query_id] = docs[:100]
            return run

        for mode in ("vector", "fts"):
            single = run_for(60, 1.0 if mode == "vector" else 0.0, 1.0 if mode == "fts" else 0.0, DEPTH)
            s = score_run(single, dataset.qrels)
            print(f"title_weight={title_weight} {mode:6} nDCG@10={s.ndcg_at_10:.4f} R@100={s.recall_at_100:.4f}")
        results = []
        for k, vw, depth in itertools.product(
            (5, 10, 20, 40, 60, 100), (0.5, 0.75, 1.0, 1.25, 1.5, 2.0), (50, 100, 200, 300)
        ):
            s = score_run(run_for(k, vw, 1.0, depth), dataset.qrels)
            results.append((s.ndcg_at_10, s.recall_at_100, k, vw, depth))
        results.sort(reverse=True)
        print(f"title_weight={title_weight}: best hybrid settings (nDCG@10, R@100, rrf_k, vector_weight, depth)")
        for row in results[:10]:
            print("  %.4f %.4f k=%d vw=%.2f depth=%d" % row)
        default = score_run(run_for(60, 1.0, 1.0, 100), dataset.qrels)
        print(f"  default k=60 vw=1 depth=100: {default.ndcg_at_10:.4f} {default.recall_at_100:.4f}")
        app.close()


if __name__ == "__main__":
    main()
