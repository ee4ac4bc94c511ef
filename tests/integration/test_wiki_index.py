"""An archive's search index (wiki/indexing.py): its pages as documents of the hidden
workspace row ``archive:<id>``, searched through the same stores as documents, on each
vector backend, and never seen by the workspace itself (search, documents, listings)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from tests.integration.conftest import LaunchApi
from tests.workspaces import new_workspace

from autorag.auth.service import create_api_key, create_user
from autorag.context import AppContext, open_context
from autorag.embeddings.base import Vectors
from autorag.embeddings.cache import CachedEmbedder
from autorag.errors import Conflict, NotFound
from autorag.ops import workspaces as ws
from autorag.store.catalog.models import DocumentRow, WorkspaceRow
from autorag.store.vectors.qdrant import close_clients
from autorag.wiki.indexing import NAMESPACE_KIND, PageIndex, namespace_name
from autorag.wiki.models import Archive
from autorag.wiki.service import WikiService
from autorag.workspace_settings import update_settings

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

KAYAK = (
    "The kayak paddles are stored in the blue shed behind the boathouse; the key hangs "
    "by the door of the sailing club."
)

BACKENDS = [
    pytest.param((None, "lancedb"), id="sqlite-lancedb"),
    pytest.param(("postgresql", "pgvector"), id="postgresql-pgvector", marks=pytest.mark.postgres),
    pytest.param((None, "qdrant"), id="sqlite-qdrant"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppContext]:
    catalog, vector_store = request.param
    url = request.getfixturevalue("postgres_server").new_database() if catalog else None
    root = tmp_path_factory.mktemp(vector_store)
    context = open_context(new_workspace(root, url, vector_store=vector_store))
    yield context
    context.close()
    close_clients()


@pytest.fixture(scope="module")
def wiki(app: AppContext) -> WikiService:
    return WikiService(app)


@pytest.fixture(scope="module")
def handbook(wiki: WikiService) -> Archive:
    archive = wiki.create_archive("handbook", title="Handbook", by="tester")
    wiki.save_page(
        archive,
        "places/boathouse",
        body="---\ntags: [zanzibarquux]\n---\n" + KAYAK,
        title="Boathouse",
        base_version=None,
        by="tester",
    )
    wiki.save_page(
        archive,
        "people/ada",
        body="Ada keeps the accounts of the club and signs the invoices.",
        title="Ada Lovelace Treasurer",
        base_version=None,
        by="tester",
    )
    return archive


def test_search_finds_pages_by_their_text_in_every_mode(
    wiki: WikiService, handbook: Archive
) -> None:
    for mode in ("hybrid", "vector", "fts"):
        hits = wiki.search(handbook, "where are the kayak paddles stored", k=5, mode=mode)
        assert hits, mode
        top = hits[0]
        assert (top.path, top.title) == ("places/boathouse", "Boathouse"), mode
        assert "blue shed" in top.text and top.page_id == wiki.page(handbook, top.path).id
        assert len({hit.page_id for hit in hits}) == len(hits)  # the best passage per page


def test_the_title_is_indexed_and_the_front_matter_is_not(
    wiki: WikiService, handbook: Archive
) -> None:
    by_title = wiki.search(handbook, "treasurer", k=3, mode="fts")
    assert [hit.path for hit in by_title] == ["people/ada"]
    assert wiki.search(handbook, "zanzibarquux", k=3, mode="fts") == []


def test_pages_live_in_a_hidden_namespace_row(app: AppContext, handbook: Archive) -> None:
    name = namespace_name(handbook.id)
    with app.catalog.engine.connect() as conn:
        kind = conn.execute(select(WorkspaceRow.kind).where(WorkspaceRow.name == name)).scalar()
        origins = conn.execute(
            select(DocumentRow.origin, DocumentRow.source_id, DocumentRow.doc_type)
            .join(WorkspaceRow, WorkspaceRow.id == DocumentRow.workspace_id)
            .where(WorkspaceRow.name == name)
            .order_by(DocumentRow.source_id)
        ).all()
    assert kind == NAMESPACE_KIND
    assert [tuple(row) for row in origins] == [
        ("archive", f"{name}/people/ada", "md"),
        ("archive", f"{name}/places/boathouse", "md"),
    ]
    # Never a workspace: not listed, not found by name, not creatable over.
    assert [s.info.name for s in ws.list_workspaces(app.catalog)] == ["default"]
    assert name in [s.info.name for s in ws.list_workspaces(app.catalog, hidden=True)]
    with pytest.raises(NotFound):
        app.catalog.get_workspace(name)
    with pytest.raises(Conflict):
        app.catalog.ensure_workspace(name)


def test_the_workspace_search_never_sees_pages(app: AppContext, handbook: Archive) -> None:
    from autorag.retrieval.hybrid import SearchRequest

    hits = app.searcher.search(SearchRequest("kayak paddles blue shed", k=10)).hits
    assert hits == []
    assert app.catalog.list_documents(app.info.id) == []
    assert app.catalog.status_counts(app.info.id) == {}


def test_deleting_the_archive_drops_its_namespace(app: AppContext, wiki: WikiService) -> None:
    archive = wiki.create_archive("scratch", by="tester")
    wiki.save_page(archive, "note", body=KAYAK, title="Note", base_version=None, by="tester")
    info = app.catalog.find_namespace(namespace_name(archive.id), NAMESPACE_KIND)
    assert info is not None
    table = app.for_workspace(info).vectors
    assert table.count() >= 1
    wiki.delete_archive(archive.name)
    assert app.catalog.find_namespace(namespace_name(archive.id), NAMESPACE_KIND) is None
    with app.catalog.engine.connect() as conn:
        left = conn.execute(
            select(func.count()).select_from(DocumentRow).where(DocumentRow.workspace_id == info.id)
        ).scalar_one()
    assert left == 0
    PageIndex(app).drop(archive)  # nothing left to drop: a no-op


def test_a_save_re_embeds_only_the_changed_chunks(app: AppContext, wiki: WikiService) -> None:
    embedder = app.embedder
    assert isinstance(embedder, CachedEmbedder)
    counted = _count_model_texts(embedder)
    archive = wiki.create_archive("logistics", by="tester")
    # Paragraphs of about 700 characters, so several 800-character chunks; named after the
    # backend, as the cache is shared by the module's runs.
    paragraphs = [
        " ".join(
            f"{app.settings.vector_store} paragraph {n}, about harbour logistics {i}."
            for i in range(14)
        )
        for n in range(6)
    ]
    body = "\n\n".join(paragraphs)
    page = wiki.save_page(archive, "harbour", body=body, title="Harbour", base_version=None, by="t")
    first = len(counted)
    assert first >= 5  # every chunk embedded once
    counted.clear()
    changed = paragraphs.copy()
    changed[3] = changed[3].replace("harbour logistics", "harbour crane schedules")
    wiki.save_page(
        archive, "harbour", body="\n\n".join(changed), title="Harbour",
        base_version=page.version, by="t",
    )  # fmt: skip
    assert 1 <= len(counted) <= 2  # the chunk(s) holding paragraph 3, nothing else
    assert all("crane schedules" in text for text in counted)
    hits = wiki.search(archive, "crane schedules", k=3, mode="hybrid")
    assert hits and hits[0].path == "harbour" and "crane" in hits[0].text


def test_the_workspace_s_redact_on_ingest_holds_for_its_archives(app: AppContext) -> None:
    careful = ws.create_workspace(app.catalog, f"careful-{app.settings.vector_store}")
    update_settings(app.catalog, careful, {"redact_on_ingest": True})
    wiki = WikiService(app.for_workspace(careful))
    archive = wiki.create_archive("contacts", by="tester")
    body = "Write to ada.lovelace@example.com about the boathouse keys."
    page = wiki.save_page(archive, "ada", body=body, title="Ada", base_version=None, by="t")
    assert page.body == body  # the page itself is what was written
    hits = wiki.search(archive, "boathouse keys", k=3, mode="fts")
    assert hits and "example.com" not in hits[0].text and "[REDACTED]" in hits[0].text


def _count_model_texts(embedder: CachedEmbedder) -> list[str]:
    """Wraps the real model behind the cache: the texts that reach it."""
    seen: list[str] = []
    inner = embedder.inner
    embed = inner.embed

    def counting(texts: Sequence[str]) -> Vectors:
        seen.extend(texts)
        return embed(texts)

    inner.embed = counting  # type: ignore[method-assign]
    return seen


# -- through the API: the workspace never shows its archives' pages -----------------------
def _prepare(context: AppContext) -> dict[str, Any]:
    create_user(context.catalog, "boss", "a long enough password", "admin")
    _, key = create_api_key(context.catalog, "boss", "tests", [], scopes=["admin:protection"])
    team = ws.create_workspace(context.catalog, "team")
    wiki = WikiService(context.for_workspace(team))
    archive = wiki.create_archive("notes", by="boss")
    wiki.save_page(archive, "shed", body=KAYAK, title="Shed", base_version=None, by="boss")
    return {"key": key, "archive_id": archive.id}


def test_the_api_never_shows_archive_pages_and_a_deleted_workspace_takes_them(
    launch_api: LaunchApi, tmp_path: Path
) -> None:
    server = launch_api(tmp_path / "kb", prepare=_prepare)
    key, archive_id = server.prepared["key"], server.prepared["archive_id"]
    search = server.call(
        "POST", "/api/workspaces/team/search", key, json={"query": "kayak paddles blue shed"}
    )
    assert search.status_code == 200 and search.json()["hits"] == []
    documents = server.call("GET", "/api/workspaces/team/documents", key)
    assert documents.status_code == 200 and documents.json()["total"] == 0
    listed = server.call("GET", "/api/workspaces", key).json()
    assert "archive" not in str(listed)
    hidden = namespace_name(archive_id)
    assert server.call("GET", f"/api/workspaces/{hidden}/documents", key).status_code == 404
    assert server.call("DELETE", "/api/workspaces/team", key).status_code == 204
    with server.sql() as conn:
        names = conn.execute(select(WorkspaceRow.name)).scalars().all()
        origins = conn.execute(select(DocumentRow.origin)).scalars().all()
    assert names == ["default"] and "archive" not in origins
