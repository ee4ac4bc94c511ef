"""``autorag migrate``: an embedded workspace copied to PostgreSQL + pgvector, checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from tests.postgres import PostgresTestServer
from tests.samples import write_corpus
from typer.testing import CliRunner

from autorag.cli.main import app as cli
from autorag.context import open_context
from autorag.errors import Conflict, InvalidInput
from autorag.ingest.minsync import refresh
from autorag.ops.migrate import migrate_to
from autorag.retrieval.hybrid import SearchRequest
from autorag.workspace import Workspace, init_workspace

pytestmark = pytest.mark.postgres


@pytest.fixture
def indexed(tmp_path: Path) -> Workspace:
    write_corpus(tmp_path / "docs")
    workspace = init_workspace(tmp_path / "kb")
    workspace.write_config({"search_paths": [str(tmp_path / "docs")]})
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    context.close()
    return workspace


def test_the_copy_has_every_row_and_finds_what_the_original_finds(
    indexed: Workspace, postgres_server: PostgresTestServer
) -> None:
    url = postgres_server.new_database(migrated=False)
    source = open_context(indexed)
    try:
        report = migrate_to(source, url, vector_store="pgvector", samples=8)
    finally:
        source.close()
    assert report.ok, report
    assert {t.table: t.target for t in report.tables}["documents"] == 8
    # Every feature's tables are copied (and checked), the archives' and synthesis' too.
    assert {"archive_pages", "synth_runs", "synth_done"} <= {t.table for t in report.tables}
    assert report.embedded_chunks > 0 and len(report.samples) == 8
    assert "***" in report.target or "@" not in report.target
    copy = open_context(indexed, database_url=url, vector_store="pgvector")
    try:
        hits = copy.searcher.search(SearchRequest("refund window", k=3)).hits
        assert hits[0].source.endswith("refunds.pdf") and hits[0].legs == "both"
        # New rows get fresh ids after the copied ones.
        copy.catalog.ensure_workspace("after-migration")
    finally:
        copy.close()


def test_a_database_that_is_not_empty_is_refused(
    indexed: Workspace, postgres_server: PostgresTestServer
) -> None:
    url = postgres_server.new_database(migrated=False)
    source = open_context(indexed)
    try:
        migrate_to(source, url, samples=0)
        with pytest.raises(Conflict, match="already holds"):
            migrate_to(source, url, samples=0)
        with pytest.raises(InvalidInput, match="PostgreSQL"):
            migrate_to(source, "sqlite:////tmp/x.db", samples=0)
    finally:
        source.close()


def test_the_cli_writes_the_config_when_the_copy_checks_out(
    indexed: Workspace, postgres_server: PostgresTestServer
) -> None:
    url = postgres_server.new_database(migrated=False)
    result = CliRunner().invoke(
        cli, ["-w", str(indexed.root), "migrate", "--to", url, "--samples", "4", "--write-config"]
    )
    assert result.exit_code == 0, result.output
    assert "checks out" in result.output
    config = indexed.config_file.read_text()
    assert 'vector_store = "pgvector"' in config and "search_paths" in config
    engine = create_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM chunks WHERE tsv IS NOT NULL")).scalar()
    engine.dispose()
