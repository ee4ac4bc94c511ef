"""Concurrent searches embed their queries together, each getting its own vector."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from autorag.embeddings.base import Vectors
from autorag.embeddings.cache import CachedEmbedder, EmbeddingCache
from autorag.retrieval.query_batcher import QueryBatcher

DIM = 3


def vector_of(text: str) -> Vectors:
    return np.array([len(text), ord(text[0]), ord(text[-1])], dtype=np.float32)


class GatedModel:
    """Records its calls; while ``gate`` is closed, the first call waits at it."""

    provider = "test"
    model = "gated"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.gate = threading.Event()
        self.fail_on: str | None = None

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run("embed", list(texts))

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._run("embed_query", [text])[0]
        return row

    def _run(self, kind: str, texts: list[str]) -> Vectors:
        self.calls.append((kind, texts))
        if len(self.calls) == 1:
            assert self.gate.wait(10)
        if self.fail_on in texts:
            raise RuntimeError(f"cannot embed {self.fail_on!r}")
        return np.stack([vector_of(t) for t in texts])


def wait_until_queued(batcher: QueryBatcher, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(batcher._queue) < count:  # white box: when the waiters are all queued
        assert time.monotonic() < deadline, "waiters never queued"
        time.sleep(0.001)


def test_a_query_alone_is_embedded_as_a_query() -> None:
    model = GatedModel()
    model.gate.set()
    batcher = QueryBatcher(model)
    assert np.array_equal(batcher.embed_query("tides"), vector_of("tides"))
    assert model.calls == [("embed_query", ["tides"])]


def test_queries_waiting_behind_a_call_share_one_batch() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model)
    texts = ["first", "b", "cc", "ddd", "eeee"]
    with ThreadPoolExecutor(len(texts)) as pool:
        first = pool.submit(batcher.embed_query, texts[0])
        while not model.calls:  # the first call leads, and holds the model at the gate
            time.sleep(0.001)
        rest = [pool.submit(batcher.embed_query, t) for t in texts[1:]]
        wait_until_queued(batcher, len(texts) - 1)
        model.gate.set()
        results = [first.result(), *(f.result() for f in rest)]
    for text, vector in zip(texts, results, strict=True):
        assert np.array_equal(vector, vector_of(text))
    assert [kind for kind, _ in model.calls] == ["embed_query", "embed"]
    assert sorted(model.calls[1][1]) == sorted(texts[1:])


def test_batches_are_capped() -> None:
    model = GatedModel()
    batcher = QueryBatcher(model, max_batch=2)
    with ThreadPoolExecutor(6) as pool:
        first = pool.submit(batcher.embed_query, "first")
        while not model.calls:
            time.sleep(0.001)
        rest = [pool.submit(batcher.embed_query, f"q{i}") for i in range(5)]
        wait_until_queued(batcher, 5)
        model.gate.set()
        assert np.array_equal(first.result(), vector_of("first"))
        for i, future in enumerate(rest):
            assert np.array_equal(future.result(), vector_of(f"q{i}"))
    assert [len(texts) for _, texts in model.calls] == [1, 2, 2, 1]


def test_a_failed_batch_fails_its_callers_only_and_the_lead_moves_on() -> None:
    model = GatedModel()
    model.fail_on = "bad"
    batcher = QueryBatcher(model, max_batch=2)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.embed_query, "first")
        while not model.calls:
            time.sleep(0.001)
        doomed = [pool.submit(batcher.embed_query, t) for t in ("bad", "x")]
        wait_until_queued(batcher, 2)
        later = pool.submit(batcher.embed_query, "later")
        wait_until_queued(batcher, 3)
        model.gate.set()
        assert np.array_equal(first.result(), vector_of("first"))
        for future in doomed:
            with pytest.raises(RuntimeError, match="cannot embed 'bad'"):
                future.result()
        assert np.array_equal(later.result(), vector_of("later"))
    assert np.array_equal(batcher.embed_query("after"), vector_of("after"))


def test_a_batch_of_queries_bypasses_the_content_cache(tmp_path: Path) -> None:
    model = GatedModel()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    embedder = CachedEmbedder(model, cache)
    batcher = QueryBatcher(embedder)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(batcher.embed_query, "first")
        while not model.calls:
            time.sleep(0.001)
        rest = [pool.submit(batcher.embed_query, t) for t in ("a", "b")]
        wait_until_queued(batcher, 2)
        model.gate.set()
        assert [f.result()[0] for f in (first, *rest)] == [5, 1, 1]
    assert [kind for kind, _ in model.calls] == ["embed_query", "embed"]
    assert cache.stats().entries == 0  # queries are never stored
    assert (embedder.hits, embedder.misses) == (0, 0)
    cache.close()


def test_many_threads_each_get_their_own_vector() -> None:
    model = GatedModel()
    model.gate.set()
    batcher = QueryBatcher(model, max_batch=4)
    texts = [f"query {i} ends with {chr(97 + i % 26)}" for i in range(200)]
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(batcher.embed_query, texts))
    for text, vector in zip(texts, results, strict=True):
        assert np.array_equal(vector, vector_of(text))
    assert sum(len(texts) for _, texts in model.calls) == len(texts)
    assert not batcher._queue and not batcher._busy
