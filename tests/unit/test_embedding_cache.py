"""The persistent embedding cache and the provider wrapper that consults it."""

from __future__ import annotations

import hashlib
import logging
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from autorag.embeddings.base import EmbeddingProvider, Vectors
from autorag.embeddings.cache import (
    CachedEmbedder,
    EmbeddingCache,
    content_hash,
    default_cache_path,
)

DIM = 16
KIB = 1024


class WordHashModel:
    """A tiny deterministic embedding model: each word adds weight to one of 16 buckets.

    Texts sharing words get similar vectors, and it records every batch it is asked
    to embed, which is what the cache tests observe.
    """

    provider = "test"
    model = "word-hash-16"

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return np.array([word_hash_vector(text) for text in texts], dtype=np.float32).reshape(
            len(texts), DIM
        )

    def embed_query(self, text: str) -> Vectors:
        self.batches.append([text])
        return word_hash_vector(text)


def word_hash_vector(text: str) -> Vectors:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = 0.5  # so that the empty text has a direction too
    for word in text.lower().split():
        vector[hashlib.sha256(word.encode()).digest()[0] % DIM] += 1.0
    unit: Vectors = vector / np.linalg.norm(vector)
    return unit


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "embeddings.sqlite"


@pytest.fixture
def cache(cache_path: Path) -> EmbeddingCache:
    return EmbeddingCache(cache_path)


def random_items(count: int, *, dim: int = DIM, seed: int = 0) -> dict[str, Vectors]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    return {content_hash(f"text {seed} {i}"): vectors[i] for i in range(count)}


# -- CachedEmbedder ------------------------------------------------------------------


def test_second_embed_is_served_from_the_cache(cache: EmbeddingCache) -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, cache)
    texts = ["the cat sat", "on the mat", "a dog barked"]

    first = embedder.embed(texts)
    second = embedder.embed(texts)

    assert model.batches == [texts]
    assert (embedder.hits, embedder.misses) == (3, 3)
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32
    assert second.shape == (3, DIM)


def test_rows_follow_input_order_across_hits_and_misses(cache: EmbeddingCache) -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, cache)
    embedder.embed(["b b", "d d"])

    texts = ["a", "b b", "c", "d d", "e"]
    vectors = embedder.embed(texts)

    assert model.batches[-1] == ["a", "c", "e"]  # only the misses, in one call
    expected = np.stack([word_hash_vector(text) for text in texts])
    np.testing.assert_allclose(vectors, expected, rtol=0, atol=1e-7)


def test_a_text_repeated_in_one_call_is_embedded_once(cache: EmbeddingCache) -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, cache)

    vectors = embedder.embed(["same text", "other", "same text", "same text"])

    assert model.batches == [["same text", "other"]]
    assert embedder.misses == 2
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[0], vectors[3])


def test_without_a_cache_duplicates_are_still_embedded_once() -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, None)

    embedder.embed(["x", "x", "y"])
    embedder.embed(["x"])

    assert model.batches == [["x", "y"], ["x"]]
    assert (embedder.hits, embedder.misses) == (0, 3)


def test_empty_input_gives_an_empty_matrix(cache: EmbeddingCache) -> None:
    vectors = CachedEmbedder(WordHashModel(), cache).embed([])

    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32


def test_read_cache_false_recomputes_but_still_writes(cache: EmbeddingCache) -> None:
    CachedEmbedder(WordHashModel(), cache).embed(["warm"])
    model = WordHashModel()
    cold = CachedEmbedder(model, cache, read_cache=False)

    cold.embed(["warm", "new"])

    assert model.batches == [["warm", "new"]]
    assert (cold.hits, cold.misses) == (0, 2)
    stored = cache.get_many(model.model_id, [content_hash("new")])
    np.testing.assert_allclose(stored[content_hash("new")], word_hash_vector("new"), atol=1e-7)


def test_queries_bypass_the_cache(cache: EmbeddingCache) -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, cache)

    embedder.embed_query("what is a cat")
    vector = embedder.embed_query("what is a cat")

    assert model.batches == [["what is a cat"], ["what is a cat"]]
    assert vector.shape == (DIM,)
    assert cache.stats().entries == 0
    assert (embedder.hits, embedder.misses) == (0, 0)


def test_models_do_not_share_entries(cache: EmbeddingCache) -> None:
    CachedEmbedder(WordHashModel(), cache).embed(["shared text"])
    other = WordHashModel()
    other.model = "word-hash-other"

    CachedEmbedder(other, cache).embed(["shared text"])

    assert other.batches == [["shared text"]]


def test_cached_embedder_is_an_embedding_provider(cache: EmbeddingCache) -> None:
    model = WordHashModel()
    embedder = CachedEmbedder(model, cache)

    assert isinstance(embedder, EmbeddingProvider)
    assert (embedder.provider, embedder.model, embedder.model_id, embedder.dim) == (
        "test",
        "word-hash-16",
        "test:word-hash-16",
        DIM,
    )


# -- EmbeddingCache --------------------------------------------------------------------


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("héllo") == hashlib.sha256("héllo".encode()).hexdigest()


def test_default_path_is_in_the_user_cache_dir() -> None:
    path = default_cache_path()

    assert path.name == "embeddings.sqlite"
    assert path.parent.name == "autorag"


def test_put_then_get_round_trips_float32(cache: EmbeddingCache) -> None:
    items = random_items(3)

    cache.put_many("m", items)
    found = cache.get_many("m", [*items, "absent"])

    assert set(found) == set(items)
    for key, vector in items.items():
        assert found[key].dtype == np.float32
        np.testing.assert_array_equal(found[key], vector)
    found[next(iter(items))][0] = 42.0  # callers get their own, writable copy


def test_put_replaces_an_existing_entry(cache: EmbeddingCache) -> None:
    key = content_hash("t")
    cache.put_many("m", {key: np.zeros(DIM, dtype=np.float32)})
    cache.put_many("m", {key: np.ones(DIM, dtype=np.float32)})

    np.testing.assert_array_equal(cache.get_many("m", [key])[key], np.ones(DIM))
    assert cache.stats().entries == 1


def test_lookups_larger_than_one_statement(cache: EmbeddingCache) -> None:
    items = random_items(1200)
    cache.put_many("m", items)

    assert len(cache.get_many("m", list(items))) == 1200


def test_stats_and_clear(cache: EmbeddingCache, cache_path: Path) -> None:
    cache.put_many("a", random_items(5, seed=1))
    cache.put_many("b", random_items(2, seed=2))

    stats = cache.stats()
    assert (stats.path, stats.entries, stats.max_bytes) == (cache_path, 7, 1024**3)
    assert stats.entries_by_model == {"a": 5, "b": 2}
    assert stats.size_bytes > 0

    cache.clear()
    assert cache.stats().entries == 0


@pytest.mark.parametrize("dim", [DIM, 384])
def test_eviction_keeps_the_file_under_its_bound(cache_path: Path, dim: int) -> None:
    max_bytes = 256 * KIB
    cache = EmbeddingCache(cache_path, max_bytes=max_bytes)
    batches = [random_items(100, dim=dim, seed=seed) for seed in range(60)]

    for batch in batches:
        cache.put_many("m", batch)
        assert cache.stats().size_bytes <= max_bytes
    entries = cache.stats().entries
    cache.close()

    assert cache_path.stat().st_size <= max_bytes
    assert 0 < entries < 60 * 100
    newest = batches[-1]
    assert len(EmbeddingCache(cache_path, max_bytes=max_bytes).get_many("m", list(newest))) == 100


def test_least_recently_used_rows_are_evicted_first(cache_path: Path) -> None:
    clock = Clock()
    cache = EmbeddingCache(cache_path, clock=clock)
    old, recent = random_items(300, seed=1), random_items(300, seed=2)
    cache.put_many("m", old)
    clock.now += 1
    cache.put_many("m", recent)
    touched = list(old)[:100]
    clock.now += 2 * 3600  # past the interval after which a hit refreshes last_used
    cache.get_many("m", touched)
    size = cache.stats().size_bytes
    cache.close()

    # The same file opened with a budget it already fills: the next put must evict.
    small = EmbeddingCache(cache_path, max_bytes=size, clock=clock)
    small.put_many("m", random_items(1, seed=3))

    remaining = small.get_many("m", [*old, *recent])
    untouched_old = set(old) - set(touched)
    assert untouched_old - set(remaining), "nothing was evicted"
    assert set(touched) <= set(remaining)
    assert set(recent) <= set(remaining)


def test_a_corrupt_file_is_moved_aside_and_replaced(
    cache_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache_path.parent.mkdir(parents=True)
    cache_path.write_bytes(b"definitely not an SQLite database\n" * 200)

    with caplog.at_level(logging.WARNING, logger="autorag.embeddings.cache"):
        cache = EmbeddingCache(cache_path)
    items = random_items(2)
    cache.put_many("m", items)

    assert set(cache.get_many("m", list(items))) == set(items)
    aside = list(cache_path.parent.glob("embeddings.sqlite.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].read_bytes().startswith(b"definitely not")
    assert any("moved the damaged embedding cache" in r.getMessage() for r in caplog.records)


def test_a_deleted_file_is_recreated(cache_path: Path) -> None:
    cache = EmbeddingCache(cache_path)
    cache.put_many("m", random_items(2))
    cache.close()
    for path in cache_path.parent.iterdir():
        path.unlink()
    cache_path.parent.rmdir()

    fresh = EmbeddingCache(cache_path)
    items = random_items(2)

    assert fresh.get_many("m", list(items)) == {}
    fresh.put_many("m", items)
    assert len(fresh.get_many("m", list(items))) == 2
    assert cache_path.exists()


def test_an_unusable_location_falls_back_to_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")

    with caplog.at_level(logging.WARNING, logger="autorag.embeddings.cache"):
        cache = EmbeddingCache(blocker / "embeddings.sqlite")
    items = random_items(2)
    cache.put_many("m", items)

    assert len(cache.get_many("m", list(items))) == 2
    assert any("in memory only" in r.getMessage() for r in caplog.records)


def test_instances_on_one_file_share_entries_under_concurrent_writes(
    cache_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caches = [EmbeddingCache(cache_path) for _ in range(4)]

    def write(index: int) -> None:
        for batch in range(25):
            caches[index].put_many(f"m{index}", random_items(20, seed=batch))
            caches[index].get_many(f"m{index}", list(random_items(20, seed=batch)))

    with caplog.at_level(logging.WARNING, logger="autorag.embeddings.cache"):
        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert caplog.records == []  # no write was skipped for being locked out
    assert caches[0].stats().entries_by_model == {f"m{i}": 500 for i in range(4)}


WRITER = """
import sys
from pathlib import Path
import numpy as np
from autorag.embeddings.cache import EmbeddingCache

cache = EmbeddingCache(Path(sys.argv[1]))
rng = np.random.default_rng(int(sys.argv[2]))
for batch in range(40):
    items = {f"{batch}-{i}": rng.normal(size=384).astype(np.float32) for i in range(25)}
    cache.put_many("m" + sys.argv[2], items)
    assert len(cache.get_many("m" + sys.argv[2], list(items))) == 25
"""


def test_processes_share_the_file(cache_path: Path) -> None:
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache_path), str(seed)], stderr=subprocess.PIPE
        )
        for seed in (1, 2)
    ]
    for writer in writers:
        _, stderr = writer.communicate(timeout=120)
        assert writer.returncode == 0, stderr.decode()
        assert b"skipped" not in stderr and b"unusable" not in stderr  # nor in memory only

    assert EmbeddingCache(cache_path).stats().entries_by_model == {"m1": 1000, "m2": 1000}
