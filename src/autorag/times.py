"""Moments as the catalog keeps them: in UTC. SQLite hands a stored timestamp back
without its zone, PostgreSQL with it; code that compares or shows one reads it here."""

from __future__ import annotations

from datetime import UTC, datetime


def as_utc(moment: datetime) -> datetime:
    """``moment`` with a zone: a naive one is UTC, as every stored timestamp is."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def as_utc_or_none(moment: datetime | None) -> datetime | None:
    """``as_utc`` of a timestamp that may be missing (a job not yet finished, say)."""
    return None if moment is None else as_utc(moment)
