"""Back a real workspace up, wipe it, restore it: the same searches, rows, logins and
sealed secrets (issue 20's round trip). And a restore that fails half-way leaves the
workspace exactly as it was."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session
from tests.workspaces import new_workspace

from autorag.auth import service as auth
from autorag.backup import restore as restore_module
from autorag.backup.archive import write_archive
from autorag.backup.models import RestoreReport
from autorag.backup.presence import exclusive_workspace, recover_interrupted
from autorag.backup.restore import (
    recover_interrupted_restores,
    restore_archive,
)
from autorag.backup.verify import verify_archive
from autorag.chat import store as chats
from autorag.config import load_settings
from autorag.context import AppContext, open_context, open_policy
from autorag.dlp import store as dlp_store
from autorag.ingest.minsync import refresh
from autorag.keyring import Keyring
from autorag.retrieval.hybrid import SearchRequest
from autorag.workspace import Workspace, init_workspace

PASSWORD = "correct horse battery staple"
QUERIES = ("How long is the refund window?", "Who carries parcels?", "office cat name")
# The tables the round trip compares row by row (the others by their counts).
COMPARED = ("users", "dlp_patterns", "policy_rules", "chats", "messages", "chunks")
# A document's columns but when it was indexed (a rebuild of the vectors re-marks it).
DOCUMENT_COLUMNS = "id, workspace_id, source_id, status, content_hash, chunk_count, doc_date"
DOCS = {
    "refunds.md": "# Refunds\n\nThe refund window is thirty days from delivery.\n",
    "shipping.md": "# Shipping\n\nParcels travel with the Zephyr courier service.\n",
    "cat.txt": "The office cat is called Pixel and sleeps on the printer.\n",
    "warranty.md": "# Warranty\n\nThe warranty covers hinges for five years.\n",
}


@dataclass
class World:
    workspace: Workspace
    key: Keyring
    with_vectors: Path
    without_vectors: Path
    searches: dict[str, list[tuple[int, int]]]  # query -> (chunk id, document id) in order
    rows: dict[str, list[tuple[Any, ...]]]
    counts: dict[str, int]
    original_id: str
    upload: Path
    upload_bytes: bytes


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    assert "AUTORAG_ENCRYPTION_KEY" not in os.environ  # the derived key seals; its inputs restored
    root = tmp_path_factory.mktemp("backup")
    docs = root / "docs"
    docs.mkdir()
    for name, body in DOCS.items():
        (docs / name).write_text(body, encoding="utf-8")
    workspace = new_workspace(root / "kb", None, search_paths=[str(docs)])
    context = open_context(workspace)
    try:
        original_id, upload = _fill(context, docs)
        searches = _searches(context)
        rows, counts = _rows(context)
        key = Keyring(os.urandom(32))
        archives = root / "archives"
        archives.mkdir()
        made = {}
        for vectors in (True, False):
            out = archives / f"vectors-{vectors}.autorag-backup"
            write_archive(
                workspace, context.settings, context.catalog.engine, key.current, out,
                include_vectors=vectors,
            )  # fmt: skip
            made[vectors] = out
    finally:
        context.close()
    yield World(
        workspace, key, made[True], made[False], searches, rows, counts, original_id,
        upload, upload.read_bytes(),
    )  # fmt: skip


def _fill(context: AppContext, docs: Path) -> tuple[str, Path]:
    """Documents indexed, a user, a DLP pattern and a sealed original, a policy rule, a
    chat, an uploaded file."""
    report = refresh(
        context.catalog, context.info, context.indexer, context.roots,
        ignore=context.settings.ingest.ignore,
    )  # fmt: skip
    assert report.indexed == len(DOCS), report
    user = auth.create_user(context.catalog, "alice", PASSWORD, "admin")
    dlp_store.insert_custom(context.catalog, "ticket", r"TCK-\d{6}", "tickets", True, limit=50)
    original_id = dlp_store.insert_original(
        context.catalog, original="TCK-123456", redacted="[TICKET]", types=["ticket"],
        source="chat", user_id=user.id, workspace_id=context.info.id, ref="r1",
    )  # fmt: skip
    open_policy(context).set_rule(f"{context.roots[0].path}/cat.txt", "ask")
    chat = chats.create_chat(context.catalog.engine, context.info.id, user.id, "Refunds")
    chats.add_user_message(context.catalog.engine, chat.id, "How long is the refund window?")
    upload = context.workspace.uploads_dir / context.info.short_id / f"{'a' * 64}.txt"
    upload.parent.mkdir(parents=True, exist_ok=True)
    upload.write_bytes(b"an uploaded file\n" * 100)
    return original_id, upload


def _searches(context: AppContext) -> dict[str, list[tuple[int, int]]]:
    return {
        query: [
            (hit.chunk_id, hit.document_id)
            for hit in context.searcher.search(SearchRequest(query, k=4)).hits
        ]
        for query in QUERIES
    }


def _rows(context: AppContext) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, int]]:
    with context.catalog.engine.connect() as conn:
        rows = {
            table: [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]
            for table in COMPARED
        }
        query = f"SELECT {DOCUMENT_COLUMNS} FROM documents ORDER BY id"
        rows["documents"] = [tuple(r) for r in conn.execute(text(query))]
        names = [
            r[0] for r in conn.execute(text("SELECT name FROM sqlite_master WHERE type='table'"))
        ]
        counts = {
            name: conn.execute(text(f'SELECT count(*) FROM "{name}"')).scalar_one()
            for name in names
            if not name.startswith(("sqlite_", "backup_", "chunks_fts_"))  # internals
        }
    return rows, counts


def _wipe(workspace: Workspace) -> None:
    """Everything in ``.autorag/`` gone, the configuration changed: a lost machine."""
    shutil.rmtree(workspace.data_dir)
    workspace.write_config({"workspace": "default", "search_paths": []})
    init_workspace(workspace.root)


def _restore(world: World, archive: Path) -> RestoreReport:
    context = open_context(world.workspace)  # the service's own context, closed first
    settings = context.settings
    context.close()
    assert verify_archive(archive, world.key).ok
    return restore_archive(world.workspace, settings, archive, world.key)


def _assert_restored(world: World, *, same_order: bool = True) -> None:
    context = open_context(world.workspace)
    try:
        searches = _searches(context)
        if same_order:
            assert searches == world.searches
        else:  # rebuilt vectors: the same documents found, the best one first
            for query, hits in world.searches.items():
                assert {d for _, d in searches[query]} == {d for _, d in hits}, query
                assert searches[query][0] == hits[0], query
        rows, counts = _rows(context)
        assert rows == world.rows
        assert counts == world.counts
        assert auth.authenticate(context.catalog, "alice", PASSWORD).username == "alice"
        with Session(context.catalog.engine) as session:
            sealed = dlp_store.get_original(session, original_id=world.original_id, ref=None)
        assert sealed.original == "TCK-123456"  # the restored key opens it
        assert context.settings.search_paths  # the configuration came back
        assert world.upload.read_bytes() == world.upload_bytes
        assert context.readiness().state == "ready"
    finally:
        context.close()
    assert not world.workspace.restore_staging_dirs()


def test_a_wiped_workspace_comes_back_whole(world: World) -> None:
    _wipe(world.workspace)
    report = _restore(world, world.with_vectors)
    assert report.vectors == "restored"
    assert report.manifest.vectors_included
    assert report.warnings == ()
    _assert_restored(world)


def test_without_vectors_the_restore_rebuilds_them(world: World) -> None:
    _wipe(world.workspace)
    report = _restore(world, world.without_vectors)
    assert report.vectors == "rebuilt"
    assert report.documents_reindexed == len(DOCS)
    assert any(world.workspace.vectors_dir.iterdir())
    _assert_restored(world, same_order=False)


def test_backup_tables_are_carried_over_from_the_current_catalog(world: World) -> None:
    context = open_context(world.workspace)
    try:
        with context.catalog.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO backup_jobs (name, cron, destination, retention_days, "
                    "include_vectors, enabled, created_at, updated_at) VALUES ('nightly', "
                    "'0 3 * * *', 'local:/b', 30, 1, 1, '2026-01-01', '2026-01-01')"
                )
            )
        auth.create_user(context.catalog, "mallory", PASSWORD, "member")  # made after the backup
    finally:
        context.close()
    _restore(world, world.with_vectors)
    context = open_context(world.workspace)
    try:
        with context.catalog.engine.connect() as conn:
            jobs = conn.execute(text("SELECT name FROM backup_jobs")).scalars().all()
            users = conn.execute(text("SELECT username FROM users")).scalars().all()
    finally:
        context.close()
    assert jobs == ["nightly"]  # the schedule survives the restore
    assert users == ["alice"]  # the rest is the backup's


def _snapshot(workspace: Workspace) -> dict[str, str]:
    """Every file of the workspace (and its configuration), by content; not the lock a
    process takes to open it (``autorag.backup.presence``), which holds nothing."""
    found = {}
    for path in sorted(workspace.root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path != workspace.server_lock_file:
            found[str(path.relative_to(workspace.root))] = hashlib.sha256(
                path.read_bytes()
            ).hexdigest()
    return found


def test_a_failure_after_the_catalog_swap_puts_everything_back(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = open_context(world.workspace)
    auth.create_user(context.catalog, "bob", PASSWORD, "member")  # differs from the backup
    settings = context.settings
    context.close()
    (world.workspace.data_dir / "vectors" / "lancedb" / "marker").write_text("mine")
    before = _snapshot(world.workspace)

    def broken(*_args: object) -> None:
        raise RuntimeError("the disk fell off")

    monkeypatch.setattr(restore_module, "_finish", broken)
    with pytest.raises(RuntimeError, match="disk fell off"):
        restore_archive(world.workspace, settings, world.with_vectors, world.key)
    assert _snapshot(world.workspace) == before
    assert not world.workspace.restore_staging_dirs()


_KILLED_MID_RESTORE = """
import os, sys
from pathlib import Path
from autorag.backup import restore
from autorag.config import load_settings
from autorag.keyring import Keyring
from autorag.workspace import Workspace

workspace, archive, key = Workspace(Path(sys.argv[1])), Path(sys.argv[2]), sys.argv[3]
restore._finish = lambda *args: os._exit(9)  # as a kill -9 once every part is swapped
restore.restore_archive(
    workspace, load_settings(workspace.config_file), archive, Keyring(bytes.fromhex(key))
)
"""


def test_a_restore_killed_half_way_is_taken_back_at_the_next_start(world: World) -> None:
    context = open_context(world.workspace)
    auth.create_user(context.catalog, "carol", PASSWORD, "member")  # differs from the backup
    context.close()
    before = _snapshot(world.workspace)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_RESTORE, str(world.workspace.root),
         str(world.with_vectors), world.key.current.hex()],
        check=False,
    )  # fmt: skip
    assert killed.returncode == 9
    assert _snapshot(world.workspace) != before  # the backup's parts are in place
    # What a server, a worker or a command does before it opens the catalog.
    with exclusive_workspace(world.workspace):  # a restore under way: left alone
        assert recover_interrupted(world.workspace) == []
    said = recover_interrupted(world.workspace)
    assert len(said) == 1 and "put back" in said[0]
    assert _snapshot(world.workspace) == before
    settings = load_settings(world.workspace.config_file)
    assert recover_interrupted_restores(world.workspace, settings) == []
