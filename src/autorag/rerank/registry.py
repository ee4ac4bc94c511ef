"""Rerank providers by name: the one place that maps ``[search.rerank]`` to an
implementation. Adding a provider is one module plus one line in ``RERANK_PROVIDERS``.

A factory takes the settings and the workspace's chat model (a function resolving it,
which only the llm provider calls) and gives a function that returns the reranker for
one search: the same instance for a fixed model, a fresh binding for the chat model
(which an admin may change at any time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from autorag.config import RerankSettings
from autorag.rerank.base import Reranker
from autorag.rerank.cross_encoder import CrossEncoderReranker
from autorag.rerank.http import HttpReranker
from autorag.rerank.llm import ChatModel, llm_reranker
from autorag.rerank.stage import RerankStage, Shareable

RerankerFor = Callable[[], Reranker]
CALL_GRACE_S = 5.0
Factory = Callable[[RerankSettings, ChatModel], RerankerFor]


def _cross_encoder(settings: RerankSettings, chat_model: ChatModel) -> RerankerFor:
    return _once(lambda: CrossEncoderReranker(str(settings.model)))


def _http(settings: RerankSettings, chat_model: ChatModel) -> RerankerFor:
    key = settings.api_key.get_secret_value() if settings.api_key else None
    reranker = HttpReranker(
        str(settings.url),
        api=settings.api,
        model=settings.model,
        api_key=key,
        # Longer than the stage waits: the stage's bound is what ends a slow answer for
        # the search; the call itself is cut soon after, freeing its thread.
        timeout_s=settings.timeout_s + CALL_GRACE_S,
        local=settings.local,
    )
    return lambda: reranker


def _llm(settings: RerankSettings, chat_model: ChatModel) -> RerankerFor:
    return lambda: llm_reranker(
        chat_model, timeout_s=settings.timeout_s, max_passage_chars=settings.max_passage_chars
    )


RERANK_PROVIDERS: dict[str, Factory] = {
    "cross-encoder": _cross_encoder,
    "http": _http,
    "llm": _llm,
}


def build_stage(
    settings: RerankSettings,
    *,
    chat_model: ChatModel,
    workspace_on: Callable[[], bool],
    shareable: Shareable,
) -> RerankStage | None:
    """The rerank stage ``settings`` configure; None when the provider is ``none``."""
    if settings.provider == "none":
        return None
    factory = RERANK_PROVIDERS[settings.provider]  # the settings' Literal admits no other
    return RerankStage(factory(settings, chat_model), settings, workspace_on, shareable)


def _once(build: RerankerFor) -> RerankerFor:
    """``build``'s reranker, made on first use and kept; a failed build (a model that is
    not there yet) is tried again on the next search."""
    made: list[Reranker] = []
    lock = threading.Lock()

    def get() -> Reranker:
        with lock:
            if not made:
                made.append(build())
            return made[0]

    return get
