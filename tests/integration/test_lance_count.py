"""The vector count `autorag status` reads without LanceDB: recorded by the store after
each write, believed only while it is the table's newest version."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import lancedb
import numpy as np
import pytest
from tests.cli import autorag
from tests.samples import write_corpus

from autorag.errors import Unavailable
from autorag.store.vectors.base import VectorRecord
from autorag.store.vectors.lance_count import recorded_count
from autorag.store.vectors.lancedb import LanceVectorStore

DIM = 8


def _records(first: int, count: int) -> list[VectorRecord]:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    rng = np.random.default_rng(first)
    return [
        VectorRecord(i, i, "md", when, rng.random(DIM, dtype=np.float32))
        for i in range(first, first + count)
    ]


def test_every_write_records_the_count_of_the_version_it_made(tmp_path: Path) -> None:
    store = LanceVectorStore(tmp_path, "t", DIM)
    assert recorded_count(tmp_path, "t", DIM) == 0
    store.add(_records(1, 5))
    assert recorded_count(tmp_path, "t", DIM) == 5 == store.count()
    store.delete_documents([1, 2])
    assert recorded_count(tmp_path, "t", DIM) == 3 == store.count()
    other = LanceVectorStore(tmp_path, "t", DIM)  # another process's store, say
    other.add(_records(10, 4))
    assert recorded_count(tmp_path, "t", DIM) == 7


def test_a_record_that_is_not_the_newest_or_of_another_size_is_not_believed(
    tmp_path: Path,
) -> None:
    store = LanceVectorStore(tmp_path, "t", DIM)
    store.add(_records(1, 5))
    assert recorded_count(tmp_path, "t", DIM + 1) is None
    # A write that did not go through the store (or one whose record was not written).
    lancedb.connect(str(tmp_path)).open_table("t").delete("document_id = 1")
    assert recorded_count(tmp_path, "t", DIM) is None


def test_a_table_never_written_holds_no_vectors(tmp_path: Path) -> None:
    assert recorded_count(tmp_path / "absent", "t", DIM) == 0
    (tmp_path / "t.lance").mkdir()  # a table LanceDB began but this store never recorded
    assert recorded_count(tmp_path, "t", DIM) is None


def _status_without_lancedb_or_numpy(kb: Path) -> dict[str, object]:
    """``autorag status --json`` of ``kb`` run in a fresh interpreter, which must have
    imported neither LanceDB nor NumPy."""
    probe = (
        "import sys\n"
        "from autorag.cli.main import run\n"
        "sys.argv = ['autorag', '-w', sys.argv[1], 'status', '--json']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "print(sorted({'lancedb', 'numpy'} & set(sys.modules)), file=sys.stderr)\n"
    )
    shown = subprocess.run([sys.executable, "-c", probe, str(kb)], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr.strip().endswith("[]"), shown.stderr
    status: dict[str, object] = json.loads(shown.stdout)
    return status


def test_status_reads_the_record_without_importing_lancedb_or_numpy(tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    kb = tmp_path / "kb"
    assert autorag("init", str(kb)).returncode == 0
    new = _status_without_lancedb_or_numpy(kb)  # the first thing a new user runs
    assert new["state"] == "configured" and new["vectors"] == new["chunks"] == 0
    assert autorag("-w", str(kb), "add", str(tmp_path / "docs")).returncode == 0
    assert autorag("-w", str(kb), "refresh").returncode == 0
    status = _status_without_lancedb_or_numpy(kb)
    assert status["state"] == "ready" and status["vectors"] == status["chunks"]
    assert isinstance(status["chunks"], int) and status["chunks"] > 0


def test_opening_a_table_of_another_size_records_nothing_for_that_size(tmp_path: Path) -> None:
    LanceVectorStore(tmp_path, "t", DIM).add(_records(1, 3))
    with pytest.raises(Unavailable, match="reindex"):
        LanceVectorStore(tmp_path, "t", DIM + 1)
    assert recorded_count(tmp_path, "t", DIM + 1) is None
    assert recorded_count(tmp_path, "t", DIM) == 3
