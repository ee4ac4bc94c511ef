"""An archive's pages nested by path: what ``?tree=true`` answers and ``ls --tree`` draws."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import with_config

from autorag.wiki.models import PageSummary
from autorag.wiki.wire import CAMEL_CASE


@with_config(CAMEL_CASE)
@dataclass
class PageNode:
    """One path segment: the page at that path if there is one, and the paths below it."""

    name: str  # the segment: "apollo"
    path: str  # the path up to it: "projects/apollo"
    page: PageSummary | None = None  # None: a folder with no page of its own
    children: list[PageNode] = field(default_factory=list)


def page_tree(pages: Iterable[PageSummary]) -> list[PageNode]:
    """The pages as a forest by path segment, each level sorted by name."""
    nodes: dict[str, PageNode] = {}
    roots: list[PageNode] = []
    for page in sorted(pages, key=lambda p: p.path.split("/")):
        parent: PageNode | None = None
        path = ""
        for segment in page.path.split("/"):
            path = f"{path}/{segment}" if path else segment
            node = nodes.get(path)
            if node is None:
                node = nodes[path] = PageNode(segment, path)
                (parent.children if parent is not None else roots).append(node)
            parent = node
        nodes[page.path].page = page
    return roots
