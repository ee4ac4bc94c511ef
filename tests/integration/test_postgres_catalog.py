"""The catalog and its full-text index on PostgreSQL, beside LanceDB vectors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text, update
from tests.postgres import PostgresTestServer
from tests.samples import write_corpus

from autorag.context import AppContext, open_context
from autorag.errors import InvalidInput, Unavailable
from autorag.ingest.minsync import refresh
from autorag.models import Chunk, SearchFilters
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.store.catalog.repository import Catalog, DocumentMeta, StagedDocument
from autorag.store.catalog.revision import SCHEMA_HEAD
from autorag.store.fulltext import open_fulltext
from autorag.store.fulltext.postgres import PostgresFullTextIndex, rank_weights
from autorag.text.analysis import index_terms
from autorag.workspace import init_workspace

pytestmark = pytest.mark.postgres
NONE = SearchFilters()


@pytest.fixture
def engine(postgres_server: PostgresTestServer) -> Iterator[Engine]:
    engine = create_catalog_engine(postgres_server.new_database())
    yield engine
    engine.dispose()


@pytest.fixture
def catalog(engine: Engine) -> Catalog:
    return Catalog(engine)


def _stage(catalog: Catalog, workspace: str, docs: dict[str, str], **meta: object) -> list[int]:
    """Documents of one chunk each, named by ``docs`` keys (the title), made ready."""
    info = catalog.ensure_workspace(workspace)
    staged = [
        StagedDocument(
            DocumentMeta(
                source_id=f"/notes/{title}.txt",
                doc_type=str(meta.get("doc_type", "txt")),
                title=title,
                size=len(body),
                mtime_ns=0,
                content_hash=title,
                doc_date=meta.get("doc_date", datetime(2024, 1, 1, tzinfo=UTC)),  # type: ignore[arg-type]
            ),
            [Chunk(0, body, 0, 0, None, title)],
        )
        for title, body in docs.items()
    ]
    written = catalog.stage_documents(info.id, staged)
    document_ids = [doc_id for doc_id, _ in written.values()]
    if meta.get("ready", True):
        catalog.mark_ready(document_ids, "test-model")
    return [chunk_id for _, chunk_ids in written.values() for chunk_id in chunk_ids]


def _titles(catalog: Catalog, found: list[tuple[int, float]]) -> list[str]:
    views = catalog.visible_chunks(catalog.ensure_workspace("a").id, [c for c, _ in found], NONE)
    return [views[chunk_id].title for chunk_id, _ in found if chunk_id in views]


# -- schema -----------------------------------------------------------------------------
def test_migrations_reach_head_on_a_fresh_database(postgres_server: PostgresTestServer) -> None:
    engine = create_catalog_engine(postgres_server.new_database(migrated=False))
    try:
        migrate(engine)
        migrate(engine)  # at head: a no-op
        with engine.connect() as conn:
            head = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
            index = conn.execute(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_chunks_tsv'")
            ).scalar_one()
        assert head == SCHEMA_HEAD
        assert "gin (tsv)" in index
        assert "tsv" in {c["name"] for c in inspect(engine).get_columns("chunks")}
    finally:
        engine.dispose()


def test_the_postgres_fulltext_revision_is_a_no_op_on_sqlite(tmp_path: Path) -> None:
    engine = create_catalog_engine(sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    tables = set(inspect(engine).get_table_names())
    assert "chunks_fts" in tables and "fulltext_settings" not in tables
    engine.dispose()


def test_bare_postgresql_urls_use_psycopg(postgres_server: PostgresTestServer) -> None:
    url = postgres_server.new_database().replace("postgresql+psycopg://", "postgresql://")
    engine = create_catalog_engine(url)
    try:
        assert engine.dialect.driver == "psycopg"
        migrate(engine)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://nobody@127.0.0.1:1/autorag",  # nothing listens on port 1
        "postgresql+nodriver://nobody@localhost/autorag",
        "no-such-scheme:/x",
    ],
)
def test_an_unusable_database_is_unavailable_with_the_reason(url: str, tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "kb")
    with pytest.raises(Unavailable) as raised:
        open_context(workspace, database_url=url)
    assert raised.value.code == "unavailable"
    assert "catalog database" in raised.value.message
    assert "Background on this error" not in raised.value.message  # the driver's words


# -- full-text --------------------------------------------------------------------------
def test_open_fulltext_picks_postgres_by_dialect(engine: Engine) -> None:
    from autorag.config import SearchSettings

    assert isinstance(open_fulltext(engine, SearchSettings()), PostgresFullTextIndex)


def test_search_ranks_stays_in_its_workspace_and_tracks_edits(catalog: Catalog) -> None:
    [kayak, _] = _stage(
        catalog,
        "a",
        {"kayak": "Kayak paddles are stored in bay four.", "cat": "The office cat is Pixel."},
    )
    _stage(catalog, "b", {"other kayak": "Kayak paddles of workspace b."})
    index = PostgresFullTextIndex(catalog.engine)
    workspace = catalog.ensure_workspace("a").id
    found = index.search(workspace, "Where are the kayak paddles?", depth=10, filters=NONE)
    assert [chunk_id for chunk_id, _ in found] == [kayak]
    assert index.search(workspace, "the of and", depth=10, filters=NONE) == []
    assert index.search(workspace, 'kayak" OR -paddles:* & !', depth=10, filters=NONE)

    with catalog.engine.begin() as conn:  # the trigger keeps the vector in step with the terms
        edit = {"text": "Canoe oars.", "fts_text": index_terms("Canoe oars.", "en")}
        conn.execute(update(ChunkRow).where(ChunkRow.id == kayak).values(**edit))
    assert index.search(workspace, "paddles", depth=10, filters=NONE) == []
    assert [c for c, _ in index.search(workspace, "oars", depth=10, filters=NONE)] == [kayak]


def test_or_semantics_rank_documents_matching_more_words_first(catalog: Catalog) -> None:
    _stage(
        catalog,
        "a",
        {
            "both": "The refund window is thirty days.",
            "one": "A window seat costs extra.",
            "none": "Parcels travel by courier.",
        },
    )
    index = PostgresFullTextIndex(catalog.engine)
    found = index.search(catalog.ensure_workspace("a").id, "refund window", depth=10, filters=NONE)
    assert _titles(catalog, found) == ["both", "one"]


def test_rare_words_weigh_more_than_common_ones(catalog: Catalog) -> None:
    common = {f"common {i}": "Patients were treated in the clinic." for i in range(8)}
    _stage(
        catalog,
        "a",
        {
            **common,
            "many": "Patients, patients and more patients: patients everywhere.",
            "rare": "One patient had thalassemia.",
        },
    )
    index = PostgresFullTextIndex(catalog.engine)
    found = index.search(
        catalog.ensure_workspace("a").id, "thalassemia patients", depth=3, filters=NONE
    )
    # BM25's IDF: "thalassemia" (1 chunk) outweighs "patients" (9 chunks) repeated 4 times.
    assert _titles(catalog, found)[:2] == ["rare", "many"]


def test_title_weight_lifts_title_matches(catalog: Catalog) -> None:
    _stage(
        catalog,
        "a",
        {
            "warranty": "Covers hinges for two years.",
            "misc": "The warranty card is in the box with the warranty leaflet.",
        },
    )
    workspace = catalog.ensure_workspace("a").id
    heavy = PostgresFullTextIndex(catalog.engine, title_weight=10.0)
    light = PostgresFullTextIndex(catalog.engine, title_weight=0.1)
    assert _titles(catalog, heavy.search(workspace, "warranty", depth=5, filters=NONE)) == [
        "warranty",
        "misc",
    ]
    assert _titles(catalog, light.search(workspace, "warranty", depth=5, filters=NONE)) == [
        "misc",
        "warranty",
    ]
    assert rank_weights(4.0) == [0.25, 0.0, 0.0, 1.0]


def test_the_analyser_stems_under_any_configuration_and_a_switch_rebuilds(
    catalog: Catalog,
) -> None:
    # The terms are stemmed before PostgreSQL sees them (autorag.text.analysis), so even
    # `simple`, which adds no stemming of its own, meets "refund" with "Refunds".
    [refunds] = _stage(catalog, "a", {"policy": "Refunds were processed within days."})
    workspace = catalog.ensure_workspace("a").id
    simple = PostgresFullTextIndex(catalog.engine, config="simple")
    found = simple.search(workspace, "refund processing", depth=5, filters=NONE)
    assert [chunk_id for chunk_id, _ in found] == [refunds]

    english = PostgresFullTextIndex(catalog.engine, config="english")  # rebuilds the vectors
    found = english.search(workspace, "refund processing", depth=5, filters=NONE)
    assert [chunk_id for chunk_id, _ in found] == [refunds]
    _stage(catalog, "a", {"later": "Two refunds pending."})  # written with the new config
    assert len(english.search(workspace, "refund", depth=5, filters=NONE)) == 2
    with catalog.engine.connect() as conn:
        stored = conn.execute(text("SELECT config FROM fulltext_settings")).scalar_one()
    assert stored == "english"

    PostgresFullTextIndex(catalog.engine, config="simple")  # and back
    assert len(simple.search(workspace, "refund", depth=5, filters=NONE)) == 2
    with catalog.engine.connect() as conn:
        stored = conn.execute(text("SELECT config FROM fulltext_settings")).scalar_one()
    assert stored == "simple"


def test_an_unknown_configuration_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidInput, match=r"klingon.*english"):
        PostgresFullTextIndex(engine, config="klingon")


def test_filters_and_the_backstop(catalog: Catalog) -> None:
    [old_pdf] = _stage(
        catalog,
        "a",
        {"old": "Harbour opening hours."},
        doc_type="pdf",
        doc_date=datetime(2020, 6, 1, tzinfo=UTC),
    )
    [new_txt] = _stage(catalog, "a", {"new": "Harbour closing hours."})
    [pending] = _stage(catalog, "a", {"pending": "Harbour tours."}, ready=False)
    workspace = catalog.ensure_workspace("a").id
    index = PostgresFullTextIndex(catalog.engine)

    def ids(filters: SearchFilters) -> set[int]:
        return {c for c, _ in index.search(workspace, "harbour", depth=10, filters=filters)}

    # Unfiltered, the raw index may return a document still being indexed: the
    # catalog backstop (visible_positions) is what hides it, as on SQLite.
    assert ids(NONE) == {old_pdf, new_txt, pending}
    assert set(catalog.visible_positions(workspace, ids(NONE), NONE)) == {old_pdf, new_txt}
    assert ids(build_filters(["pdf"])) == {old_pdf}
    assert ids(build_filters(date_from="2021-01-01")) == {new_txt}
    assert ids(build_filters(date_from="2020-06-01", date_to="2020-06-01")) == {old_pdf}


# -- a workspace end to end: PostgreSQL full-text + LanceDB vectors ----------------------
@pytest.fixture
def app(tmp_path: Path, postgres_server: PostgresTestServer) -> Iterator[AppContext]:
    docs = tmp_path / "docs"
    write_corpus(docs)
    workspace = init_workspace(tmp_path / "kb")
    workspace.write_config(
        {"search_paths": [str(docs)], "database_url": postgres_server.new_database()}
    )
    context = open_context(workspace)
    yield context
    context.close()


def test_a_workspace_is_indexed_and_searched_hybrid(app: AppContext) -> None:
    report = refresh(app.catalog, app.info, app.indexer, app.roots, ignore=[".*"])
    assert report.indexed == 8 and not report.failures
    assert isinstance(app.fulltext, PostgresFullTextIndex)
    assert not (app.workspace.database_file).exists()  # the catalog is on the server
    hit = app.searcher.search(SearchRequest("refund window thirty days", k=1)).hits[0]
    assert hit.source == os.path.join(app.roots[0].path, "refunds.pdf")
    assert hit.legs == "both"
    only_md = app.searcher.search(
        SearchRequest("warranty hinges refund", k=10, mode="fts", filters=build_filters(["md"]))
    )
    assert {h.doc_type for h in only_md.hits} == {"md"}
    with app.catalog.engine.begin() as conn:
        conn.execute(update(DocumentRow).values(status="deleting"))
    assert app.searcher.search(SearchRequest("refund window", k=5)).hits == []


def test_values_the_server_refuses_are_invalid_input(catalog: Catalog) -> None:
    from autorag.chat.memory import set_memory

    workspace = catalog.ensure_workspace("a").id
    with pytest.raises(InvalidInput, match="out of range"):  # SQLite: simply not found
        catalog.get_document(workspace, "100000000000")
    with pytest.raises(InvalidInput, match="NUL"):
        set_memory(catalog, workspace, "key", "a\x00b")
