"""LLM providers: adapters registered by *kind*, built from ``[[llm.providers]]`` settings.

``build_provider`` makes a configured model server's provider; ``get_llm_provider``
still builds the built-in ``extractive`` provider by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from autorag.errors import InvalidInput
from autorag.llm.base import LLMProvider
from autorag.llm.extractive import ExtractiveProvider
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider

if TYPE_CHECKING:
    from autorag.config import LLMProviderSettings

LLM_KINDS: dict[str, Callable[[LLMProviderSettings], LLMProvider]] = {
    "openai": OpenAICompatProvider.from_settings,
    "ollama": OllamaProvider.from_settings,
}

LLM_PROVIDERS: dict[str, Callable[..., LLMProvider]] = {"extractive": ExtractiveProvider}


def build_provider(config: LLMProviderSettings) -> LLMProvider:
    """The provider for one configured model server; building it makes no request."""
    try:
        factory = LLM_KINDS[config.kind]
    except KeyError:
        known = ", ".join(sorted(LLM_KINDS))
        raise InvalidInput(
            f"LLM provider {config.name!r} has unknown kind {config.kind!r} (known: {known})"
        ) from None
    return factory(config)


def get_llm_provider(name: str, **options: Any) -> LLMProvider:
    """Build the provider ``name``; ``options`` go to its constructor (e.g. ``embed``)."""
    try:
        factory = LLM_PROVIDERS[name]
    except KeyError:
        known = ", ".join(sorted(LLM_PROVIDERS))
        raise InvalidInput(f"unknown LLM provider {name!r} (known: {known})") from None
    return factory(**options)
