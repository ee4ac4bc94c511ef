"""``peer_search``: ask the trusted peers best suited to a question, and merge what they
return with the workspace's own results. Each citation says which peer it came from."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.agent.skills.rag_search import citation_from_hit, format_tool_result
from autorag.errors import AutoragError, InvalidInput
from autorag.llm.base import ToolSpec
from autorag.models import Citation
from autorag.p2p.outgoing import QuotesPrivateSource
from autorag.retrieval.fusion import rrf_fuse
from autorag.retrieval.hybrid import SearchRequest

if TYPE_CHECKING:
    from autorag.p2p.node import PeerNode
    from autorag.p2p.wire import Reply

PEER_SEARCH = "peer_search"
SPEC = ToolSpec(
    name=PEER_SEARCH,
    description=(
        "Search this workspace and the trusted peers best matching the question (other "
        "AutoRAG instances). Returns numbered passages, each marked with where it is from."
    ),
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to look for"}},
        "required": ["query"],
    },
)


@dataclass
class PeerSearch:
    node: PeerNode
    peers_asked: int = 2
    timeout_s: float = 30.0
    spec: ToolSpec = field(default=SPEC)
    progress: str = "Searching your documents and trusted peers…"

    def available(self, context: SkillContext) -> bool:
        return context.can("search:read") and bool(self.node.runtime.registry.peers())

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        context.require("search:read", "peer_search")
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("peer_search needs a non-empty 'query' string")
        local = context.app.searcher.search(SearchRequest(query, k=context.k)).hits
        lists: list[list[Citation]] = [[citation_from_hit(0, h) for h in local]]
        try:
            # Everything sent passes DLP; a question quoting a private source stays here.
            outgoing = self.node.screen(query)
        except QuotesPrivateSource as refused:
            merged = _merge(lists, context.k, context.first_citation_number)
            note = f"Peers were not asked: {refused.message}."
            return SkillResult(f"{note}\n\n{format_tool_result(merged)}", merged, status=note)
        lists += self._ask_peers(outgoing.text, context.k)
        merged = _merge(lists, context.k, context.first_citation_number)
        asked = len(lists) - 1
        return SkillResult(
            format_tool_result(merged),
            merged,
            status=f"Asked {asked} peers: {len(merged)} passages",
        )

    def _ask_peers(self, query: str, k: int) -> list[list[Citation]]:
        ranked = [p for p, _ in self.node.runtime.registry.rank(query)][: self.peers_asked]
        if not ranked:
            return []
        with ThreadPoolExecutor(max_workers=len(ranked)) as pool:
            replies = list(pool.map(lambda p: self._ask(p.name, query, k), ranked))
        return [_citations(name, reply) for name, reply in replies if reply is not None]

    def _ask(self, peer: str, query: str, k: int) -> tuple[str, Reply | None]:
        try:
            return peer, self.node.ask_blocking(peer, query, k=k, timeout_s=self.timeout_s)
        except AutoragError:
            return peer, None  # a peer that fails costs its results, not the answer


def _citations(peer: str, reply: Reply) -> list[Citation]:
    return [
        Citation.external(
            0, r.source, title=r.title, text=r.snippet, score=r.score, page=r.page,
            key=i + 1, peer=peer,
        )
        for i, r in enumerate(reply.results)
    ]  # fmt: skip


def _merge(lists: list[list[Citation]], k: int, first: int) -> list[Citation]:
    """Reciprocal rank fusion across this workspace and each peer: scores from different
    indexes do not compare, ranks do."""
    everything = [c for lst in lists for c in lst]
    legs: dict[str, list[int]] = {}
    position = 0
    for n, lst in enumerate(lists):
        legs[f"list{n}"] = list(range(position, position + len(lst)))
        position += len(lst)
    fused = rrf_fuse(legs)
    ordered = sorted(fused.values(), key=lambda f: (-f.score, f.chunk_id))[:k]
    return [replace(everything[f.chunk_id], number=first + i) for i, f in enumerate(ordered)]
