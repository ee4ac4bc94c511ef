"""Merging peers' results with local ones: ranks fused, each source marked with its peer."""

from __future__ import annotations

from autorag.models import Citation
from autorag.p2p import wire
from autorag.p2p.peer_search import _citations, _merge


def _local(n: int) -> Citation:
    return Citation.external(0, f"/docs/local-{n}.md", title="", text="", score=1.0,
                             page=None, key=n + 1)  # fmt: skip


def _reply(*sources: str) -> wire.Reply:
    results = [wire.Result(source=s, title=s, snippet="text", score=0.5) for s in sources]
    return wire.Reply(id="q1", results=results)


def test_results_are_interleaved_by_rank_and_numbered_from_first() -> None:
    local = [_local(0), _local(1)]
    bob = _citations("bob", _reply("/bob/a.md", "/bob/b.md"))
    merged = _merge([local, bob], k=4, first=3)
    assert [c.number for c in merged] == [3, 4, 5, 6]
    # Rank 1 of each list comes before rank 2 of any.
    assert {merged[0].source, merged[1].source} == {"/docs/local-0.md", "/bob/a.md"}
    assert [c.peer for c in merged if c.source.startswith("/bob/")] == ["bob", "bob"]
    assert all(c.peer is None for c in merged if c.source.startswith("/docs/"))


def test_k_caps_the_merged_list() -> None:
    lists = [[_local(i) for i in range(5)], _citations("carol", _reply("/c/1", "/c/2", "/c/3"))]
    assert len(_merge(lists, k=3, first=1)) == 3


def test_a_peer_citation_never_collides_with_a_workspace_chunk() -> None:
    (citation,) = _citations("bob", _reply("/bob/a.md"))
    assert citation.chunk_id < 0 and citation.document_id < 0
    assert citation.source_id == "/bob/a.md" and citation.legs == "both"
