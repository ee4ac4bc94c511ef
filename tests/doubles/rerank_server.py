"""``RerankDouble``: a real HTTP server (uvicorn on loopback, as the scripted model
servers run) speaking the rerank APIs' wire formats, with a stand-in model that scores
by a word.

Routes:

- ``POST /rerank``: Hugging Face TEI, ``{"query", "texts"}`` → ``[{"index", "score"}]``,
  sorted best first, as TEI sends it;
- ``POST /v2/rerank``: Cohere (Jina's and Voyage's shape too), ``{"query", "documents",
  "model"?, "top_n"?}`` → ``{"id", "results": [{"index", "relevance_score"}], "meta"}``;
- ``POST /hang``: answers nothing until the server stops (or 30 s): a server that hangs;
- ``POST /garbage``: an HTML error page with status 200; ``POST /bad-index``: JSON of
  the right shape naming a passage that was not sent.

The stand-in model: a passage's score is how often ``favourite`` occurs in it (the
query's words when ``favourite`` is None), so a test knows which passage it prefers.
With ``api_key`` set every route wants ``Authorization: Bearer <key>`` (else 401).
``requests`` holds the JSON of every request.

    with RerankDouble() as server:
        HttpReranker(f"{server.base_url}/rerank").rerank("q", ["a", "b"])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles.script import ScriptedServer

_WORD = re.compile(r"\w+")
_HANG_LIMIT_S = 30.0


class RerankDouble(ScriptedServer):
    def __init__(self, *, api_key: str | None = None) -> None:
        super().__init__(api_key=api_key)
        self.favourite: str | None = None

    @property
    def base_url(self) -> str:
        return self.root_url

    @staticmethod
    def images(request: Mapping[str, Any]) -> list[bytes]:
        return []

    def prefer(self, favourite: str | None) -> None:
        """Score by ``favourite`` from now on, and forget what was received."""
        self.reset()
        self.favourite = favourite

    def score(self, query: str, text: str) -> float:
        words = [w.lower() for w in _WORD.findall(text)]
        wanted = {self.favourite} if self.favourite else {w.lower() for w in _WORD.findall(query)}
        return float(sum(word in wanted for word in words))

    def sent_texts(self) -> list[str]:
        """Every passage any request carried."""
        return [t for r in self.requests for t in (r.get("texts") or r.get("documents") or [])]

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/rerank", self._tei, methods=["POST"]),
                Route("/v2/rerank", self._cohere, methods=["POST"]),
                Route("/hang", self._hang, methods=["POST"]),
                Route("/garbage", self._garbage, methods=["POST"]),
                Route("/bad-index", self._bad_index, methods=["POST"]),
            ]
        )

    async def _received(self, request: Request) -> dict[str, Any] | Response:
        body = await self.receive(request, chat=True)
        if not self.authorized(request):
            return JSONResponse({"message": "invalid api token"}, status_code=401)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return JSONResponse({"error": "query is required"}, status_code=422)
        return body

    def _ranked(self, query: str, texts: list[str]) -> list[tuple[int, float]]:
        scored = [(i, self.score(query, t)) for i, t in enumerate(texts)]
        return sorted(scored, key=lambda pair: -pair[1])

    async def _tei(self, request: Request) -> Response:
        body = await self._received(request)
        if isinstance(body, Response):
            return body
        texts = list(body.get("texts") or [])
        return JSONResponse(
            [{"index": i, "score": s} for i, s in self._ranked(body["query"], texts)]
        )

    async def _cohere(self, request: Request) -> Response:
        body = await self._received(request)
        if isinstance(body, Response):
            return body
        ranked = self._ranked(body["query"], list(body.get("documents") or []))
        top_n = body.get("top_n")
        results = [{"index": i, "relevance_score": s} for i, s in ranked[:top_n]]
        return JSONResponse(
            {
                "id": "rerank-double",
                "results": results,
                "meta": {"billed_units": {"search_units": 1}},
            }
        )

    async def _hang(self, request: Request) -> Response:
        await self._received(request)
        await self.pause(_HANG_LIMIT_S)  # cut short when the server stops
        return JSONResponse([])

    async def _garbage(self, request: Request) -> Response:
        await self._received(request)
        return Response("<html><body>502 Bad Gateway</body></html>", media_type="text/html")

    async def _bad_index(self, request: Request) -> Response:
        body = await self._received(request)
        count = len(body.get("texts") or []) if isinstance(body, dict) else 0
        return JSONResponse([{"index": count + 5, "score": 1.0}])
