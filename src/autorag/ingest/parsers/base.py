"""The parser protocol and the error every parser raises."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from autorag.errors import InvalidInput
from autorag.models import ParsedDocument


class Parser(Protocol):
    """Reads one file into text segments. Raises ``ParseError`` with a reason."""

    doc_type: str
    extensions: tuple[str, ...]

    def parse(self, path: Path) -> ParsedDocument: ...


ParseReason = Literal[
    "encrypted", "corrupt", "too_large", "zip_bomb", "unsupported_type", "unreadable", "empty"
]


class ParseError(InvalidInput):
    """A file that cannot be turned into text; ``reason`` is the stable machine code."""

    code = "parse_error"

    def __init__(self, message: str, *, reason: ParseReason) -> None:
        super().__init__(message)
        self.reason: ParseReason = reason
