"""One contract for every vector store: LanceDB, pgvector (PostgreSQL) and Qdrant.

pgvector runs on the session's private PostgreSQL (``postgres_url`` in tests/conftest.py);
Qdrant in qdrant-client's in-process local mode, which serves the same client API as a
server. The end-to-end tests index a small corpus and search it through each backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import Engine, text
from tests.samples import write_corpus

from autorag.config import VectorSettings
from autorag.context import AppContext, open_context
from autorag.errors import InvalidInput, Unavailable
from autorag.ingest.minsync import refresh
from autorag.ingest.reembed import reembed_workspace
from autorag.models import SearchFilters
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.db import create_catalog_engine, sqlite_url
from autorag.store.vectors import VectorRecord, VectorStore, open_vector_store
from autorag.store.vectors.pgvector import PgVectorStore
from autorag.store.vectors.qdrant import close_clients
from autorag.workspace import init_workspace

# Local mode says payload indexes only matter on a server: true, and expected here.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 16
TYPES = ("pdf", "md", "txt")
BACKENDS = ["lancedb", pytest.param("pgvector", marks=pytest.mark.postgres), "qdrant"]


@dataclass
class Backend:
    name: str
    directory: Path
    engine: Engine | None
    settings: VectorSettings

    def open(self, table: str, dim: int = DIM, *, recreate: bool = False) -> VectorStore:
        return open_vector_store(
            self.name,
            self.directory,
            table,
            dim,
            recreate=recreate,
            engine=self.engine,
            settings=self.settings,
        )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    engine = None
    if request.param == "pgvector":
        engine = create_catalog_engine(request.getfixturevalue("postgres_url"))
    settings = VectorSettings(qdrant_path=tmp_path / "qdrant")
    yield Backend(request.param, tmp_path / "lancedb", engine, settings)
    close_clients()
    if engine is not None:
        engine.dispose()


@pytest.fixture()
def table() -> str:
    # Unique: pgvector's tables share one database for the whole module.
    return f"ws_test_{uuid.uuid4().hex[:8]}"


def _records(count: int = 30, *, dim: int = DIM, seed: int = 7) -> list[VectorRecord]:
    """Three chunks per document; document d has type TYPES[d % 3] and year 2020 + d % 5."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [
        VectorRecord(
            chunk_id=i + 1,
            document_id=i // 3,
            doc_type=TYPES[(i // 3) % 3],
            doc_date=datetime(2020 + (i // 3) % 5, 3, 1, tzinfo=UTC),
            vector=vectors[i],
        )
        for i in range(count)
    ]


def _exact(
    records: list[VectorRecord], query: npt.NDArray[np.float32], depth: int, keep: object = None
) -> list[int]:
    """The true top ``depth`` chunk ids among the records ``keep`` accepts."""
    chosen = [r for r in records if keep is None or keep(r)]  # type: ignore[operator]
    scores = [float(r.vector @ query) for r in chosen]
    order = np.argsort([-s for s in scores], kind="stable")[:depth]
    return [chosen[i].chunk_id for i in order]


def _ids(hits: list[tuple[int, float]]) -> list[int]:
    return [chunk_id for chunk_id, _ in hits]


def test_add_search_count_and_document_ids(backend: Backend, table: str) -> None:
    store = backend.open(table)
    records = _records()
    store.add(records)
    assert store.count() == 30
    assert store.document_ids() == set(range(10))
    query = records[4].vector
    hits = store.search(query, depth=5, filters=SearchFilters())
    assert _ids(hits) == _exact(records, query, 5)
    assert hits[0] == (5, pytest.approx(1.0, abs=1e-4))
    # Scores are cosine similarities, best first.
    by_id = {r.chunk_id: r for r in records}
    for chunk_id, score in hits:
        assert score == pytest.approx(float(by_id[chunk_id].vector @ query), abs=1e-4)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_delete_documents_and_add_them_again(backend: Backend, table: str) -> None:
    store = backend.open(table)
    records = _records()
    store.add(records)
    store.delete_documents([0, 1, 999])
    store.delete_documents([])
    assert store.count() == 24
    assert store.document_ids() == set(range(2, 10))
    hits = store.search(records[0].vector, depth=30, filters=SearchFilters())
    assert not {1, 2, 3, 4, 5, 6} & set(_ids(hits))
    store.add(records[:6])  # the pipeline's re-index: delete, then add
    assert store.count() == 30
    assert store.search(records[0].vector, depth=1, filters=SearchFilters())[0][0] == 1


def test_keyed_stores_upsert_by_chunk_id(backend: Backend, table: str) -> None:
    if backend.name == "lancedb":
        pytest.skip("LanceDB appends; callers delete a document before re-adding it")
    store = backend.open(table)
    records = _records()
    store.add(records)
    moved = records[10].vector * -1
    store.add([VectorRecord(11, 3, "md", datetime(2021, 1, 1, tzinfo=UTC), moved)])
    assert store.count() == 30
    assert store.search(moved, depth=1, filters=SearchFilters())[0][0] == 11
    pdf_only = store.search(moved, depth=30, filters=SearchFilters(document_types=("pdf",)))
    assert 11 not in _ids(pdf_only)  # the payload moved with the vector


def test_filters_on_types_and_dates(backend: Backend, table: str) -> None:
    store = backend.open(table)
    records = _records()
    store.add(records)
    store.optimize()
    query = records[0].vector
    cases: list[tuple[SearchFilters, object]] = [
        (SearchFilters(document_types=("md",)), lambda r: r.doc_type == "md"),
        (SearchFilters(document_types=("md", "txt")), lambda r: r.doc_type in ("md", "txt")),
        (
            SearchFilters(date_from=datetime(2021, 3, 1, tzinfo=UTC)),
            lambda r: r.doc_date >= datetime(2021, 3, 1, tzinfo=UTC),
        ),
        (  # date_to is exclusive; a naive datetime is UTC
            SearchFilters(date_to=datetime(2022, 3, 1)),
            lambda r: r.doc_date < datetime(2022, 3, 1, tzinfo=UTC),
        ),
        (
            SearchFilters(
                ("pdf",), datetime(2020, 1, 1, tzinfo=UTC), datetime(2023, 1, 1, tzinfo=UTC)
            ),
            lambda r: r.doc_type == "pdf" and r.doc_date.year < 2023,
        ),
    ]
    for filters, keep in cases:
        hits = store.search(query, depth=4, filters=filters)
        assert _ids(hits) == _exact(records, query, 4, keep), filters
        everything = store.search(query, depth=100, filters=filters)
        assert len(everything) == len(_exact(records, query, 100, keep)), filters
    nothing = SearchFilters(document_types=("xlsx",))
    assert store.search(query, depth=10, filters=nothing) == []


def test_depth_larger_than_the_table(backend: Backend, table: str) -> None:
    store = backend.open(table)
    records = _records(7)
    store.add(records)
    for depth in (100, 5000):  # 5000: past pgvector's largest ef_search
        hits = store.search(records[0].vector, depth=depth, filters=SearchFilters())
        assert sorted(_ids(hits)) == list(range(1, 8))


def test_empty_store(backend: Backend, table: str) -> None:
    store = backend.open(table)
    query = _records(1)[0].vector
    assert store.search(query, depth=10, filters=SearchFilters()) == []
    assert store.search(query, depth=10, filters=SearchFilters(("pdf",))) == []
    assert store.count() == 0
    assert store.document_ids() == set()
    store.delete_documents([1])
    store.optimize()


def test_recreate_and_drop_empty_the_table(backend: Backend, table: str) -> None:
    store = backend.open(table)
    store.add(_records())
    assert backend.open(table).count() == 30  # reopened: the rows are kept
    assert backend.open(table, recreate=True).count() == 0
    backend.open(table).add(_records(3))
    backend.open(table).drop()
    assert backend.open(table).count() == 0


def test_copy_to_replaces_the_target_for_open_readers(backend: Backend, table: str) -> None:
    source = backend.open(f"{table}_shadow", recreate=True)
    records = _records()
    source.add(records)
    live = backend.open(table)  # a reader holding the live table
    live.add(_records(5, seed=99))
    source.copy_to(table)
    assert live.count() == 30
    assert live.search(records[7].vector, depth=1, filters=SearchFilters())[0][0] == 8
    assert live.search(records[7].vector, depth=30, filters=SearchFilters(("md",)))
    assert source.count() == 30  # a copy: the source keeps its rows
    source.drop()
    assert live.count() == 30
    fresh = f"{table}_new"
    backend.open(table).copy_to(fresh)  # to a table that does not exist yet
    assert backend.open(fresh).document_ids() == set(range(10))


def test_copy_to_swaps_in_vectors_of_another_dimension(backend: Backend, table: str) -> None:
    backend.open(table, 8).add(_records(dim=8))
    shadow = backend.open(f"{table}_shadow", DIM, recreate=True)
    shadow.add(_records())
    shadow.copy_to(table)  # a re-embed with a model of another size
    assert backend.open(table, DIM).count() == 30
    with pytest.raises(Unavailable, match="reindex"):
        backend.open(table, 8)


def test_dimension_mismatch(backend: Backend, table: str) -> None:
    backend.open(table).add(_records())
    with pytest.raises(Unavailable, match="16-dim vectors"):
        backend.open(table, 32)
    store = backend.open(table)
    with pytest.raises(InvalidInput, match="shape"):
        store.add(_records(3, dim=DIM + 1))
    assert store.count() == 30


def test_pgvector_needs_a_postgresql_catalog(tmp_path: Path) -> None:
    engine = create_catalog_engine(sqlite_url(tmp_path / "catalog.db"))
    with pytest.raises(InvalidInput, match="PostgreSQL"):
        open_vector_store("pgvector", tmp_path, "ws_x", DIM, engine=engine)
    with pytest.raises(InvalidInput, match="known: lancedb, pgvector, qdrant"):
        open_vector_store("faiss", tmp_path, "ws_x", DIM)


# -- a PostgreSQL without pgvector (Debian's) -----------------------------------------
_DEBIAN_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="module")
def plain_postgres_url() -> Iterator[str]:
    """Debian's PostgreSQL 15, which has no pgvector; run as ``pgserver`` under root."""
    if not (_DEBIAN_BIN / "initdb").exists():
        pytest.skip("Debian's PostgreSQL binaries are not installed")
    root = Path(tempfile.mkdtemp(prefix="autorag-plainpg-"))
    as_user = _unprivileged(root)
    data = root / "data"
    try:
        _run([*as_user, str(_DEBIAN_BIN / "initdb"), "-D", str(data), "-U", "postgres"])
        options = f"-k {root} -h '' -c fsync=off"
        pg_ctl = [*as_user, str(_DEBIAN_BIN / "pg_ctl"), "-D", str(data), "-w"]
        _run([*pg_ctl, "-o", options, "-l", str(root / "log"), "start"])
        yield f"postgresql+psycopg://postgres@/postgres?host={root}"
        _run([*pg_ctl, "-m", "immediate", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _unprivileged(root: Path) -> list[str]:
    """PostgreSQL refuses root: as root, run it as pgserver's user (like pgserver does)."""
    if os.geteuid() != 0:
        return []
    import pwd

    try:
        user = pwd.getpwnam("pgserver")
    except KeyError:
        pytest.skip("no unprivileged user to run PostgreSQL as")
    os.chown(root, user.pw_uid, user.pw_gid)
    root.chmod(0o755)
    return ["runuser", "-u", "pgserver", "--"]


def _run(command: list[str]) -> None:
    subprocess.run(command, check=True, capture_output=True, timeout=60)


@pytest.mark.postgres
def test_missing_extension_is_a_clear_error(
    plain_postgres_url: str, postgres_server: object
) -> None:
    # postgres_server first: under root it creates the pgserver user this server runs as.
    engine = create_catalog_engine(plain_postgres_url)
    try:
        with pytest.raises(Unavailable, match="no pgvector extension"):
            PgVectorStore(engine, "ws_x", DIM, settings=VectorSettings())
    finally:
        engine.dispose()


# -- end to end: index a corpus and search it through each backend -----------------------
COMBINATIONS = [
    pytest.param(("lancedb", "sqlite"), id="lancedb-sqlite"),
    pytest.param(("qdrant", "sqlite"), id="qdrant-sqlite"),
    pytest.param(("pgvector", "postgresql"), id="pgvector-postgresql", marks=pytest.mark.postgres),
    pytest.param(("qdrant", "postgresql"), id="qdrant-postgresql", marks=pytest.mark.postgres),
]
QUESTIONS = {
    "refunds.pdf": "How long is the refund window?",
    "shipping.docx": "Which courier carries parcels?",
    "warranty.md": "How long does the warranty cover hinges?",
    "notes.txt": "What is the office cat called?",
}


@pytest.fixture(params=COMBINATIONS)
def indexed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AppContext]:
    vector_store, catalog = request.param
    docs = tmp_path / "docs"
    write_corpus(docs)
    workspace = init_workspace(tmp_path / "kb")
    workspace.write_config({"search_paths": [str(docs)]})
    overrides: dict[str, object] = {"vector_store": vector_store}
    if catalog == "postgresql":
        overrides["database_url"] = request.getfixturevalue("postgres_server").new_database()
    context = open_context(workspace, **overrides)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
    yield context
    context.close()
    close_clients()


def _top(context: AppContext, question: str, **kwargs: object) -> list[str]:
    response = context.searcher.search(SearchRequest(question, **kwargs))  # type: ignore[arg-type]
    return [Path(hit.source).name for hit in response.hits]


def test_index_and_hybrid_search_end_to_end(indexed: AppContext) -> None:
    assert indexed.vectors.count() > 0
    for name, question in QUESTIONS.items():
        assert _top(indexed, question, k=3)[0] == name
        assert _top(indexed, question, k=3, mode="vector")[0] == name
    only_pdf = _top(indexed, "warranty hinges refund", k=10, filters=build_filters(["pdf"]))
    assert only_pdf and set(only_pdf) == {"refunds.pdf"}
    vector_pdf = _top(
        indexed, "warranty hinges refund", k=10, mode="vector", filters=build_filters(["pdf"])
    )
    assert vector_pdf and set(vector_pdf) == {"refunds.pdf"}
    assert indexed.readiness().state == "ready"


def test_reembed_swaps_a_shadow_table_in(indexed: AppContext) -> None:
    before = indexed.vectors.count()

    def open_table(name: str, recreate: bool) -> VectorStore:
        return indexed.open_vector_table(name, recreate=recreate)

    report = reembed_workspace(indexed.catalog, indexed.info, indexed.embedder, open_table)
    assert report.chunks == before == indexed.vectors.count()
    assert _top(indexed, QUESTIONS["notes.txt"], k=1, mode="vector") == ["notes.txt"]


# -- pgvector specifics ------------------------------------------------------------------
@pytest.mark.postgres
def test_pgvector_filtered_ann_still_returns_k(postgres_url: str, table: str) -> None:
    """A filter through the HNSW index returns k rows (pgvector's iterative scan: with
    ef_search 10 a plain scan finds about 3 of 10), and one few rows pass too (the
    planner then scans those rows exactly)."""
    engine = create_catalog_engine(postgres_url)
    try:
        store = PgVectorStore(engine, table, DIM, settings=VectorSettings(pgvector_ef_search=10))
        records = [replace(r, doc_type=_kind(r.chunk_id)) for r in _records(2000)]
        store.add(records)
        store.optimize()
        query = records[1].vector
        for kind in ("quarter", "rare"):
            hits = store.search(query, depth=10, filters=SearchFilters(document_types=(kind,)))
            exact = _exact(records, query, 10, lambda r, kind=kind: r.doc_type == kind)
            assert len(hits) == 10 and {records[i - 1].doc_type for i in _ids(hits)} == {kind}
            assert len(set(_ids(hits)) & set(exact)) >= 8, kind  # approximate, but close
    finally:
        engine.dispose()


def _kind(chunk_id: int) -> str:
    if chunk_id % 4 == 0:
        return "quarter"  # 500 of 2000 rows: the planner walks the HNSW graph
    return "rare" if chunk_id % 100 == 1 else "pdf"  # 20 rows: an exact scan of them


@pytest.mark.postgres
def test_pgvector_optimize_builds_a_missing_hnsw_index(postgres_url: str, table: str) -> None:
    engine = create_catalog_engine(postgres_url)
    try:
        store = PgVectorStore(engine, table, DIM, settings=VectorSettings())
        assert _hnsw_indexes(engine, store) == 1
        with engine.begin() as conn:  # an operator's bulk load drops it first
            conn.execute(text(f"DROP INDEX {store.schema}.{_hnsw_name(engine, store)}"))
        store.add(_records())
        store.optimize()
        assert _hnsw_indexes(engine, store) == 1
        store.optimize()  # idempotent
        assert _hnsw_indexes(engine, store) == 1
    finally:
        engine.dispose()


_HNSW_OF_TABLE = (
    "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = CAST(:t AS regclass) "
    "AND a.amname = 'hnsw'"
)


def _hnsw_indexes(engine: Engine, store: PgVectorStore) -> int:
    with engine.connect() as conn:
        return len(conn.execute(text(_HNSW_OF_TABLE), {"t": store.qualified_table}).all())


def _hnsw_name(engine: Engine, store: PgVectorStore) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text(_HNSW_OF_TABLE), {"t": store.qualified_table}).scalar_one())
