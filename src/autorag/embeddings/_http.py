"""What the HTTP embedding providers share: JSON POSTs with retries, batching, checks.

httpx is imported on first use, not at module import, so that loading the provider
registry does not slow down CLI start-up.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from autorag.embeddings.base import KNOWN_MODEL_DIMS, Vectors
from autorag.errors import InvalidInput, Unavailable

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

# How much of a server's error body we quote: enough for its reason, not a whole page.
_ERROR_SNIPPET_CHARS = 200
_PROBE_TEXT = "dimension probe"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure (429, 5xx, network)."""

    retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise InvalidInput(f"retry settings must not be negative: {self}")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based).

        Exponential with jitter, so that several workers rate-limited together do not
        come back together; a server's Retry-After wins when it asks for longer.
        """
        backoff = self.base_delay * 2.0 ** (retry - 1) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, self.max_delay)


@dataclass(frozen=True)
class _Failure:
    reason: str
    retriable: bool
    retry_after: float | None = None


class JsonPoster:
    """POSTs JSON to one URL; every failure surfaces as ``Unavailable``.

    Error messages name the URL but never the credentials: ``secret`` is scrubbed from
    any text we quote, since servers sometimes echo the key they rejected.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        timeout: float,
        retry: RetryPolicy,
        secret: str | None = None,
    ) -> None:
        self.url = url
        self._headers = dict(headers)
        self._timeout = timeout
        self._retry = retry
        self._secret = secret
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def post(self, body: Mapping[str, Any]) -> Any:
        """Send ``body``; return the decoded JSON response."""
        attempts = self._retry.retries + 1
        for attempt in range(1, attempts + 1):
            outcome = self._attempt(body)
            if not isinstance(outcome, _Failure):
                return outcome
            if not outcome.retriable:
                raise Unavailable(
                    self.scrub(f"embedding request to {self.url} failed: {outcome.reason}")
                )
            if attempt < attempts:
                delay = self._retry.delay(attempt, outcome.retry_after)
                logger.info("retrying %s in %.2fs: %s", self.url, delay, self.scrub(outcome.reason))
                time.sleep(delay)
        raise Unavailable(
            self.scrub(
                f"embedding request to {self.url} failed after {attempts} attempts: "
                f"{outcome.reason}"
            )
        )

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _attempt(self, body: Mapping[str, Any]) -> Any:
        """One POST: the decoded JSON, or a ``_Failure`` saying whether to retry."""
        import httpx

        try:
            response = self._http().post(self.url, json=body)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return _Failure(f"bad URL: {exc}", retriable=False)  # retrying cannot fix config
        except httpx.TransportError as exc:
            # Connection refused, timeouts, dropped connections: the server may come back.
            return _Failure(f"{type(exc).__name__}: {exc}", retriable=True)
        if response.is_success:
            return _decode(response)
        status = response.status_code
        # One line, however the server formats its error page: the CLI prints one line.
        snippet = " ".join(response.text.split())[:_ERROR_SNIPPET_CHARS]
        return _Failure(
            f"HTTP {status}: {snippet}",
            retriable=status == 429 or status >= 500,
            retry_after=_retry_after(response),
        )

    def _http(self) -> httpx.Client:
        # One pooled client per provider, made on first use (keeps httpx off the import path).
        with self._client_lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(headers=self._headers, timeout=self._timeout)
            return self._client

    def scrub(self, text: str) -> str:
        """``text`` with the secret masked."""
        return text.replace(self._secret, "***") if self._secret else text


def _decode(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return _Failure("the response is not valid JSON", retriable=False)


def _retry_after(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds; the HTTP-date form is rare enough to ignore."""
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


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
        headers: Mapping[str, str],
        batch_size: int,
        timeout: float,
        dim: int | None,
        retry: RetryPolicy | None,
        secret: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self._batch_size = batch_size
        self._dim = dim if dim is not None else KNOWN_MODEL_DIMS.get(model)
        self._poster = JsonPoster(
            url, headers=headers, timeout=timeout, retry=retry or RetryPolicy(), secret=secret
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
        self._poster.close()

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
        payload = self._poster.post(self._request_body(texts))
        try:
            vectors = unit_rows(self._rows(payload))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            reason = self._poster.scrub(str(exc))
            raise Unavailable(f"unexpected response from {self._poster.url}: {reason}") from exc
        self._check_shape(vectors, len(texts))
        return vectors

    def _check_shape(self, vectors: Vectors, count: int) -> None:
        url = self._poster.url
        if vectors.shape[0] != count:
            raise Unavailable(f"{url} returned {vectors.shape[0]} vectors for {count} texts")
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise Unavailable(
                f"{url} returned {vectors.shape[1]}-dimensional vectors for {self.model!r}, "
                f"expected {self._dim}: set the model's dim to match"
            )
