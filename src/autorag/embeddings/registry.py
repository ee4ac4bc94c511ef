"""Embedding providers by name: the one place that maps config to an implementation.

Adding a provider is one module plus one line in ``EMBEDDING_PROVIDERS``.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from autorag.embeddings.base import EmbeddingProvider
from autorag.embeddings.local import LocalEmbeddingProvider
from autorag.embeddings.ollama import OllamaEmbeddingProvider
from autorag.embeddings.openai import OpenAIEmbeddingProvider
from autorag.errors import Conflict, InvalidInput

EMBEDDING_PROVIDERS: dict[str, Callable[..., EmbeddingProvider]] = {
    "local": LocalEmbeddingProvider,
    "openai": OpenAIEmbeddingProvider,
    "ollama": OllamaEmbeddingProvider,
}

# The process-wide cache of providers, keyed "provider:model" (the one allowed mutable
# global): a local model costs seconds and hundreds of MB to load, and an HTTP provider
# holds a connection pool, so every caller shares one instance. Each entry keeps the
# options it was built with, to refuse a second caller who wants different ones.
_INSTANCES: dict[str, tuple[dict[str, Any], EmbeddingProvider]] = {}
_INSTANCES_LOCK = threading.Lock()


def get_embedding_provider(provider: str, model: str, **options: Any) -> EmbeddingProvider:
    """The shared ``provider`` instance for ``model``, built on first request.

    Raises ``InvalidInput`` for an unknown provider or option, and ``Conflict`` when the
    instance already exists with other options (silently returning it could, say, send
    documents to another server than the caller configured).
    """
    factory = _factory(provider)
    _check_options(provider, factory, model, options)
    key = f"{provider}:{model}"
    with _INSTANCES_LOCK:
        if key not in _INSTANCES:
            _INSTANCES[key] = (dict(options), factory(model, **options))
        built_with, instance = _INSTANCES[key]
    if built_with != options:
        raise Conflict(
            f"embedding provider {key!r} already exists with options "
            f"{sorted(built_with)}; asked again with {sorted(options)} or other values"
        )
    return instance


def _factory(provider: str) -> Callable[..., EmbeddingProvider]:
    try:
        return EMBEDDING_PROVIDERS[provider]
    except KeyError:
        known = ", ".join(sorted(EMBEDDING_PROVIDERS))
        raise InvalidInput(
            f"unknown embedding provider {provider!r}; known providers: {known}"
        ) from None


def _check_options(
    provider: str, factory: Callable[..., EmbeddingProvider], model: str, options: dict[str, Any]
) -> None:
    try:
        inspect.signature(factory).bind(model, **options)
    except TypeError as exc:
        raise InvalidInput(f"bad option for embedding provider {provider!r}: {exc}") from None
