"""An archive's link graph: the whole of it, or the neighbourhood of one page.

Nodes are pages (``page:<id>``) and dangling targets (``dangling:<title key>``: a name no
page answers to yet); an edge is "this page links to that", however many times. Cycles
and self-links are ordinary edges. A neighbourhood is a breadth-first walk over links in
both directions (a page's links and its backlinks), at most 3 steps and 500 nodes, the walk
one statement (the database follows the source and target indexes).
"""

from __future__ import annotations

from sqlalchemy import Engine

from autorag.errors import InvalidInput
from autorag.wiki import store
from autorag.wiki.models import Graph, GraphEdge, GraphNode

MAX_DEPTH = 3
MAX_NODES = 500


def page_key(page_id: int) -> str:
    return f"page:{page_id}"


def dangling_key(target_key: str) -> str:
    return f"dangling:{target_key}"


def whole(engine: Engine, archive_id: int) -> Graph:
    nodes = [
        GraphNode(page_key(page_id), page_id, path, title)
        for page_id, path, title in store.page_nodes(engine, archive_id)
    ]
    return _with_edges(nodes, store.all_edges(engine, archive_id))


def neighbourhood(engine: Engine, page_id: int, depth: int) -> Graph:
    """The pages within ``depth`` links of ``page_id`` (either direction), the dangling
    targets they link to, and the links among them; at most ``MAX_NODES`` nodes."""
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be from 0 to {MAX_DEPTH}", code="invalid_depth")
    near = store.nearest_pages(engine, page_id, depth, MAX_NODES)
    nodes = [GraphNode(page_key(pid), pid, path, title) for pid, path, title in near]
    # Every link among them is one of their own outgoing links.
    edges = store.edges_among(engine, [pid for pid, _, _ in near])
    return _with_edges(nodes, edges, limit=MAX_NODES)


def _with_edges(
    nodes: list[GraphNode], edges: list[store.Edge], *, limit: int | None = None
) -> Graph:
    keys = {node.key for node in nodes}
    out_nodes = list(nodes)
    out_edges: dict[tuple[str, str], GraphEdge] = {}
    for source, target, target_key, written in edges:
        source_key = page_key(source)
        if source_key not in keys:
            continue
        if target is not None:
            target_node = page_key(target)
            if target_node in keys:
                out_edges.setdefault((source_key, target_node), GraphEdge(source_key, target_node))
            continue
        target_node = dangling_key(target_key)
        if target_node not in keys:
            if limit is not None and len(out_nodes) >= limit:
                continue
            keys.add(target_node)
            out_nodes.append(GraphNode(target_node, None, None, written, dangling=True))
        out_edges.setdefault(
            (source_key, target_node), GraphEdge(source_key, target_node, dangling=True)
        )
    return Graph(out_nodes, list(out_edges.values()))
