"""What the HTTP embedding providers share: batching, checks of what comes back.

The transport, its retries, timeouts and error messages are the model servers' one HTTP
seam, ``autorag.http_client``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from autorag.embeddings.base import KNOWN_MODEL_DIMS, Vectors
from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.http_client import ModelServer, RetryPolicy

_PROBE_TEXT = "dimension probe"


def unit_rows(rows: Any) -> Vectors:
    """Rows of numbers as a float32 matrix with every row scaled to length 1."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a list of vectors, got an array of shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinity")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector has no direction; leave it zero rather than divide by zero.
    unit: Vectors = matrix / np.maximum(norms, np.finfo(np.float32).tiny)
    return unit


class HttpEmbeddingProvider(ABC):
    """An ``EmbeddingProvider`` behind an HTTP API; subclasses say what to send and read.

    ``dim`` comes from the constructor, else ``KNOWN_MODEL_DIMS``, else the first
    response (probed with one call if asked before any embedding).
    """

    provider: str

    def __init__(
        self,
        model: str,
        *,
        url: str,
        api_key: str | None = None,
        batch_size: int,
        timeout: float,
        dim: int | None,
        retry: RetryPolicy | None,
    ) -> None:
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self._batch_size = batch_size
        self._dim = dim if dim is not None else KNOWN_MODEL_DIMS.get(model)
        self._server = ModelServer(
            f"embedding provider {self.provider!r}",
            url,
            api_key=api_key,
            timeout_s=timeout,
            retry=retry or RetryPolicy(),
        )

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._fetch([_PROBE_TEXT])
        assert self._dim is not None  # _fetch records the dimension it saw
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        step = self._batch_size
        batches = [self._fetch(texts[i : i + step]) for i in range(0, len(texts), step)]
        return np.concatenate(batches)

    def embed_query(self, text: str) -> Vectors:
        return self.embed([text]).reshape(-1)

    def close(self) -> None:
        """Release pooled connections; the provider reconnects if used again."""
        self._server.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abstractmethod
    def _request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON body asking for the embeddings of ``texts``."""

    @abstractmethod
    def _rows(self, payload: Any) -> Any:
        """The vectors in a decoded response, in the order of the texts sent."""

    def _fetch(self, texts: Sequence[str]) -> Vectors:
        try:
            payload = self._server.post_json("", self._request_body(texts))
        except AutoragError as exc:
            # Indexing and search chose neither this server nor its model, the
            # configuration did: whatever it refuses, embeddings are unavailable until an
            # admin fixes that, so every failure is ``Unavailable`` (HTTP 503), never 400.
            raise Unavailable(exc.message) from exc
        try:
            vectors = unit_rows(self._rows(payload))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            reason = self._server.scrub(str(exc))
            raise Unavailable(
                f"{self._server.where} sent an unexpected response: {reason}"
            ) from exc
        self._check_shape(vectors, len(texts))
        return vectors

    def _check_shape(self, vectors: Vectors, count: int) -> None:
        where = self._server.where
        if vectors.shape[0] != count:
            raise Unavailable(f"{where} returned {vectors.shape[0]} vectors for {count} texts")
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise Unavailable(
                f"{where} returned {vectors.shape[1]}-dimensional vectors for {self.model!r}, "
                f"expected {self._dim}: set the model's dim to match"
            )
