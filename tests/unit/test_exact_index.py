from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from autorag.models import SearchFilters
from autorag.retrieval.filters import build_filters
from autorag.store.vectors.exact import ExactIndex


def _table() -> pa.Table:
    vectors = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    return pa.table(
        {
            "chunk_id": pa.array([10, 11, 12, 13], pa.int64()),
            "doc_type": ["pdf", "md", "pdf", "md"],
            "doc_date": pa.array(
                [datetime(2024, m, 1, tzinfo=UTC) for m in (1, 2, 3, 4)],
                pa.timestamp("us", tz="UTC"),
            ),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), 2),
        }
    )


def test_ranks_by_cosine_similarity() -> None:
    index = ExactIndex(_table())
    hits = index.search(np.array([1, 0], np.float32), depth=3, filters=SearchFilters())
    assert [chunk for chunk, _ in hits] == [10, 11, 12]
    assert hits[0][1] == 1.0


def test_filters_exclude_before_ranking() -> None:
    index = ExactIndex(_table())
    query = np.array([1, 0], np.float32)
    only_md = index.search(query, depth=10, filters=build_filters(["md"]))
    assert [chunk for chunk, _ in only_md] == [11, 13]
    march = build_filters(date_from="2024-03-01", date_to="2024-03-01")
    assert [c for c, _ in index.search(query, depth=10, filters=march)] == [12]


def test_depth_larger_than_table_and_empty_table() -> None:
    index = ExactIndex(_table())
    assert len(index.search(np.array([0, 1], np.float32), depth=99, filters=SearchFilters())) == 4
    empty = ExactIndex(_table().slice(0, 0))
    assert empty.search(np.array([0, 1], np.float32), depth=5, filters=SearchFilters()) == []
