"""LLM providers registered by name (``llm_provider`` in the settings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autorag.errors import InvalidInput
from autorag.llm.base import LLMProvider
from autorag.llm.extractive import ExtractiveProvider

LLM_PROVIDERS: dict[str, Callable[..., LLMProvider]] = {"extractive": ExtractiveProvider}


def get_llm_provider(name: str, **options: Any) -> LLMProvider:
    """Build the provider ``name``; ``options`` go to its constructor (e.g. ``embed``)."""
    try:
        factory = LLM_PROVIDERS[name]
    except KeyError:
        known = ", ".join(sorted(LLM_PROVIDERS))
        raise InvalidInput(f"unknown LLM provider {name!r} (known: {known})") from None
    return factory(**options)
