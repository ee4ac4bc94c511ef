"""The reranker protocol: scores for passages against a query, aligned with the input.

Scores, not an order, so that every provider (a cross-encoder's logits, an API's
relevance scores, a chat model's ordering) gives the stage the same thing: higher is
more relevant, ties keep the first-stage order. A reranker that cannot score raises an
``AutoragError`` (``Unavailable`` for a server or model that failed, ``InvalidInput``
for a configuration it cannot use); the stage turns that into a diagnostic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from autorag.errors import Unavailable


class Reranker(Protocol):
    label: str  # names it in diagnostics: "cross-encoder /models/ms-marco", ...
    # Whether passages stay on this machine or its network (a hosted API or model is a
    # destination that only shareable sources may reach).
    local: bool

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the passages' order; higher is more relevant."""
        ...


def checked_scores(label: str, scores: Sequence[object], expected: int) -> list[float]:
    """``scores`` as floats, refused (``Unavailable``) unless there is one finite number
    per passage: a model or server answering otherwise is not to be trusted with the
    order."""
    if len(scores) != expected:
        raise Unavailable(f"{label} gave {len(scores)} scores for {expected} passages")
    checked: list[float] = []
    for score in scores:
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise Unavailable(f"{label} gave a score that is not a number: {score!r:.40}")
        if not math.isfinite(score):
            raise Unavailable(f"{label} gave a score that is not finite: {score!r}")
        checked.append(float(score))
    return checked
