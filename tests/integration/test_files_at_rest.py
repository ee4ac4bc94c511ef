"""Data at rest is the owner's alone (issue 15, finding 3): folders 0700, files 0600,
made so when written and repaired when opened; DLP originals sealed in the catalog.

Every test runs with the usual 022 umask, so what is checked is what the code sets, not
the owner-only umask the ``autorag`` command also sets.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from tests.samples import write_corpus
from tests.workspaces import catalog_sql, new_workspace

from autorag.auth.service import create_user
from autorag.context import open_context
from autorag.dlp.service import DlpContext, DlpService
from autorag.embeddings.cache import EmbeddingCache
from autorag.ingest.minsync import refresh
from autorag.keyring import SALT_FILE_NAME, SECRET_FILE_NAME, workspace_keyring
from autorag.store.catalog.db import MIGRATIONS_DIR, create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.repository import Catalog
from autorag.workspace import Workspace, find_workspace, init_workspace

CARD = "4111111111111111"


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def loose_paths(workspace: Workspace) -> list[str]:
    """Every path of the workspace's data whose mode is not owner-only, with its mode."""
    wrong = [] if mode(workspace.config_file) == 0o600 else [str(workspace.config_file)]
    for folder, dirs, files in os.walk(workspace.data_dir):
        base = Path(folder)
        if mode(base) != 0o700:
            wrong.append(f"{base} {mode(base):04o}")
        wrong += [f"{base / f} {mode(base / f):04o}" for f in files if mode(base / f) != 0o600]
        wrong += [f"{base / d} {mode(base / d):04o}" for d in dirs if (base / d).is_symlink()]
    return wrong


def test_init_makes_the_workspace_owner_only(tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir(mode=0o755)
    workspace = init_workspace(tmp_path / "kb")
    assert mode(workspace.data_dir) == 0o700 and mode(workspace.config_file) == 0o600
    assert loose_paths(workspace) == []
    workspace.write_config({**workspace.read_config(), "search_paths": ["/x"]})
    assert mode(workspace.config_file) == 0o600  # rewritten: still owner-only
    assert mode(tmp_path / "kb") == 0o755  # the folder around it is the user's business


def test_refresh_leaves_every_file_owner_only(tmp_path: Path, catalog_url: str | None) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    workspace = new_workspace(tmp_path / "kb", catalog_url, search_paths=[str(docs)])
    context = open_context(workspace)
    try:
        report = refresh(
            context.catalog,
            context.info,
            context.indexer,
            context.roots,
            ignore=context.settings.ingest.ignore,
        )
        assert report.indexed > 0
        assert any(workspace.vectors_dir.rglob("*.lance"))  # LanceDB wrote its files
        if catalog_url is None:
            assert workspace.database_file.exists()
            assert Path(f"{workspace.database_file}-wal").exists()
        assert loose_paths(workspace) == []
    finally:
        context.close()


def test_loosened_modes_are_repaired_on_the_next_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = init_workspace(tmp_path / "kb")
    open_context(workspace).close()  # the catalog exists
    uploads = workspace.uploads_dir / "abcd1234"
    uploads.mkdir(parents=True)
    (uploads / "doc.pdf").write_bytes(b"%PDF-")
    for path, loose in (
        (workspace.data_dir, 0o755),
        (workspace.database_file, 0o644),
        (workspace.config_file, 0o644),
        (workspace.uploads_dir, 0o775),
        (uploads / "doc.pdf", 0o644),
    ):
        path.chmod(loose)
    assert loose_paths(workspace)
    assert find_workspace(workspace.root) == workspace
    assert loose_paths(workspace) == []
    assert "autorag.db: mode was 0644, set to 0600" in caplog.text
    # The catalog is checked when opened too, whoever found the workspace.
    workspace.database_file.chmod(0o644)
    open_context(workspace).close()
    assert mode(workspace.database_file) == 0o600


def test_the_embedding_cache_file_is_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many("model", {"h": np.ones(4, "float32")})
    assert mode(path.parent) == 0o700
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    assert all(p.exists() for p in files)
    assert [mode(p) for p in files] == [0o600] * 3
    cache.close()  # the last connection removes the WAL files
    path.chmod(0o644)
    reopened = EmbeddingCache(path)
    assert reopened.stats().entries == 1
    reopened.put_many("model", {"i": np.zeros(4, "float32")})
    assert all(p.exists() for p in files)
    assert [mode(p) for p in files] == [0o600] * 3
    reopened.close()


# -- DLP originals --------------------------------------------------------------------
def _raw_originals(database: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(database) as conn:
        return list(conn.execute("SELECT id, original FROM dlp_originals"))


def test_originals_are_sealed_in_the_database_and_reveal_still_works(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "kb")
    context = open_context(workspace)
    try:
        admin = create_user(context.catalog, "root", "correct horse battery", role="admin")
        service = DlpService(context.catalog)
        original = f"message:3 | card {CARD}"
        original_id = service.record_redaction(
            original, "card [REDACTED]", ["credit_card"], DlpContext(), ref="message:3"
        )
        raw = _raw_originals(workspace.database_file)
        assert [r[0] for r in raw] == [original_id]
        assert CARD not in raw[0][1] and "message:3" not in raw[0][1]
        assert CARD not in workspace.database_file.read_bytes().decode("latin-1")
        assert service.reveal(ref="message:3", user_id=admin.id).original == original
        for name in (SECRET_FILE_NAME, SALT_FILE_NAME):  # what the key is derived from
            assert mode(workspace.data_dir / name) == 0o600
        key = workspace_keyring(workspace.data_dir).current
        assert key not in workspace.database_file.read_bytes()
    finally:
        context.close()


def test_originals_on_a_server_catalog_are_sealed_with_the_workspace_key(
    tmp_path: Path, catalog_url: str | None
) -> None:
    workspace = new_workspace(tmp_path / "kb", catalog_url)
    context = open_context(workspace)
    try:
        admin = create_user(context.catalog, "root", "correct horse battery", role="admin")
        service = DlpService(context.catalog)
        service.record_redaction(f"card {CARD}", "card [X]", ["credit_card"], DlpContext())
        with catalog_sql(workspace) as conn:
            [(original_id, stored)] = conn.execute(text("SELECT id, original FROM dlp_originals"))
        assert CARD not in stored
        assert service.reveal(original_id=original_id, user_id=admin.id).original.endswith(CARD)
        assert (workspace.data_dir / SALT_FILE_NAME).exists()  # the derived key sealed it
    finally:
        context.close()


def _clear_row(conn: sqlite3.Connection, original_id: str, original: str) -> None:
    conn.execute(
        "INSERT INTO dlp_originals (id, source, ref, original, redacted, types, created_at) "
        "VALUES (?, 'chat', ?, ?, 'card [REDACTED]', '[\"credit_card\"]', "
        "'2026-01-01 00:00:00')",
        (original_id, f"message:{original_id}", original),
    )


def test_clear_originals_of_an_older_version_are_sealed_by_the_upgrade(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "kb")
    engine = create_catalog_engine(sqlite_url(workspace.database_file))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0010")  # the schema before originals were sealed
    engine.dispose()
    with sqlite3.connect(workspace.database_file) as conn:
        _clear_row(conn, "old1", f"message:1 | card {CARD}")
    assert _raw_originals(workspace.database_file) == [("old1", f"message:1 | card {CARD}")]

    context = open_context(workspace)  # migrates
    try:
        [(_, stored)] = _raw_originals(workspace.database_file)
        assert CARD not in stored
        admin = create_user(context.catalog, "root", "correct horse battery", role="admin")
        record = DlpService(context.catalog).reveal(ref="message:old1", user_id=admin.id)
        assert record.original == f"message:1 | card {CARD}" and record.types == ("credit_card",)
    finally:
        context.close()


def test_a_clear_original_still_reveals(tmp_path: Path) -> None:
    """A row left in clear (written by an older version after the upgrade ran, or copied
    in) is read as it is."""
    database = tmp_path / "catalog.db"
    engine = create_catalog_engine(sqlite_url(database))
    migrate(engine)
    catalog = Catalog(engine)
    try:
        with sqlite3.connect(database) as conn:
            _clear_row(conn, "legacy", f"card {CARD}")
        admin = create_user(catalog, "root", "correct horse battery", role="admin")
        record = DlpService(catalog).reveal(original_id="legacy", user_id=admin.id)
        assert record.original == f"card {CARD}"
        events = json.dumps([e for e in _raw_originals(database)])
        assert "legacy" in events
    finally:
        engine.dispose()
