"""The archive's plain data: what the wiki service returns to routes, commands and skills."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import with_config

from autorag.wiki.wire import CAMEL_CASE

EditAction = Literal["create", "update"]


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class ArchiveConfig:
    """An archive's options (stored as JSON on the archive)."""

    # wiki_write applies the agent's edits at once instead of proposing them.
    allow_agent_writes: bool = False
    # Synthesis (issue 19): only a local model may read this archive's sources.
    local_llm_only: bool = False
    # Members (by user name) a manager or admin let write this archive's pages, besides
    # those holding archive:write (autorag.auth.permissions.may_write_archive).
    writers: tuple[str, ...] = ()


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Archive:
    id: int
    workspace_id: int
    name: str  # slug, unique in its workspace: lowercase letters, digits, '-', '_'
    title: str
    description: str
    config: ArchiveConfig
    created_at: datetime
    updated_at: datetime
    created_by: str
    page_count: int = 0


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class PageSummary:
    id: int
    archive_id: int
    path: str  # normalised slug: "projects/apollo"
    title: str
    version: int
    updated_at: datetime
    updated_by: str


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Page:
    id: int  # stays the same across renames
    archive_id: int
    path: str
    title: str
    body: str  # markdown without the front matter
    front_matter: dict[str, Any]
    version: int  # 1 on create, +1 per save
    created_at: datetime
    created_by: str
    updated_at: datetime
    updated_by: str


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class PageVersion:
    page_id: int
    version: int
    path: str
    title: str
    body: str
    front_matter: dict[str, Any]
    saved_at: datetime
    saved_by: str
    note: str = ""  # "restored from version 3", "renamed from x/y", ...


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Link:
    """One ``[[…]]`` in a page: what it named, where it resolves, the sentence around it."""

    source_page_id: int
    source_path: str
    target: str  # as written: a title or a path
    target_page_id: int | None  # None: dangling (nothing by that title or path yet)
    target_path: str | None
    label: str | None  # [[Title|label]]
    heading: str | None  # [[Title#Heading]]
    context: str  # the sentence around the link


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class PageLinks:
    outgoing: list[Link]
    backlinks: list[Link]
    dangling: list[Link]  # outgoing links with no target page


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class GraphNode:
    key: str  # "page:<id>" or "dangling:<normalised target>"
    page_id: int | None
    path: str | None
    title: str
    dangling: bool = False


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class GraphEdge:
    source: str  # GraphNode.key
    target: str
    dangling: bool = False


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Graph:
    nodes: list[GraphNode]
    edges: list[GraphEdge]


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class PageHit:
    """A page found by search: the passage that matched and the page it is in."""

    page_id: int
    path: str
    title: str
    text: str  # the matching chunk
    score: float
    chunk_id: int
    document_id: int  # the page's row in the archive's index namespace
    legs: Literal["vector", "fts", "both"] = "both"


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Template:
    name: str  # person, project, meeting, decision, or an admin's own
    title: str
    body: str  # markdown with front matter, {{title}} replaced on use
    builtin: bool = True


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class ProposedEdit:
    """A save not yet made (wiki_write's dry run): what would change."""

    archive_id: int
    archive: str
    path: str
    action: EditAction
    title: str
    body: str
    diff: str  # unified diff of the page's markdown, old to new
    base_version: int | None  # the version it edits (None: a new page)


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class ImportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # pages the same as the file
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    attachments: int = 0


@with_config(CAMEL_CASE)
@dataclass(frozen=True)
class Attachment:
    """A file kept with an archive (an imported vault's images, a PDF the UI uploaded)."""

    archive_id: int
    name: str  # a normalised path under the archive: "images/diagram.png"
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    created_by: str
