"""``autorag eval beir``: index a BEIR corpus into a throwaway workspace and score it."""

from __future__ import annotations

import hashlib
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autorag.context import AppContext, open_context
from autorag.embeddings.cache import CachedEmbedder
from autorag.eval.beir import BeirDataset, BeirDoc
from autorag.eval.metrics import percentile, score_run
from autorag.ingest.pipeline import IngestItem, IngestOutcome, embedding_text
from autorag.models import ParsedDocument, SearchResponse, Segment
from autorag.retrieval.hybrid import SearchMode, SearchRequest
from autorag.store.catalog.repository import DocumentMeta
from autorag.workspace import init_workspace

_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
RAW_SAMPLE = 512  # chunks embedded directly, uncached, to measure raw model throughput


@dataclass
class ModeResult:
    mode: str
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_p50_ms: float
    latency_p95_ms: float
    embed_p50_ms: float  # the query's own embedding time (0 for fts)
    search_p50_ms_beyond_embedding: float
    # An interactive search (k=10 chunks), timed separately from the k=100 runs above.
    k10_p50_ms: float
    k10_p50_ms_beyond_embedding: float


@dataclass
class EvalReport:
    dataset: str
    split: str
    documents: int
    queries: int
    chunks: int
    embedding_model: str
    ingest_seconds: float
    ingest_chunks_per_s: float
    raw_embed_chunks_per_s: float
    embedding_cache_hits: int
    embedding_cache_misses: int
    modes: list[ModeResult] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


def source_id_for(dataset: str, doc_id: str) -> str:
    """BEIR documents are datasource records: ``/beir/<dataset>/<doc-id>`` (seed 000)."""
    return f"/beir/{dataset}/{doc_id}"


def _item(dataset: str, doc: BeirDoc) -> IngestItem:
    text = doc.text
    meta = DocumentMeta(
        source_id=source_id_for(dataset, doc.doc_id),
        doc_type="txt",
        title=doc.title,
        size=len(text.encode()),
        mtime_ns=0,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        doc_date=_EPOCH,
        origin="datasource",
    )
    parsed = ParsedDocument([Segment(text)], title=doc.title, doc_type="txt")
    return IngestItem(meta, parsed=parsed)


def run_beir(
    dataset: BeirDataset,
    *,
    split: str,
    modes: Sequence[SearchMode],
    workdir: Path | None = None,
    cold: bool = False,
    overrides: dict[str, Any] | None = None,
    on_ingest: Callable[[IngestOutcome], None] | None = None,
    on_query: Callable[[], None] | None = None,
) -> EvalReport:
    with beir_workspace(dataset, workdir=workdir, cold=cold, overrides=overrides) as app:
        return _evaluate(app, dataset, split, modes, on_ingest, on_query)


def workspace_name(dataset: BeirDataset) -> str:
    """The workspace a BEIR corpus is indexed into."""
    return f"beir-{dataset.name}"


@contextmanager
def beir_workspace(
    dataset: BeirDataset,
    *,
    workdir: Path | None = None,
    cold: bool = False,
    overrides: dict[str, Any] | None = None,
) -> Iterator[AppContext]:
    """A context on the dataset's workspace in ``workdir`` (default: a throwaway folder,
    deleted on exit). Nothing is indexed yet: see ``index_corpus``."""
    with tempfile.TemporaryDirectory(prefix="autorag-eval-") as scratch:
        root = workdir or Path(scratch)
        app = open_context(
            init_workspace(root), workspace=workspace_name(dataset), **(overrides or {})
        )
        app.read_embedding_cache = not cold
        try:
            yield app
        finally:
            app.close()


def index_corpus(
    app: AppContext,
    dataset: BeirDataset,
    on_ingest: Callable[[IngestOutcome], None] | None = None,
) -> float:
    """Index every corpus document as a datasource record; the seconds it took."""
    started = time.perf_counter()
    app.indexer.index((_item(dataset.name, d) for d in dataset.corpus), on_ingest)
    app.vectors.optimize()
    return time.perf_counter() - started


def _evaluate(
    app: AppContext,
    dataset: BeirDataset,
    split: str,
    modes: Sequence[SearchMode],
    on_ingest: Callable[[IngestOutcome], None] | None,
    on_query: Callable[[], None] | None,
) -> EvalReport:
    embedder = app.embedder
    ingest_seconds = index_corpus(app, dataset, on_ingest)
    chunks = app.catalog.chunk_count(app.info.id)
    report = EvalReport(
        dataset=dataset.name,
        split=split,
        documents=len(dataset.corpus),
        queries=len(dataset.qrels),
        chunks=chunks,
        embedding_model=embedder.model_id,
        ingest_seconds=ingest_seconds,
        ingest_chunks_per_s=chunks / ingest_seconds if ingest_seconds else 0.0,
        raw_embed_chunks_per_s=_raw_throughput(app),
        embedding_cache_hits=getattr(embedder, "hits", 0),
        embedding_cache_misses=getattr(embedder, "misses", 0),
        settings=app.settings.search.model_dump(),
    )
    for mode in modes:
        report.modes.append(_score_mode(app, dataset, mode, on_query))
    return report


def _raw_throughput(app: AppContext) -> float:
    """The model's own speed on a random sample of this corpus's chunks, bypassing caches."""
    embedder = app.embedder
    provider = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    batches = list(app.catalog.iter_chunks(app.info.id))
    rows = [row for batch in batches for row in batch]
    sample = random.Random(0).sample(rows, min(RAW_SAMPLE, len(rows)))
    texts = [embedding_text(r.title, r.text) for r in sample]
    if not texts:
        return 0.0
    provider.embed(texts[:8])  # warm-up: first calls pay one-off costs
    started = time.perf_counter()
    provider.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def _score_mode(
    app: AppContext,
    dataset: BeirDataset,
    mode: SearchMode,
    on_query: Callable[[], None] | None,
) -> ModeResult:
    prefix = source_id_for(dataset.name, "")
    run: dict[str, list[str]] = {}
    deep = _Timings()
    interactive = _Timings()
    for query_id in dataset.qrels:
        text = dataset.queries[query_id]
        request = SearchRequest(text, k=100, mode=mode, per_document=True)
        response = deep.timed(app, request)
        run[query_id] = [h.source_id.removeprefix(prefix) for h in response.hits]
        interactive.timed(app, SearchRequest(text, k=10, mode=mode))
        if on_query:
            on_query()
    scores = score_run(run, dataset.qrels)
    return ModeResult(
        mode=mode,
        ndcg_at_10=scores.ndcg_at_10,
        recall_at_100=scores.recall_at_100,
        mrr_at_10=scores.mrr_at_10,
        latency_p50_ms=percentile(deep.totals, 50),
        latency_p95_ms=percentile(deep.totals, 95),
        embed_p50_ms=percentile(deep.embeds, 50),
        search_p50_ms_beyond_embedding=percentile(deep.beyond, 50),
        k10_p50_ms=percentile(interactive.totals, 50),
        k10_p50_ms_beyond_embedding=percentile(interactive.beyond, 50),
    )


@dataclass
class _Timings:
    totals: list[float] = field(default_factory=list)
    embeds: list[float] = field(default_factory=list)
    beyond: list[float] = field(default_factory=list)

    def timed(self, app: AppContext, request: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        response = app.searcher.search(request)
        total = (time.perf_counter() - started) * 1000
        embed = response.timings_ms.get("embed_ms", 0.0)
        self.totals.append(total)
        self.embeds.append(embed)
        self.beyond.append(total - embed)
        return response
