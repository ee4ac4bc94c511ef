"""A question in a language the embedding model does not read is ranked by full text:
the built-in English model, real Spanish and English files, the real stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.workspaces import new_workspace

from autorag.context import AppContext, open_context
from autorag.ingest.minsync import refresh
from autorag.models import SearchResponse
from autorag.retrieval.hybrid import SearchRequest

FILES = {
    "piscina.md": "La piscina municipal abre los domingos a las nueve de la mañana y "
    "cierra a las dos de la tarde. Los socios entran gratis con su carné.",
    "biblioteca.md": "La biblioteca presta hasta seis libros durante tres semanas. Los "
    "domingos la biblioteca permanece cerrada todo el día.",
    "basura.md": "Los contenedores de basura orgánica se vacían cada noche; el cartón "
    "y el vidrio, los lunes y los jueves por la mañana.",
    "mercado.md": "El mercado de abastos abre de lunes a sábado; los puestos de fruta "
    "y de pescado cierran a mediodía los sábados.",
    "gimnasio.md": "El gimnasio del polideportivo tiene clases de yoga por la tarde y "
    "una sala de pesas abierta hasta las diez de la noche.",
    "pool.md": "The community swimming pool opens at nine on Sundays and closes at two "
    "in the afternoon; members swim for free with their card.",
}
SPANISH = "¿A qué hora abre la piscina los domingos?"


def _open(tmp_path: Path, catalog_url: str | None, **config: object) -> AppContext:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in FILES.items():
        (docs / name).write_text(text, encoding="utf-8")
    workspace = new_workspace(tmp_path / "kb", catalog_url, search_paths=[str(docs)], **config)
    app = open_context(workspace)
    refresh(app.catalog, app.info, app.indexer, app.roots, ignore=app.settings.ingest.ignore)
    return app


@pytest.fixture()
def app(tmp_path: Path, catalog_url: str | None) -> Iterator[AppContext]:
    context = _open(tmp_path, catalog_url)
    yield context
    context.close()


def _search(app: AppContext, query: str, mode: str = "hybrid") -> SearchResponse:
    return app.searcher.search(SearchRequest(query, k=10, mode=mode))  # type: ignore[arg-type]


def test_a_spanish_question_is_ranked_as_full_text_ranks_it(app: AppContext) -> None:
    assert sorted(app.catalog.languages(app.info.id)) == ["en", "es"]
    hybrid = _search(app, SPANISH)
    full_text = [hit.chunk_id for hit in _search(app, SPANISH, "fts").hits]
    assert full_text, "the Spanish files share words with the question"
    found_by_words = [hit.chunk_id for hit in hybrid.hits if hit.legs != "vector"]
    assert found_by_words == full_text[: len(found_by_words)]
    # What only the vector leg found still comes, after every chunk full text found.
    legs = [hit.legs for hit in hybrid.hits]
    assert "vector" in legs
    assert legs.index("vector") == len(found_by_words)
    assert set(legs[len(found_by_words) :]) == {"vector"}
    notes = [d for d in hybrid.diagnostics if d.code == "vector_language"]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert "reads English only" in notes[0].message and "in Spanish" in notes[0].message


def test_an_english_question_in_the_same_workspace_uses_both_legs(app: AppContext) -> None:
    response = _search(app, "What time does the swimming pool open on Sundays?")
    assert response.hits[0].source.endswith("pool.md")
    assert response.hits[0].legs == "both"
    assert not [d for d in response.diagnostics if d.code == "vector_language"]


def test_a_model_declared_multilingual_votes_in_every_language(
    tmp_path: Path, catalog_url: str | None
) -> None:
    app = _open(tmp_path, catalog_url, embedding={"languages": ["*"]})
    try:
        response = _search(app, SPANISH)
        assert not [d for d in response.diagnostics if d.code == "vector_language"]
        # The vector leg votes in full: what only it found scores as an RRF rank does
        # (at least 1/(k+depth+1)), not the silenced leg's 1e-9 × that.
        vector_only = [hit.score for hit in response.hits if hit.legs == "vector"]
        assert vector_only and min(vector_only) > 1e-6
    finally:
        app.close()
