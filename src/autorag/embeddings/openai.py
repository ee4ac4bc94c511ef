"""Embeddings from the OpenAI API or any server speaking its ``/embeddings`` dialect."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autorag.embeddings._http import HttpEmbeddingProvider
from autorag.http_client import RetryPolicy


class OpenAIEmbeddingProvider(HttpEmbeddingProvider):
    """``POST {base_url}/embeddings``; without ``api_key`` no Authorization header is sent
    (local OpenAI-compatible servers usually need none)."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
        dim: int | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(
            model,
            url=f"{base_url.rstrip('/')}/embeddings",
            api_key=api_key,
            batch_size=batch_size,
            timeout=timeout,
            dim=dim,
            retry=retry,
        )

    def _request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def _rows(self, payload: Any) -> Any:
        # The API documents no ordering of ``data``; ``index`` says which input each row is.
        items = sorted(payload["data"], key=lambda item: item["index"])
        if [item["index"] for item in items] != list(range(len(items))):
            raise ValueError("the response's indexes are not 0..n-1")
        return [item["embedding"] for item in items]
