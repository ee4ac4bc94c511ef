"""A rerank API over HTTP: Hugging Face TEI's ``POST /rerank`` or Cohere's (which Jina,
Voyage and mixedbread also speak).

TEI:    ``{"query", "texts"}``            → ``[{"index", "score"}, ...]``
Cohere: ``{"model"?, "query", "documents"}`` → ``{"results": [{"index", "relevance_score"}]}``

Either answer is read whichever shape was asked for. The transport, its timeout, the
bearer key and the mapping of failures onto the error tree are the model servers' one
HTTP seam, ``autorag.http_client``; no retries: the stage's time bound is short.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from autorag.errors import Unavailable
from autorag.http_client import ModelServer
from autorag.llm._wire import is_local_url
from autorag.rerank.base import checked_scores

RerankApi = Literal["tei", "cohere"]
# A passage a server left out of its results ranks after every one it scored.
_UNSCORED = float("-inf")


class HttpReranker:
    def __init__(
        self,
        url: str,
        *,
        api: RerankApi = "tei",
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        local: bool | None = None,
    ) -> None:
        self.api = api
        self.model = model
        self.local = local if local is not None else is_local_url(url)
        self._server = ModelServer(
            "rerank API",
            url,
            api_key=api_key,
            timeout_s=timeout_s,
            not_found_hint="Check search.rerank.url: the whole endpoint (…/rerank).",
        )
        self.label = self._server.where

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        answer = self._server.post_json("", self._body(query, passages))
        return self._scores(answer, len(passages))

    def close(self) -> None:
        self._server.close()

    def _body(self, query: str, passages: Sequence[str]) -> dict[str, Any]:
        if self.api == "tei":
            return {"query": query, "texts": list(passages), "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": list(passages)}
        if self.model:
            body["model"] = self.model
        return body

    def _scores(self, answer: Any, count: int) -> list[float]:
        """One score per passage from either answer shape; anything else (an index out
        of range or twice, a score that is no number) is refused whole."""
        results = answer.get("results") if isinstance(answer, Mapping) else answer
        if not isinstance(results, list):
            raise Unavailable(f"{self.label} sent no list of results: {str(answer)[:80]!r}")
        scores = [_UNSCORED] * count
        seen: set[int] = set()
        for result in results:
            index, score = _entry(result)
            if index is None or not 0 <= index < count or index in seen:
                raise Unavailable(
                    f"{self.label} sent a result for no passage: {str(result)[:80]!r}"
                )
            seen.add(index)
            scores[index] = score  # checked below
        if not seen:
            raise Unavailable(f"{self.label} scored none of the {count} passages")
        finite = checked_scores(self.label, [s for s in scores if s != _UNSCORED], len(seen))
        floor = min(finite) - 1.0
        return [floor if s == _UNSCORED else float(s) for s in scores]


def _entry(result: Any) -> tuple[int | None, Any]:
    if not isinstance(result, Mapping):
        return None, None
    index = result.get("index")
    score = result.get("relevance_score", result.get("score"))
    if isinstance(index, bool) or not isinstance(index, int):
        return None, None
    return index, score
