"""Query embeddings of concurrent searches, computed together.

Alone, a search embeds its query in one call of the model. Under concurrent searches
(the HTTP server), those calls would run side by side, each paying the model's fixed
per-call cost (tokenizer, Python dispatch under the GIL) and competing for the same
cores. Here one caller at a time embeds, taking every query waiting at that moment in
one batch; a burst of searches costs about one batched call instead of one call each,
and a search alone pays nothing extra.

No thread of its own: the first caller leads; when its batch is done it hands the lead
to the oldest caller still waiting, whose query is then at the head of the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from autorag.embeddings.base import EmbeddingProvider, Vectors
from autorag.embeddings.cache import CachedEmbedder

MAX_BATCH = 32  # beyond this a batch gets no cheaper per query on a CPU


class _Waiter:
    __slots__ = ("error", "leads", "ready", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.ready = threading.Event()
        self.leads = False
        self.vector: Vectors | None = None
        self.error: BaseException | None = None

    def outcome(self) -> Vectors:
        if self.error is not None:
            raise self.error
        assert self.vector is not None
        return self.vector


class QueryBatcher:
    """``embed_query`` for many threads at once, batching the queries that wait."""

    def __init__(self, embedder: EmbeddingProvider, *, max_batch: int = MAX_BATCH) -> None:
        self.embedder = embedder
        self._embed_many = _query_batch_function(embedder)
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Waiter] = []  # not yet taken into a batch, oldest first
        self._busy = False  # someone leads; invariant: not busy => queue empty

    def embed_query(self, text: str) -> Vectors:
        me = _Waiter(text)
        with self._lock:
            self._queue.append(me)
            leads = not self._busy
            self._busy = True
        if not leads:
            me.ready.wait()  # my vector is done, or the lead is mine
            leads = me.leads
        if leads:
            self._lead()
        return me.outcome()

    def _lead(self) -> None:
        with self._lock:
            batch = self._queue[: self._max_batch]  # the leader's own query comes first
            del self._queue[: self._max_batch]
        try:
            if len(batch) == 1:  # exactly what a search without the batcher does
                batch[0].vector = self.embedder.embed_query(batch[0].text)
            else:
                vectors = self._embed_many([w.text for w in batch])
                for waiter, vector in zip(batch, vectors, strict=True):
                    waiter.vector = vector
        except BaseException as exc:  # every caller of the batch gets the failure
            for waiter in batch:
                waiter.error = exc
        finally:
            with self._lock:
                if self._queue:
                    successor = self._queue[0]
                    successor.leads = True
                    successor.ready.set()
                else:
                    self._busy = False
            for waiter in batch:
                waiter.ready.set()


def _query_batch_function(embedder: EmbeddingProvider) -> Callable[[Sequence[str]], Vectors]:
    """How to embed several queries in one call.

    Every provider embeds a query as a one-text batch of ``embed``, and queries skip
    the content cache (``CachedEmbedder.embed_query`` goes straight to the provider), so
    a batch of queries is one ``embed`` call on the provider behind any cache.
    """
    provider = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    return provider.embed
