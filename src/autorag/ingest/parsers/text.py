"""Plain text and Markdown: decoded by charset detection and kept as written."""

from __future__ import annotations

import re
from pathlib import Path

from charset_normalizer import CharsetMatch, from_bytes

from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.dates import front_matter_date
from autorag.models import ParsedDocument, Segment

# Encodings documents are really saved in. Left to try every codec, the detector picks
# DOS, Mac or HP code pages for short Western text (a latin-1 "élève" came out as cp775).
_CANDIDATE_ENCODINGS = [
    "utf_8",
    "utf_16",
    "utf_32",
    "cp1250",
    "cp1251",
    "cp1252",
    "cp1253",
    "cp1254",
    "cp1255",
    "cp1256",
    "cp1257",
    "cp1258",
    "iso8859_2",
    "iso8859_5",
    "iso8859_7",
    "iso8859_15",
    "koi8_r",
    "cp932",
    "euc_jp",
    "gb18030",
    "big5",
    "euc_kr",
]

# When single-byte decodings score the same, Windows-1252 (a superset of latin-1's printable
# range) is by far the most likely origin.
_WESTERN = "cp1252"

_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_ATX_H1 = re.compile(r"^ {0,3}# +(.*?)(?: +#+)? *$")


class TextParser:
    """``.txt``: the whole file as one segment."""

    doc_type = "txt"
    extensions: tuple[str, ...] = (".txt",)

    def parse(self, path: Path) -> ParsedDocument:
        text = decode_text(path.read_bytes())
        return ParsedDocument(segments=[Segment(text)], doc_type=self.doc_type)


class MarkdownParser:
    """``.md``: kept as Markdown source; the title is the first ``# `` heading."""

    doc_type = "md"
    extensions: tuple[str, ...] = (".md", ".markdown")

    def parse(self, path: Path) -> ParsedDocument:
        text = decode_text(path.read_bytes())
        return ParsedDocument(
            segments=[Segment(text)],
            title=markdown_title(text),
            doc_type=self.doc_type,
            date=front_matter_date(text),
        )


def decode_text(data: bytes) -> str:
    """Decode bytes of unknown encoding, with newlines normalised to ``\\n``."""
    text = str(_detect_encoding(data))
    if "\x00" in text:
        raise ParseError("file holds NUL bytes: binary data, not text", reason="unsupported_type")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def markdown_title(text: str) -> str | None:
    """The first level-1 ATX heading outside fenced code, or None."""
    in_fence = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else _ATX_H1.match(line)
        if heading and heading.group(1).strip():
            return heading.group(1).strip()
    return None


def _detect_encoding(data: bytes) -> CharsetMatch:
    matches = from_bytes(data, cp_isolation=_CANDIDATE_ENCODINGS)
    best = matches.best()
    if best is None:
        raise ParseError(
            "content is not text in any known encoding (a binary file?)",
            reason="unsupported_type",
        )
    return next((match for match in matches if _is_western_tie(match, best)), best)


def _is_western_tie(match: CharsetMatch, best: CharsetMatch) -> bool:
    return (
        _WESTERN in match.could_be_from_charset
        and match.chaos <= best.chaos
        and match.coherence >= best.coherence
    )
