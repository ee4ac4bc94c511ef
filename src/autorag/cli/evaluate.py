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
from autorag.eval.api_bench import (
    GOAL_THROUGHPUT_PER_S,
    ApiBenchReport,
    LatencyStats,
    LoadResult,
    run_api_bench,
)
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


@app.command("api")
def api(
    directory: Annotated[
        Path, typer.Argument(help="BEIR dataset folder (corpus, queries, qrels).")
    ],
    clients: Annotated[
        int, typer.Option(min=1, max=200, help="Concurrent clients in the load test.")
    ] = 20,
    duration: Annotated[
        float, typer.Option(min=1, max=3600, help="Seconds each load test lasts.")
    ] = 20.0,
    rate: Annotated[
        float,
        typer.Option(
            min=0, help="Searches/s the paced load test holds (the goal's 40; 0: skip it)."
        ),
    ] = GOAL_THROUGHPUT_PER_S,
    keep: Annotated[
        Path | None, typer.Option(help="Keep the benchmark workspace in this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Benchmark the search endpoint on a real server: overhead over the in-process search,
    then throughput and latency under concurrent clients, closed-loop and at a fixed rate
    (test-split queries)."""
    dataset = load_beir(directory, split="test")
    with Progress(console=console, disable=as_json) as progress:
        ingest = progress.add_task("indexing documents", total=len(dataset.corpus))
        report = run_api_bench(
            dataset,
            split="test",
            clients=clients,
            duration_s=duration,
            rate=rate or None,
            workdir=keep,
            on_ingest=lambda _o: progress.advance(ingest),
            on_phase=None if as_json else progress.console.log,
        )
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    _print_api_report(report)


def _print_api_report(report: ApiBenchReport) -> None:
    overhead = report.overhead
    table = Table(
        "search",
        "n",
        "per s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        title=f"{report.dataset} search API: {report.chunks} chunks, {report.cpus} CPUs, "
        f"load average {report.load_average_before[0]:.2f} before",
    )

    def row(name: str, stats: LatencyStats, rate: str = "", errors: str = "") -> None:
        p50, p95, p99 = (f"{v:.1f}" for v in (stats.p50_ms, stats.p95_ms, stats.p99_ms))
        table.add_row(name, str(stats.count), rate, p50, p95, p99, errors)

    def load_row(name: str, load: LoadResult) -> None:
        row(name, load.latency, f"{load.throughput_per_s:.1f}", str(load.errors))

    row("in-process, one by one", overhead.in_process)
    row("endpoint, one by one", overhead.endpoint)
    load_row(f"endpoint, {report.load.clients} clients", report.load)
    if report.paced is not None:
        paced = report.paced
        load_row(f"endpoint, {paced.clients} at {paced.target_rate_per_s:g}/s", paced)
    console.print(table)
    console.print(
        f"overhead p50: {overhead.overhead_p50_ms:.1f} ms (endpoint p50 − in-process p50); "
        f"paired {overhead.paired_overhead_p50_ms:.1f} ms; beyond the server's own search "
        f"({overhead.server_search_p50_ms:.1f} ms p50): "
        f"{overhead.beyond_server_search_p50_ms:.1f} ms"
    )
    for load in (report.load, report.paced):
        if load is None:
            continue
        name = f"at {load.target_rate_per_s:g}/s" if load.target_rate_per_s else "closed loop"
        if load.cpu is not None:
            cpu = load.cpu
            console.print(
                f"{name}: server {cpu.server_cpu_ms_per_search:.1f} ms CPU per search, "
                f"{cpu.server_cores:.2f} cores; load generator {cpu.client_cores:.2f}; "
                f"other processes {cpu.other_cores:.2f}",
                highlight=False,
            )
        if load.error_kinds:
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in load.error_kinds.items())
            console.print(f"{name} errors: {kinds}", highlight=False)
    console.print(
        "goals: "
        + "; ".join(
            f"{goal} {'[green]met[/green]' if met else '[red]missed[/red]'}"
            for goal, met in report.goals.items()
        )
    )
