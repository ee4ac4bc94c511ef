"""``autorag eval``: retrieval benchmarks."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

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
from autorag.eval.chat_bench import (
    DEFAULT_QUERIES,
    PHASES,
    ChatBenchReport,
    run_chat_bench,
)
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
    fusion: Annotated[
        str | None, typer.Option(help="Override search.fusion: rrf | convex.")
    ] = None,
    rrf_k: Annotated[int | None, typer.Option(help="Override search.rrf_k.")] = None,
    vector_weight: Annotated[
        float | None, typer.Option(help="Override search.vector_weight.")
    ] = None,
    fts_weight: Annotated[float | None, typer.Option(help="Override search.fts_weight.")] = None,
    database_url: Annotated[
        str | None,
        typer.Option(help="Catalog database (e.g. postgresql://…); default: embedded SQLite."),
    ] = None,
    vector_store: Annotated[
        str | None,
        typer.Option(help="Override vector_store: lancedb | pgvector | qdrant."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Score retrieval on a BEIR dataset: nDCG@10, Recall@100, MRR@10, latency, throughput."""
    if mode not in _MODES:
        raise InvalidInput(f"unknown mode {mode!r} (known: {', '.join(_MODES)})")
    dataset = load_beir(directory, split=split, max_docs=max_docs)
    search = {
        key: value
        for key, value in (
            ("fusion", fusion),
            ("rrf_k", rrf_k),
            ("vector_weight", vector_weight),
            ("fts_weight", fts_weight),
        )
        if value is not None
    }
    overrides: dict[str, Any] = {"search": search} if search else {}
    if database_url:
        overrides["database_url"] = database_url
    if vector_store:
        overrides["vector_store"] = vector_store
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
    """Benchmark the search endpoint of a real server.

    The overhead over the in-process search, then throughput and latency under concurrent
    clients, closed-loop and at a fixed rate (test-split queries).

    Example: autorag eval api ../shared/data/scifact
    """
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


@app.command("chat")
def chat(
    directory: Annotated[
        Path, typer.Argument(help="BEIR dataset folder (corpus, queries, qrels).")
    ],
    queries: Annotated[
        int, typer.Option(min=1, help="Test-split questions answered on each side.")
    ] = DEFAULT_QUERIES,
    keep: Annotated[
        Path | None, typer.Option(help="Keep the benchmark workspace in this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Benchmark the agent chat with the extractive provider.

    The orchestration overhead per iteration in-process, then the time to the first token
    through the SSE endpoint of a real server (test-split questions, one at a time).

    Example: autorag eval chat ../shared/data/scifact
    """
    dataset = load_beir(directory, split="test")
    answers = 2 * min(queries, len(dataset.queries))
    with Progress(console=console, disable=as_json) as progress:
        ingest = progress.add_task("indexing documents", total=len(dataset.corpus))
        answering = progress.add_task("answering", total=answers, start=False)

        def answered() -> None:
            progress.start_task(answering)
            progress.advance(answering)

        report = run_chat_bench(
            dataset,
            split="test",
            queries=queries,
            workdir=keep,
            on_ingest=lambda _o: progress.advance(ingest),
            on_phase=None if as_json else progress.console.log,
            on_answer=answered,
        )
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    _print_chat_report(report)


def _print_chat_report(report: ChatBenchReport) -> None:
    inside, http = report.in_process, report.http
    table = Table(
        "chat (extractive)",
        "n",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "errors",
        title=f"{report.dataset} chat: {report.chunks} chunks, {report.cpus} CPUs, "
        f"load average {report.load_average_before[0]:.2f} before",
    )

    def row(name: str, stats: LatencyStats, errors: str = "") -> None:
        p50, p95, p99 = (f"{v:.1f}" for v in (stats.p50_ms, stats.p95_ms, stats.p99_ms))
        table.add_row(name, str(stats.count), p50, p95, p99, errors)

    row("in-process: overhead per iteration", inside.overhead_per_iteration)
    row("in-process: overhead per answer", inside.overhead_per_answer)
    row("in-process: first token", inside.first_token)
    row("in-process: whole answer", inside.answer, str(inside.errors))
    row("HTTP: response headers", http.headers)
    row("HTTP: first token (TTFT)", http.first_token)
    row("HTTP: done", http.done, str(http.errors))
    console.print(table)
    phases = Table("where the time goes (p50 ms)", "in-process", "HTTP")
    for name in PHASES:
        cells = (inside.phases_p50_ms.get(name), http.phases_p50_ms.get(name))
        phases.add_row(name, *("–" if v is None else f"{v:.1f}" for v in cells))
    console.print(phases)
    iterations = ", ".join(f"{n} ×{count}" for n, count in inside.iterations.items())
    console.print(f"iterations per answer: {iterations or 'none'}", highlight=False)
    for name, kinds in (("in-process", inside.error_kinds), ("HTTP", http.error_kinds)):
        if kinds:
            listed = ", ".join(f"{kind} ×{n}" for kind, n in kinds.items())
            console.print(f"{name} errors: {listed}", highlight=False)
    console.print(
        "goals: "
        + "; ".join(
            f"{goal} {'[green]met[/green]' if met else '[red]missed[/red]'}"
            for goal, met in report.goals.items()
        )
    )
