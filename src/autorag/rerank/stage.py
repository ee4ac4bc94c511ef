"""The rerank stage of a search: the first ``top_n`` hits in, the same hits out in the
reranker's order, within ``timeout_s``; on any failure or past the time the first-stage
order stands and the response carries a warning saying why.

It runs after the catalog backstop, so only chunks the searcher may return at all (of
ready documents, within the filters) ever reach a reranker. A reranker outside this
machine's network (a hosted API or chat model) is a destination like a peer: it is sent
only the hits whose source policy is ``share`` (``private``, ``ask`` and invalid sources
never leave; nothing at all in a workspace that allows local models only). Those it is
not sent keep their places; the others are reordered among the places they held. Each
place keeps its first-stage score, so that the scores still fall in the order shown
(callers that merge results by score, as peer search does, keep it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace

from autorag.config import RerankSettings
from autorag.errors import AutoragError
from autorag.models import Diagnostic, SearchHit
from autorag.rerank.base import Reranker, checked_scores
from autorag.sources.policy import PolicyStore, matching_rules

log = logging.getLogger(__name__)

# Reranks run here so that a search waits for one at most ``timeout_s``: a call that
# outlives it finishes (its own HTTP timeout is the same) with nobody waiting.
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rerank")

# Given the source ids of the hits, those whose policy lets them leave this network.
Shareable = Callable[[Sequence[str]], set[str]]


@dataclass(frozen=True)
class Reordered:
    hits: list[SearchHit]
    notes: list[Diagnostic]


@dataclass(frozen=True)
class RerankStage:
    """``reranker`` is called once per search (the llm one resolves the workspace's chat
    model then); ``workspace_on`` is the workspace's own switch; ``shareable`` decides
    what a hosted reranker may see."""

    reranker: Callable[[], Reranker]
    settings: RerankSettings
    workspace_on: Callable[[], bool]
    shareable: Shareable

    def wanted(self, asked: bool | None) -> bool:
        """The request's choice (``--rerank`` / ``--no-rerank``), else the workspace's."""
        return asked if asked is not None else self.workspace_on()

    def depth(self, k: int) -> int:
        """How many first-stage hits to fetch for ``k`` results."""
        return max(k, self.settings.top_n)

    def apply(
        self,
        query: str,
        hits: list[SearchHit],
        k: int,
        diagnostics: list[Diagnostic],
        timings: dict[str, float],
    ) -> list[SearchHit]:
        started = time.perf_counter()
        head, tail = hits[: self.settings.top_n], hits[self.settings.top_n :]
        if len(head) > 1:
            head = self._bounded(query, head, diagnostics)
        timings["rerank_ms"] = (time.perf_counter() - started) * 1000
        return (head + tail)[:k]

    def _bounded(
        self, query: str, head: list[SearchHit], diagnostics: list[Diagnostic]
    ) -> list[SearchHit]:
        timeout = self.settings.timeout_s
        future = _POOL.submit(self._reordered, query, head)
        try:
            reordered = future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()  # if it has not started yet, it never will
            why = f"the reranker did not answer within {timeout:g} s"
            diagnostics.append(_kept("rerank_timeout", why))
            return head
        except AutoragError as exc:
            diagnostics.append(_kept("rerank_failed", f"the reranker failed: {exc.message}"))
            return head
        except Exception as exc:  # a reranker's bug must not fail the search
            log.warning("reranking failed", exc_info=True)
            why = f"the reranker failed: {type(exc).__name__}"
            diagnostics.append(_kept("rerank_failed", why))
            return head
        diagnostics.extend(reordered.notes)
        return reordered.hits

    def _reordered(self, query: str, head: list[SearchHit]) -> Reordered:
        reranker = self.reranker()
        places = self._sendable(reranker, head)
        notes = [] if len(places) == len(head) else [_withheld(reranker, len(head) - len(places))]
        if len(places) < 2:
            return Reordered(head, notes)
        limit = self.settings.max_passage_chars
        passages = [head[place].text[:limit] for place in places]
        scores = checked_scores(reranker.label, reranker.rerank(query, passages), len(passages))
        # Best first; a tie keeps the first-stage order.
        ranked = sorted(range(len(places)), key=lambda n: (-scores[n], n))
        result = list(head)
        for place, n in zip(places, ranked, strict=True):
            result[place] = replace(head[places[n]], score=head[place].score)
        return Reordered(result, notes)

    def _sendable(self, reranker: Reranker, head: list[SearchHit]) -> list[int]:
        """The places of the hits ``reranker`` may be sent."""
        if reranker.local:
            return list(range(len(head)))
        shared = self.shareable([hit.source_id for hit in head])
        return [place for place, hit in enumerate(head) if hit.source_id in shared]


def _kept(code: str, why: str) -> Diagnostic:
    return Diagnostic(code, f"{why}: results are in their first-stage order", "warning")


def _withheld(reranker: Reranker, count: int) -> Diagnostic:
    results = "1 result was" if count == 1 else f"{count} results were"
    return Diagnostic(
        "rerank_withheld",
        f"{results} not sent to {reranker.label}, which is outside this network: their "
        "sources may not leave it (source policy); they keep their places",
        "info",
    )


def policy_shareable(
    policy: Callable[[], PolicyStore], local_only: Callable[[], bool]
) -> Shareable:
    """``Shareable`` by the workspace's source policy: the sources whose level is
    ``share`` (one read of the rules per search); none where the workspace allows local
    models only, and none that is not a valid source id (fail closed)."""

    def shareable(sources: Sequence[str]) -> set[str]:
        if local_only():
            return set()
        store = policy()
        rules = store.list_rules()
        shared: set[str] = set()
        for source in sources:
            canonical = store.canonical(source)
            matches = [] if canonical is None else matching_rules(rules, canonical)
            if matches and matches[0].level == "share":
                shared.add(source)
        return shared

    return shareable
