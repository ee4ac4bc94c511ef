"""Full-text search in the language each document is written in, on both catalogs:
Spanish and Italian inflections and missing accents meet, Japanese and Korean words are
found inside runs without spaces, and English ranks as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, text, update
from tests.workspaces import new_workspace

from autorag.context import AppContext, open_context
from autorag.ingest.minsync import refresh
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.store.catalog.repository import workspace_languages
from autorag.text.analysis import index_terms

DOCUMENTS = {
    "gastos.txt": "Reembolsamos los gastos de viaje de los empleados en un plazo de quince "
    "días, siempre que presenten las facturas originales al departamento de finanzas.",
    "ferie.txt": "I rimborsi delle spese di trasferta arrivano entro trenta giorni: ogni "
    "dipendente allega le ricevute al modulo che l'ufficio amministrativo gli invia.",
    "tenki.txt": "東京の天気は明日から晴れる見込みです。週末は気温が上がるでしょう。",
    "hoeui.txt": "지난주 회의록을 요약했습니다. 다음 회의는 금요일 오후에 열립니다.",
    "refunds.txt": "Refunds were processed within five working days for every customer "
    "who returned the parcel unopened.",
}


@pytest.fixture(scope="module")
def app(
    tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None
) -> Iterator[AppContext]:
    root = tmp_path_factory.mktemp("languages")
    notes = root / "notes"
    notes.mkdir()
    for name, body in DOCUMENTS.items():
        (notes / name).write_text(body, encoding="utf-8")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(notes)])
    context = open_context(workspace)
    refresh(
        context.catalog,
        context.info,
        context.indexer,
        context.roots,
        ignore=context.settings.ingest.ignore,
    )
    yield context
    context.close()


def _found(app: AppContext, query: str) -> list[str]:
    hits = app.searcher.search(SearchRequest(query, k=5, mode="fts")).hits
    return [Path(hit.source).name for hit in hits]


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ("reembolsar gastos", "gastos.txt"),  # another form of the verb
        ("factura original", "gastos.txt"),  # singular against plural
        ("cuantos dias", "gastos.txt"),  # typed without accents
        ("un día", "gastos.txt"),  # a short word's singular against its plural
        ("rimborso spesa", "ferie.txt"),
        ("ricevuta dipendenti", "ferie.txt"),
        ("天気", "tenki.txt"),  # a word inside a run of characters without spaces
        ("気温", "tenki.txt"),
        ("회의록", "hoeui.txt"),  # a noun with its particle attached in the text
        ("refund processing", "refunds.txt"),
    ],
)
def test_each_language_finds_its_own_inflections(
    app: AppContext, query: str, document: str
) -> None:
    assert _found(app, query)[:1] == [document]


def test_each_document_records_its_language(app: AppContext) -> None:
    with app.catalog.engine.connect() as conn:
        rows = conn.execute(select(DocumentRow.source_id, DocumentRow.language))
        languages = {Path(source).name: language for source, language in rows}
        noted = workspace_languages(conn, app.info.id)
    assert languages == {
        "gastos.txt": "es",
        "ferie.txt": "it",
        "tenki.txt": "ja",
        "hoeui.txt": "ko",
        "refunds.txt": "en",
    }
    assert noted == ["en", "es", "it", "ja", "ko"]


def test_query_syntax_in_any_language_is_only_words(app: AppContext) -> None:
    assert _found(app, 'gastos" OR -viaje:* & ! NEAR(') == ["gastos.txt"]


def test_a_catalog_from_before_the_spanish_plurals_is_re_analysed_on_opening(
    tmp_path: Path, catalog_url: str | None
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("gastos.txt", "refunds.txt"):
        (notes / name).write_text(DOCUMENTS[name], encoding="utf-8")
    workspace = new_workspace(tmp_path / "kb", catalog_url, search_paths=[str(notes)])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
    # As revision 0021 left it: terms the analyser no longer makes ("días" kept whole).
    with context.catalog.engine.begin() as conn:
        conn.execute(update(ChunkRow).values(fts_text="dias stale"))
        conn.execute(text("UPDATE alembic_version SET version_num = '0021'"))
    context.close()

    reopened = open_context(workspace)
    try:
        with reopened.catalog.engine.connect() as conn:
            stored = {
                Path(source).name: (chunk_text, terms)
                for source, chunk_text, terms in conn.execute(
                    select(DocumentRow.source_id, ChunkRow.text, ChunkRow.fts_text).join(
                        ChunkRow, ChunkRow.document_id == DocumentRow.id
                    )
                )
            }
        spanish_text, spanish_terms = stored["gastos.txt"]
        assert spanish_terms == index_terms(spanish_text, "es") and " dia " in spanish_terms
        assert stored["refunds.txt"][1] == "dias stale"  # only Spanish documents change
        assert _found(reopened, "un día") == ["gastos.txt"]
    finally:
        reopened.close()
