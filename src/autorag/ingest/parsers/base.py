"""The parser protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from autorag.models import ParsedDocument


class Parser(Protocol):
    """Reads one file into text segments. Raises ``ParseError`` with a reason."""

    doc_type: str
    extensions: tuple[str, ...]

    def parse(self, path: Path) -> ParsedDocument: ...
