"""A workspace's identity as the catalog keeps it, without SQLAlchemy: the fast
``autorag status`` path names the workspace's vector table from it too."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkspaceInfo:
    id: int
    name: str
    short_id: str

    @property
    def vector_table(self) -> str:
        """``ws_<name>_<shortId>``: one vector table per workspace."""
        safe = re.sub(r"[^a-z0-9_]", "_", self.name.lower())[:40]
        return f"ws_{safe}_{self.short_id}"
