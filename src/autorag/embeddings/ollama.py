"""Embeddings from an Ollama server through its native ``/api/embed`` endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autorag.embeddings._http import HttpEmbeddingProvider
from autorag.http_client import RetryPolicy


class OllamaEmbeddingProvider(HttpEmbeddingProvider):
    """``POST {base_url}/api/embed``, which takes a batch and returns rows in input order."""

    provider = "ollama"

    def __init__(
        self,
        model: str = "nomic-embed-text",
        *,
        base_url: str = "http://127.0.0.1:11434",
        timeout: float = 60.0,
        dim: int | None = None,
        batch_size: int = 64,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(
            model,
            url=f"{base_url.rstrip('/')}/api/embed",
            batch_size=batch_size,
            timeout=timeout,
            dim=dim,
            retry=retry,
        )

    def _request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def _rows(self, payload: Any) -> Any:
        return payload["embeddings"]
