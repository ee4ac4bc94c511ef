"""Page paths, archive names and template names: what they may hold, and their one
normal form.

A page path is lowercase ``/``-separated segments, each ``[a-z0-9][a-z0-9._-]*`` (so never
empty, ``.``, ``..``, ``-`` or hidden), at most 8 segments and 200 characters. That a
segment is never ``-`` lets the API put a page's sub-resources after ``/-/``.
"""

from __future__ import annotations

import re
import unicodedata

from autorag.errors import InvalidInput

MAX_PATH_CHARS = 200
MAX_SEGMENTS = 8
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]*")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_SPACES = re.compile(r"\s+")


def normalise_path(raw: str) -> str:
    """``" Projects/Apollo Launch.md "`` → ``projects/apollo-launch``; anything else that
    is not a valid path raises ``InvalidInput`` (code ``invalid_page_path``)."""
    if not isinstance(raw, str):
        raise _bad_path(repr(raw), "a page path is text")
    text = _fold_accents(raw.strip()).lower()
    text = _SPACES.sub("-", text)
    if text.endswith(".md"):
        text = text[: -len(".md")]
    text = text.strip("/")
    if not text:
        raise _bad_path(raw, "it is empty")
    if len(text) > MAX_PATH_CHARS:
        raise _bad_path(raw, f"it is longer than {MAX_PATH_CHARS} characters")
    segments = text.split("/")
    if len(segments) > MAX_SEGMENTS:
        raise _bad_path(raw, f"it has more than {MAX_SEGMENTS} parts")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            raise _bad_path(raw, _why_segment(segment))
    return text


def is_path(raw: str) -> str | None:
    """The normal form of ``raw`` when it is a valid page path, else None."""
    try:
        return normalise_path(raw)
    except InvalidInput:
        return None


def check_name(raw: str, *, what: str = "archive", code: str = "invalid_archive_name") -> str:
    """An archive's (or template's) name, lowercased: ``[a-z0-9][a-z0-9_-]{0,62}``."""
    name = raw.strip().lower() if isinstance(raw, str) else ""
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"{_shown(raw)} is not a valid {what} name: use 1 to 63 lowercase letters, "
            "digits, '-' or '_', starting with a letter or digit",
            code=code,
        )
    return name


def _fold_accents(text: str) -> str:
    """``Café`` → ``Cafe``: letters with accents keep their base letter in a slug."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _why_segment(segment: str) -> str:
    if not segment:
        return "it has an empty part ('//')"
    if segment in (".", ".."):
        return f"'{segment}' is not allowed as a part"
    if segment[0] in "-_.":
        return f"the part {segment!r} starts with {segment[0]!r}"
    bad = sorted({c for c in segment if not re.fullmatch(r"[a-z0-9._-]", c)})
    return f"the part {_shown(segment)} holds characters not allowed: {_shown(''.join(bad))}"


def _shown(text: object) -> str:
    """Hostile text quoted and cut short, safe to put in a message."""
    shown = repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _bad_path(raw: str, why: str) -> InvalidInput:
    return InvalidInput(
        f"{_shown(raw)} is not a valid page path: {why} (use lowercase letters, digits, "
        "'.', '-', '_' and '/' between parts)",
        code="invalid_page_path",
    )
