"""Files of every type through the pipeline into the catalog (SQLite or PostgreSQL) +
LanceDB and back out."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest
from sqlalchemy import update
from tests.samples import write_corpus
from tests.workspaces import new_workspace

from autorag.context import AppContext, open_context
from autorag.ingest.chunker import chunk_document
from autorag.ingest.minsync import refresh
from autorag.ingest.readiness import Readiness, check_readiness
from autorag.models import ParsedDocument, SearchFilters, Segment
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.models import DocumentRow
from autorag.store.catalog.repository import DocumentMeta, StagedDocument

FACTS = {
    "pdf": ("How long is the refund window?", "refunds.pdf"),
    "docx": ("Which courier carries parcels?", "shipping.docx"),
    "pptx": ("When does the Aurora headset ship?", "roadmap.pptx"),
    "xlsx": ("Where are the kayak paddles stored?", "inventory.xlsx"),
    "csv": ("phone number for Iberia", "contacts.csv"),
    "html": ("Do gift cards expire?", "faq.html"),
    "md": ("How long does the warranty cover hinges?", "warranty.md"),
    "txt": ("What is the office cat called?", "notes.txt"),
}


@pytest.fixture()
def app(tmp_path: Path, catalog_url: str | None) -> Iterator[AppContext]:
    docs = tmp_path / "docs"
    write_corpus(docs)
    # PostgreSQL (full-text there too) or the default SQLite.
    workspace = new_workspace(tmp_path / "kb", catalog_url, search_paths=[str(docs)])
    context = open_context(workspace)
    yield context
    context.close()


def _refresh(app: AppContext) -> object:
    return refresh(app.catalog, app.info, app.indexer, app.roots, ignore=app.settings.ingest.ignore)


def _search(app: AppContext, query: str, **kwargs: object) -> list[str]:
    response = app.searcher.search(SearchRequest(query, **kwargs))  # type: ignore[arg-type]
    return [Path(hit.source).name for hit in response.hits]


def test_every_type_is_indexed_and_found(app: AppContext) -> None:
    report = _refresh(app)
    assert report.indexed == len(FACTS), report  # type: ignore[attr-defined]
    for doc_type, (question, name) in FACTS.items():
        assert _search(app, question, k=3)[0] == name, doc_type


def test_hits_carry_real_paths_ids_pages_and_legs(app: AppContext) -> None:
    _refresh(app)
    hit = app.searcher.search(SearchRequest("refund window thirty days", k=1)).hits[0]
    docs_root = app.roots[0]
    assert hit.source == os.path.join(docs_root.path, "refunds.pdf")  # seed 000: real path
    assert hit.source_id == f"/{docs_root.prefix}/refunds.pdf"  # catalog: virtual id
    assert hit.page == 2
    assert hit.legs == "both"
    assert hit.text.startswith("The refund window is thirty days")


def test_type_and_date_filters_apply_in_both_legs(app: AppContext) -> None:
    corpus = Path(app.roots[0].path)
    old = datetime(2020, 6, 1, tzinfo=UTC).timestamp()
    os.utime(corpus / "warranty.md", (old, old))
    _refresh(app)
    only_pdf = app.searcher.search(
        SearchRequest("warranty hinges refund", k=10, filters=build_filters(["pdf"]))
    )
    assert {h.doc_type for h in only_pdf.hits} == {"pdf"}
    for mode in ("fts", "vector", "hybrid"):
        in_2020 = _search(
            app,
            "warranty hinges",
            k=10,
            mode=mode,
            filters=build_filters(date_from="2020-06-01", date_to="2020-06-01"),
        )
        assert in_2020 == ["warranty.md"], mode
        after = _search(
            app, "warranty hinges", k=10, mode=mode, filters=build_filters(date_from="2021-01-01")
        )
        assert "warranty.md" not in after, mode


def test_guard_d01_skips_vectors_when_models_differ(app: AppContext) -> None:
    _refresh(app)
    with app.catalog.engine.begin() as conn:
        conn.execute(update(DocumentRow).values(embedding_model="local:some-other-model"))
    response = app.searcher.search(SearchRequest("refund window", k=5))
    assert [d.code for d in response.diagnostics] == ["embedding_model_mismatch"]
    assert response.hits and {h.legs for h in response.hits} == {"fts"}
    readiness = app.readiness()
    assert readiness.state == "degraded" and "reindex" in readiness.reason


def test_vectors_of_another_size_leave_the_workspace_degraded_not_unavailable(
    app: AppContext,
) -> None:
    """Another model configured, whose vectors have another size: the vector table cannot
    be opened for it, yet search runs full-text only, so the workspace is degraded."""
    _refresh(app)
    stored = app.catalog.embedding_models(app.info.id)
    why = "the vector table holds 384-dimension vectors, the model makes 768"

    def readiness(model: str) -> Readiness:
        return check_readiness(
            app.catalog.readiness_facts(app.info.id),
            search_paths=app.settings.search_paths,
            embedding_model=model,
            vectors=None,
            vectors_error=why,
        )

    other = readiness("ollama:nomic-embed-text")
    assert other.state == "degraded"
    assert "not ollama:nomic-embed-text" in other.reason and "reindex" in other.reason
    assert other.documents and other.chunks  # the rest of the report is still there
    # The same model, yet the table cannot open: that is unavailable, with the reason.
    (same,) = stored
    assert (readiness(same).state, readiness(same).reason) == ("unavailable", why)


def test_minsync_skips_unchanged_and_reembeds_only_touched_chunks(app: AppContext) -> None:
    corpus = Path(app.roots[0].path)
    long_doc = corpus / "handbook.md"
    paragraphs = [f"Section {i}. " + f"policy detail number {i} " * 30 for i in range(12)]
    long_doc.write_text("\n\n".join(paragraphs))
    _refresh(app)
    second = _refresh(app)
    assert second.indexed == 0 and second.unchanged == len(FACTS) + 1  # type: ignore[attr-defined]

    # A new wording per run: the session's embedding cache outlives one backend's run.
    paragraphs[5] = f"Section 5. The lighthouse keeper retires in autumn ({uuid4().hex}). " * 5
    long_doc.write_text("\n\n".join(paragraphs))
    embedder = app.embedder
    misses_before = embedder.misses  # type: ignore[attr-defined]
    third = _refresh(app)
    assert third.indexed == 1  # type: ignore[attr-defined]
    total_chunks = app.catalog.get_document(
        app.info.id, f"/{app.roots[0].prefix}/handbook.md"
    ).chunk_count
    re_embedded = embedder.misses - misses_before  # type: ignore[attr-defined]
    assert 1 <= re_embedded <= 3 < total_chunks
    assert _search(app, "when does the lighthouse keeper retire", k=1) == ["handbook.md"]


def test_deleted_files_leave_every_store(app: AppContext) -> None:
    _refresh(app)
    vectors_before = app.vectors.count()
    (Path(app.roots[0].path) / "notes.txt").unlink()
    report = _refresh(app)
    assert report.deleted == 1  # type: ignore[attr-defined]
    assert "notes.txt" not in _search(app, "office cat Pixel", k=10)
    assert app.vectors.count() == vectors_before - 1
    assert "notes.txt" not in _search(app, "office cat Pixel", k=10, mode="fts")


def test_half_indexed_documents_are_invisible_until_refresh_finishes(app: AppContext) -> None:
    _refresh(app)
    # What a kill between the catalog write and the vector write leaves behind.
    parsed = ParsedDocument([Segment("The submarine dock opens at dawn.")], title="dock")
    meta = DocumentMeta(
        source_id=f"/{app.roots[0].prefix}/dock.txt",
        doc_type="txt",
        title="dock",
        size=1,
        mtime_ns=1,
        content_hash="x",
        doc_date=datetime.now(UTC),
    )
    app.catalog.stage_documents(app.info.id, [StagedDocument(meta, chunk_document(parsed))])
    assert "dock.txt" not in _search(app, "submarine dock dawn", k=10, mode="fts")
    (Path(app.roots[0].path) / "dock.txt").write_text("The submarine dock opens at dawn.")
    _refresh(app)
    assert _search(app, "submarine dock dawn", k=1) == ["dock.txt"]


def test_failures_are_recorded_with_reasons_and_the_rest_continues(app: AppContext) -> None:
    corpus = Path(app.roots[0].path)
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (corpus / "image.xyz").write_bytes(b"\x00\x01")
    report = _refresh(app)
    codes = {Path(f.source_id).name: f.error_code for f in report.failures}  # type: ignore[attr-defined]
    assert codes == {"broken.pdf": "corrupt"}
    skips = {Path(f.source_id).name: f.error_code for f in report.skips}  # type: ignore[attr-defined]
    assert skips == {"image.xyz": "unsupported_type"}  # not read by design: no failure
    assert report.indexed == len(FACTS)  # type: ignore[attr-defined]
    readiness = app.readiness()
    assert readiness.state == "degraded"
    assert {f["code"] for f in readiness.failed} == {"corrupt"}
    assert {f["code"] for f in readiness.skipped} == {"unsupported_type"}


def test_no_filters_matches_search_filters_default() -> None:
    assert not SearchFilters().active


def test_workspaces_sharing_a_catalog_never_see_each_other(app: AppContext) -> None:
    _refresh(app)
    other = app.for_workspace(app.catalog.ensure_workspace("other"))
    try:
        assert other.info.id != app.info.id
        for mode in ("fts", "vector", "hybrid"):
            response = other.searcher.search(SearchRequest("refund window", k=10, mode=mode))
            assert response.hits == [], mode
    finally:
        other.close()


def test_symlink_loops_are_recorded_not_followed_forever(app: AppContext) -> None:
    corpus = Path(app.roots[0].path)
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)  # a cycle
    (corpus / "self.md").symlink_to(corpus / "self.md")  # ELOOP on stat
    report = _refresh(app)
    assert report.indexed == len(FACTS)  # type: ignore[attr-defined]
    codes = {Path(f.source_id).name: f.error_code for f in report.failures}  # type: ignore[attr-defined]
    assert codes == {"self.md": "symlink_loop"}
