"""Benchmark: an archive's search (``PageIndex.search``, what ``wiki_query`` waits for)
over 10,000 generated pages, beyond the embedding of the query.

Run with ``pytest -m bench -s tests/bench/test_wiki_search_bench.py`` (never in the normal
suite). The pages (about 300 characters: one chunk each) are saved through the wiki
service (links parsed, versions kept), then indexed in one go with ``PageIndex.put_many``
(the model embeds 10,000 pages: minutes on 2 cores); then timed searches in each mode,
their queries embedded ahead by the same model (so the timed search spends nothing in
it): the figure is what the stores (catalog, full-text, vectors), the fusion and the
page mapping cost. SQLite + LanceDB, the default; ``AUTORAG_BENCH_WIKI_PAGES`` sets
another size for a smoke run.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autorag.context import AppContext, open_context
from autorag.embeddings.base import Vectors
from autorag.embeddings.cache import CachedEmbedder
from autorag.eval.metrics import percentile
from autorag.wiki.indexing import PageIndex
from autorag.wiki.models import Archive
from autorag.wiki.service import WikiService
from tests.workspaces import new_workspace

pytestmark = pytest.mark.bench

PAGES = int(os.environ.get("AUTORAG_BENCH_WIKI_PAGES", 10_000))
QUERIES = 200  # timed per mode, after WARMUP untimed ones
WARMUP = 20
K = 10
GOAL_P95_MS = 100.0  # hybrid, beyond the query's embedding


class PreEmbedded:
    """The real model, with the queries' vectors computed ahead: a timed search then
    spends nothing in the model, and what is measured is the rest of it."""

    def __init__(self, embedder: CachedEmbedder, queries: list[str]) -> None:
        self._inner: Any = embedder.inner
        self._embed = self._inner.embed
        started = time.perf_counter()
        self.vectors = dict(zip(queries, self._embed(queries), strict=True))
        self.seconds_each = (time.perf_counter() - started) / len(queries)

    def __enter__(self) -> PreEmbedded:
        def embed(texts: Sequence[str]) -> Vectors:
            if all(t in self.vectors for t in texts):
                return np.stack([self.vectors[t] for t in texts])
            return self._embed(texts)

        self._inner.embed = embed
        self._inner.embed_query = lambda text: embed([text]).reshape(-1)
        return self

    def __exit__(self, *exc: object) -> None:
        del self._inner.embed, self._inner.embed_query  # the class's methods again


def _vocabulary() -> list[str]:
    """Ordinary English words (mostly one token each for the model): the README's."""
    readme = Path(__file__).resolve().parents[2] / "README.md"
    return sorted(set(re.findall(r"[a-z]{4,10}", readme.read_text().lower())))


@pytest.fixture(scope="module")
def archive_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppContext, Archive]]:
    app = open_context(new_workspace(tmp_path_factory.mktemp("wiki-bench") / "kb"))
    rng = random.Random(18)
    vocabulary = _vocabulary()
    catalog_only = WikiService(app, index=None)
    archive = catalog_only.create_archive("bench", by="bench")
    started = time.perf_counter()
    for i in range(PAGES):
        title = f"{vocabulary[i % len(vocabulary)].title()} {i}"
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(30, 45)))
        linked = f"{vocabulary[(i + 1) % len(vocabulary)].title()} {i + 1}"
        body = f"{text}.\n\nSee [[{linked}]].\n"
        catalog_only.save_page(
            archive, f"area-{i % 50}/page-{i}", body=body, title=title, base_version=None, by="b"
        )
    saved = time.perf_counter() - started
    pages = [catalog_only.page(archive, s.path) for s in catalog_only.pages(archive)]
    app.embedder.embed_query("load the model")  # not part of the indexing time
    started = time.perf_counter()
    PageIndex(app).put_many(archive, pages)
    indexed = time.perf_counter() - started
    print(f"\n{PAGES} pages: saved in {saved:.0f} s, indexed in {indexed:.0f} s")
    yield app, archive
    app.close()


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector"])
def test_search_over_10k_pages(archive_app: tuple[AppContext, Archive], mode: str) -> None:
    app, archive = archive_app
    embedder = app.embedder
    assert isinstance(embedder, CachedEmbedder)
    index = PageIndex(app)
    wiki = WikiService(app)
    rng = random.Random(mode)
    pages = wiki.pages(archive)
    queries = []
    for _ in range(WARMUP + QUERIES):
        words = wiki.page(archive, rng.choice(pages).path).body.split()
        start = rng.randrange(0, max(1, len(words) - 8))
        queries.append(" ".join(words[start : start + 4]).strip("."))
    timed: list[float] = []
    found = 0
    with PreEmbedded(embedder, queries) as pre:
        for n, query in enumerate(queries):
            started = time.perf_counter()
            hits = index.search(archive, query, k=K, mode=mode)
            elapsed = (time.perf_counter() - started) * 1000
            if n >= WARMUP:
                timed.append(elapsed)
                found += bool(hits)
    p50, p95 = percentile(timed, 50), percentile(timed, 95)
    print(
        f"\n{mode}: {QUERIES} searches over {PAGES} pages, k={K}, beyond the query's "
        f"embedding: p50 {p50:.1f} ms, p95 {p95:.1f} ms (goal ≤ {GOAL_P95_MS:.0f} ms); "
        f"the embedding itself ~{pre.seconds_each * 1000:.1f} ms a query; "
        f"{found} of {QUERIES} found something"
    )
    assert found == QUERIES
    if mode == "hybrid":
        assert p95 <= GOAL_P95_MS
