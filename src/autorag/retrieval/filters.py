"""Building search filters from what people type (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

from autorag.errors import InvalidInput
from autorag.models import SearchFilters
from autorag.times import as_utc

DOCUMENT_TYPES = frozenset({"pdf", "docx", "pptx", "xlsx", "csv", "txt", "md", "html"})


def build_filters(
    document_types: Iterable[str] = (), date_from: str | None = None, date_to: str | None = None
) -> SearchFilters:
    """ISO dates or datetimes; a date-only upper bound includes that whole day."""
    types = tuple(sorted({t.strip().lower().lstrip(".") for t in document_types if t.strip()}))
    unknown = [t for t in types if t not in DOCUMENT_TYPES]
    if unknown:
        known = ", ".join(sorted(DOCUMENT_TYPES))
        raise InvalidInput(f"unknown document type {', '.join(unknown)} (known: {known})")
    start = _parse(date_from, "dateFrom", end_of_day=False) if date_from else None
    end = _parse(date_to, "dateTo", end_of_day=True) if date_to else None
    if start and end and start >= end:
        raise InvalidInput(f"dateFrom {date_from} is not before dateTo {date_to}")
    return SearchFilters(types, start, end)


def _parse(value: str, name: str, *, end_of_day: bool) -> datetime:
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end_of_day else moment
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{name}: {value!r} is not an ISO date (YYYY-MM-DD)") from None
    parsed = as_utc(parsed)
    # An exact upper bound is inclusive for people; the filter itself is exclusive.
    return parsed + timedelta(microseconds=1) if end_of_day else parsed
