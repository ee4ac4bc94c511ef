"""``POST /v1/embeddings`` with the installation's embedding model (the one that embeds
every workspace's documents), so other tools can embed the way search does."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autorag.agent.budget import estimate_tokens
from autorag.api.openai.errors import InvalidParam, ModelNotFound
from autorag.context import AppContext
from autorag.embeddings.base import EmbeddingProvider, Vectors
from autorag.embeddings.cache import CachedEmbedder


@dataclass(frozen=True)
class EmbeddingModel:
    name: str  # as configured (embedding.model): the id the API reports
    provider: EmbeddingProvider  # without the embedding cache: requests are not cached

    @classmethod
    def of(cls, context: AppContext) -> EmbeddingModel:
        embedder = context.embedder
        inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
        return cls(context.settings.embedding.model, inner)

    def names(self) -> tuple[str, ...]:
        """What a request may call it: the configured name or ``provider:model``."""
        return (self.name, self.provider.model_id)

    def check(self, model: str, dimensions: int | None) -> None:
        if model.strip() not in self.names():
            raise ModelNotFound(model, [self.name], what="embedding models")
        if dimensions is not None and dimensions != self.provider.dim:
            raise InvalidParam(
                "dimensions",
                f"{self.name} makes vectors of {self.provider.dim} dimensions only "
                f"(asked for {dimensions})",
            )


def embed(model: EmbeddingModel, texts: Sequence[str], encoding: str) -> dict[str, Any]:
    """The embeddings list body. ``usage`` is estimated (a token per 4 bytes of text):
    the model's own tokenizer is not exposed."""
    vectors = model.provider.embed(list(texts))
    tokens = sum(estimate_tokens(text) for text in texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": _encoded(vector, encoding)}
            for i, vector in enumerate(vectors)
        ],
        "model": model.name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _encoded(vector: Vectors, encoding: str) -> list[float] | str:
    row = np.ascontiguousarray(vector, dtype="<f4")
    if encoding == "base64":
        return base64.b64encode(row.tobytes()).decode("ascii")
    return [float(x) for x in row]
