"""``autorag eval``: retrieval benchmarks."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from autorag.cli._common import console, print_json
from autorag.errors import InvalidInput
from autorag.eval.beir import load_beir
from autorag.eval.runner import EvalReport, run_beir
from autorag.retrieval.hybrid import SearchMode

app = typer.Typer(help="Retrieval benchmarks.", no_args_is_help=True)
_MODES: dict[str, list[SearchMode]] = {
    "all": ["hybrid", "fts", "vector"],
    "hybrid": ["hybrid"],
    "fts": ["fts"],
    "vector": ["vector"],
}


@app.command("beir")
def beir(
    directory: Annotated[
        Path, typer.Argument(help="BEIR dataset folder (corpus, queries, qrels).")
    ],
    mode: Annotated[str, typer.Option(help="all | hybrid | fts | vector")] = "all",
    split: Annotated[str, typer.Option(help="qrels split to score (tune on train).")] = "test",
    max_docs: Annotated[
        int | None, typer.Option(help="Index only N docs (plus the judged ones): a smoke run.")
    ] = None,
    cold: Annotated[
        bool, typer.Option("--cold", help="Ignore the embedding cache (measure real ingest).")
    ] = False,
    keep: Annotated[
        Path | None, typer.Option(help="Keep the evaluation workspace in this folder.")
    ] = None,
    rrf_k: Annotated[int | None, typer.Option(help="Override search.rrf_k.")] = None,
    vector_weight: Annotated[
        float | None, typer.Option(help="Override search.vector_weight.")
    ] = None,
    fts_weight: Annotated[float | None, typer.Option(help="Override search.fts_weight.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Score retrieval on a BEIR dataset: nDCG@10, Recall@100, MRR@10, latency, throughput."""
    if mode not in _MODES:
        raise InvalidInput(f"unknown mode {mode!r} (known: {', '.join(_MODES)})")
    dataset = load_beir(directory, split=split, max_docs=max_docs)
    search = {
        key: value
        for key, value in (
            ("rrf_k", rrf_k),
            ("vector_weight", vector_weight),
            ("fts_weight", fts_weight),
        )
        if value is not None
    }
    overrides = {"search": search} if search else {}
    with Progress(console=console, disable=as_json) as progress:
        ingest = progress.add_task("indexing documents", total=len(dataset.corpus))
        queries = progress.add_task(
            "running queries", total=len(dataset.qrels) * len(_MODES[mode]), start=False
        )
        report = run_beir(
            dataset,
            split=split,
            modes=_MODES[mode],
            workdir=keep,
            cold=cold,
            overrides=overrides,
            on_ingest=lambda _o: progress.advance(ingest),
            on_query=lambda: progress.advance(queries),
        )
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    _print_report(report)


def _print_report(report: EvalReport) -> None:
    table = Table(
        "mode",
        "nDCG@10",
        "R@100",
        "MRR@10",
        "p50 ms",
        "p95 ms",
        "embed",
        "−embed",
        "k10 −embed",
        title=f"{report.dataset} ({report.split}: {report.queries} queries, "
        f"{report.documents} docs, {report.chunks} chunks)",
    )
    for m in report.modes:
        table.add_row(
            m.mode,
            f"{m.ndcg_at_10:.4f}",
            f"{m.recall_at_100:.4f}",
            f"{m.mrr_at_10:.4f}",
            f"{m.latency_p50_ms:.1f}",
            f"{m.latency_p95_ms:.1f}",
            f"{m.embed_p50_ms:.1f}",
            f"{m.search_p50_ms_beyond_embedding:.1f}",
            f"{m.k10_p50_ms_beyond_embedding:.1f}",
        )
    console.print(table)
    ratio = (
        report.ingest_chunks_per_s / report.raw_embed_chunks_per_s
        if report.raw_embed_chunks_per_s
        else 0
    )
    console.print(
        f"ingest: {report.ingest_chunks_per_s:.1f} chunks/s in {report.ingest_seconds:.1f} s; "
        f"raw embedding: {report.raw_embed_chunks_per_s:.1f} chunks/s ({ratio:.0%}); "
        f"cache hits {report.embedding_cache_hits}, misses {report.embedding_cache_misses} "
        f"({report.embedding_model})"
    )
