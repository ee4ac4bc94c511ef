"""LLM providers registered by name (``llm_provider`` in the settings)."""

from __future__ import annotations

from collections.abc import Callable

from autorag.errors import InvalidInput
from autorag.llm.base import LLMProvider
from autorag.llm.extractive import ExtractiveProvider

LLM_PROVIDERS: dict[str, Callable[[], LLMProvider]] = {"extractive": ExtractiveProvider}


def get_llm_provider(name: str) -> LLMProvider:
    try:
        return LLM_PROVIDERS[name]()
    except KeyError:
        known = ", ".join(sorted(LLM_PROVIDERS))
        raise InvalidInput(f"unknown LLM provider {name!r} (known: {known})") from None
