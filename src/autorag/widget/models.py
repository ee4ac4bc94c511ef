"""Widgets' plain data: what the service returns to commands, routes and the web UI.

A *widget* is a chat bubble a site embeds with one script tag. It answers anonymous
visitors from one workspace, only on the origins its admin allowed, within its rate
limits, with its model, greeting and colours, and optionally from a fixed reference text
(``rag_context``) instead of a search of the workspace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

PUBLIC_ID_PREFIX = "wgt_"
# The colours a site may set, and the defaults (a readable blue bubble on white).
DEFAULT_THEME: Mapping[str, str] = {
    "primary": "#2563eb",  # the bubble, the send button, the visitor's messages
    "background": "#ffffff",  # the panel
    "text": "#111827",  # the panel's text
}
DEFAULT_VISITOR_PER_MINUTE = 10
DEFAULT_WIDGET_PER_MINUTE = 120
# The skills an anonymous visitor's answer may use: reading only. Writing a page, a
# chat's memory or attachments, and installed MCP tools are for the workspace's users.
VISITOR_SKILLS = frozenset({"rag_search", "wiki_query"})


@dataclass(frozen=True)
class Widget:
    public_id: str  # "wgt_…": the data-widget-id and X-Widget-Id; unguessable
    workspace: str  # the workspace's name
    name: str  # unique in the workspace
    enabled: bool
    allowed_origins: tuple[str, ...]  # "https://example.com"; () = no site may embed it
    model: str | None  # provider/model; None: the workspace's default
    greeting: str
    theme: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_THEME))
    visitor_per_minute: int = DEFAULT_VISITOR_PER_MINUTE
    widget_per_minute: int = DEFAULT_WIDGET_PER_MINUTE
    rag_context: str | None = None  # set: answers from this text, no search
    created_by: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def admits(self, origin: str) -> bool:
        """Whether a page on ``origin`` may use the widget (exact, normalised match)."""
        return normalise_origin(origin) in self.allowed_origins


def normalise_origin(origin: str) -> str:
    """``Origin`` as browsers send it: scheme and host lower-cased, no trailing slash."""
    return origin.strip().rstrip("/").lower()


def embed_snippet(base_url: str, public_id: str) -> str:
    """The one tag a site puts on its pages."""
    return (
        f'<script src="{base_url.rstrip("/")}/widget.js" '
        f'data-widget-id="{public_id}" async></script>'
    )
