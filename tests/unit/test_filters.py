from datetime import UTC, datetime

import pytest

from autorag.errors import InvalidInput
from autorag.retrieval.filters import build_filters


def test_date_only_upper_bound_includes_the_whole_day() -> None:
    filters = build_filters(date_from="2025-01-01", date_to="2025-12-31")
    assert filters.date_from == datetime(2025, 1, 1, tzinfo=UTC)
    assert filters.date_to == datetime(2026, 1, 1, tzinfo=UTC)  # exclusive bound


def test_exact_upper_bound_is_inclusive() -> None:
    filters = build_filters(date_to="2025-03-01T12:00:00Z")
    assert filters.date_to is not None
    assert filters.date_to > datetime(2025, 3, 1, 12, tzinfo=UTC)


def test_types_are_normalised_and_checked() -> None:
    assert build_filters([" PDF", ".md", "pdf"]).document_types == ("md", "pdf")
    with pytest.raises(InvalidInput, match="unknown document type exe"):
        build_filters(["exe"])


def test_bad_dates_are_rejected_clearly() -> None:
    with pytest.raises(InvalidInput, match="not an ISO date"):
        build_filters(date_from="yesterday")
    with pytest.raises(InvalidInput, match="is not before"):
        build_filters(date_from="2025-02-01", date_to="2025-01-01")


def test_no_filters_is_inactive() -> None:
    assert not build_filters().active
    assert build_filters(["md"]).active
