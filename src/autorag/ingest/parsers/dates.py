"""A document's own date, read from its metadata: PDF ``/CreationDate`` or XMP, Office
core properties, Markdown front matter ``date:``.

Every value is hostile input: a date that cannot be read, or that is implausible
(before 1900, or later than tomorrow: a wrong clock or a forged field), is no date, and
the file's modification time stands instead (``autorag.ingest.pipeline``).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only a type here: reading a .docx or .md must not import pypdf
    from pypdf import PdfReader

_EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
# Front matter is looked for at the very start of the file, within this many characters.
_FRONT_MATTER_CHARS = 8192
_FRONT_MATTER = re.compile(
    r"\A(?:\ufeff)?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL
)
_DATE_LINE = re.compile(r"^date[ \t]*:[ \t]*(.+?)[ \t]*$", re.MULTILINE | re.IGNORECASE)


class CoreProperties(Protocol):
    """Office core properties (python-docx, python-pptx, openpyxl all have these)."""

    @property
    def created(self) -> datetime | None: ...

    @property
    def modified(self) -> datetime | None: ...


def plausible(value: object) -> datetime | None:
    """``value`` as an aware UTC datetime when it is a believable document date, else None.
    Naive values are taken as UTC (Office stores UTC; PDF writers that omit the zone)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    else:
        return None
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    if moment < _EARLIEST or moment > datetime.now(UTC) + timedelta(days=1):
        return None
    return moment


def pdf_date(reader: PdfReader) -> datetime | None:
    """``/CreationDate`` of the info dictionary, else the XMP create date, else the
    modification date (info, then XMP)."""
    for source, name in (
        ("info", "creation_date"),
        ("xmp", "xmp_create_date"),
        ("info", "modification_date"),
        ("xmp", "xmp_modify_date"),
    ):
        try:
            holder = reader.metadata if source == "info" else reader.xmp_metadata
            found = plausible(getattr(holder, name, None) if holder is not None else None)
        except Exception:  # a malformed date string or XMP packet is no date
            continue
        if found is not None:
            return found
    return None


def office_date(properties: CoreProperties) -> datetime | None:
    """The core properties' ``created``, else ``modified``."""
    for name in ("created", "modified"):
        try:
            found = plausible(getattr(properties, name))
        except Exception:  # python-docx parses W3CDTF lazily and may raise here
            continue
        if found is not None:
            return found
    return None


def front_matter_date(text: str) -> datetime | None:
    """``date:`` of a YAML front matter block at the start of a Markdown file: an ISO
    date or date-time, quoted or not."""
    block = _FRONT_MATTER.match(text[:_FRONT_MATTER_CHARS])
    if block is None:
        return None
    line = _DATE_LINE.search(block.group(1))
    if line is None:
        return None
    value = line.group(1).split(" #", 1)[0].strip().strip("'\"").strip()
    return plausible(_iso(value))


def _iso(value: str) -> datetime | None:
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), datetime.min.time())
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
