"""Text helpers shared across layers (pure): one-line snippets here, keyword queries in
:mod:`.keywords`, light stemming in :mod:`.stemming`."""

from __future__ import annotations


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``limit`` characters
    with an ellipsis when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
