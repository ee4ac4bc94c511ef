"""LLM providers: adapters registered by *kind*, built from ``[[llm.providers]]`` settings.

The built-in ``extractive`` provider is not configured: the model router always has it
(``autorag.chat.service.build_router``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from autorag.errors import InvalidInput
from autorag.llm.base import LLMProvider
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider

if TYPE_CHECKING:
    from autorag.config import LLMProviderSettings

LLM_KINDS: dict[str, Callable[[LLMProviderSettings], LLMProvider]] = {
    "openai": OpenAICompatProvider.from_settings,
    "ollama": OllamaProvider.from_settings,
}


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
