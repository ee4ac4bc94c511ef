"""Backup archives: the name guard, what is collected, the SQLite snapshot, and the
archives verify (and restore) refuse: tampered, truncated, wrong key, zip-slip names,
links, entries missing, extra or altered. A refused restore touches nothing."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import zipfile
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from autorag.backup.archive import manifest_json, write_archive
from autorag.backup.crypto import BackupDamaged, EncryptingWriter
from autorag.backup.dump import libpq_environment, pg_tool, snapshot_sqlite, sqlite_facts
from autorag.backup.models import FORMAT_VERSION, Manifest, ManifestFile
from autorag.backup.paths import FILE_AREAS, LANCEDB_AREA, UnsafeEntry, collect, safe_entry_name
from autorag.backup.restore import _keep_database_url, restore_archive
from autorag.backup.verify import verify_archive
from autorag.context import open_context
from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.keyring import Keyring
from autorag.workspace import Workspace, init_workspace

KEY = Keyring(b"k" * 32)
UNSAFE = ["/etc/passwd", "../evil", "files/uploads/../../evil", "a\\b", "C:/x", "c:evil",
          "files//x", "files/./x", "", "files/x\x00y", "files/x\ny"]  # fmt: skip


# -- names -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_entry_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafeEntry):
        safe_entry_name(name)


@pytest.mark.parametrize("name", ["manifest.json", "files/uploads/ab12/x.pdf", "vectors/a..b"])
def test_plain_relative_names_pass(name: str) -> None:
    assert safe_entry_name(name) == name


# -- collect -----------------------------------------------------------------------------
def test_collect_reads_regular_files_and_follows_no_link(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "kb")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the workspace's")
    uploads = workspace.uploads_dir / "ab12"
    uploads.mkdir(parents=True)
    (uploads / "doc.txt").write_text("mine")
    (uploads / "link.txt").symlink_to(outside / "secret.txt")
    (uploads / "linked-dir").symlink_to(outside)
    workspace.incoming_uploads_dir.mkdir()
    (workspace.incoming_uploads_dir / "partial").write_text("still arriving")
    found, notes = collect(workspace, FILE_AREAS[0])
    assert [f.entry for f in found] == ["files/uploads/ab12/doc.txt"]
    assert len(notes) == 2 and all("left out" in n for n in notes)
    workspace.p2p_dir.mkdir()
    workspace.simplex_log_file.write_text("log")
    workspace.simplex_peers_file.write_text("{}")
    assert [f.entry for f in collect(workspace, FILE_AREAS[1])[0]] == [
        "files/p2p/simplex-peers.json"
    ]
    assert collect(workspace, LANCEDB_AREA) == ([], [])  # no vectors yet: nothing


def test_an_area_that_is_a_link_is_left_out_and_said(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "kb")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.txt").write_text("not followed")
    workspace.uploads_dir.symlink_to(elsewhere)
    found, notes = collect(workspace, FILE_AREAS[0])
    assert found == [] and "symbolic link" in notes[0]


def test_a_restored_configuration_keeps_this_workspaces_catalog(tmp_path: Path) -> None:
    here = init_workspace(tmp_path / "here")
    here.write_config({"workspace": "default", "database_url": "postgresql://db/here"})
    staged = Workspace(tmp_path / "staged")
    staged.root.mkdir()
    staged.write_config({"workspace": "team", "database_url": "postgresql://db/there"})
    _keep_database_url(here, staged)
    assert staged.read_config() == {"workspace": "team", "database_url": "postgresql://db/here"}
    here.write_config({"workspace": "default"})
    _keep_database_url(here, staged)
    assert staged.read_config() == {"workspace": "team"}


# -- SQLite snapshot ---------------------------------------------------------------------
def test_the_sqlite_snapshot_holds_what_only_the_wal_holds_yet(tmp_path: Path) -> None:
    live = tmp_path / "live.db"
    with closing(sqlite3.connect(live)) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")  # everything stays in the WAL
        writer.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        writer.executemany("INSERT INTO notes (body) VALUES (?)", [("a",), ("b",), ("c",)])
        writer.commit()
        assert (tmp_path / "live.db-wal").stat().st_size > 0
        copy = tmp_path / "copy.db"
        snapshot_sqlite(live, copy)  # while the writer still holds the database open
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert not (tmp_path / "copy.db-wal").exists()
    _, counts = sqlite_facts(copy)
    assert counts == {"notes": 3}
    with closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


# -- PostgreSQL tools --------------------------------------------------------------------
def test_the_password_travels_in_the_environment_never_in_arguments() -> None:
    url = make_url("postgresql+psycopg://app:s3cret@/catalog?host=/run/pg&sslmode=require")
    env = libpq_environment(url, {"PATH": "/bin", "PGPASSWORD": "ambient", "PGHOST": "x"})
    assert env == {
        "PATH": "/bin",
        "PGHOST": "/run/pg",
        "PGUSER": "app",
        "PGPASSWORD": "s3cret",
        "PGDATABASE": "catalog",
        "PGSSLMODE": "require",
    }


def test_a_missing_tool_is_named_with_where_it_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match=r"pg_dump not found in .*pg_bin_dir"):
        pg_tool(tmp_path, "pg_dump")


# -- verify ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Made:
    workspace: Workspace
    archive: Path
    sha256: str
    manifest: Manifest


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    root = tmp_path_factory.mktemp("archive")
    workspace = init_workspace(root / "kb")
    context = open_context(workspace)
    upload = workspace.uploads_dir / context.info.short_id / f"{'b' * 64}.txt"
    upload.parent.mkdir(parents=True)
    upload.write_bytes(os.urandom(3 << 20))  # incompressible: several segments
    out = root / "made.autorag-backup"
    try:
        manifest, _size, sha256 = write_archive(
            workspace, context.settings, context.catalog.engine, KEY.current, out,
            include_vectors=True,
        )  # fmt: skip
    finally:
        context.close()
    yield Made(workspace, out, sha256, manifest)


def test_a_sound_archive_verifies(made: Made) -> None:
    report = verify_archive(made.archive, KEY, made.sha256)
    assert report.ok, report.problems
    assert report.checksum_matches and report.decrypted
    assert report.files_checked == len(made.manifest.files) >= 3
    assert stat.S_IMODE(made.archive.stat().st_mode) == 0o600
    entries = {f.path for f in made.manifest.files}
    assert {"catalog/autorag.db", "config/autorag.toml"} <= entries


def test_an_old_key_still_opens_it(made: Made) -> None:
    assert verify_archive(made.archive, Keyring(b"n" * 32, (KEY.current,))).ok


def _copy(made: Made, tmp_path: Path, change: bytes | None = None, at: int = 0) -> Path:
    data = bytearray(made.archive.read_bytes())
    if change is not None:
        data[at : at + len(change)] = change
    path = tmp_path / "copy.autorag-backup"
    path.write_bytes(bytes(data))
    return path


def test_a_tampered_archive_is_refused(made: Made, tmp_path: Path) -> None:
    size = made.archive.stat().st_size
    path = _copy(made, tmp_path, b"\x00\x01", size // 2)
    report = verify_archive(path, KEY, made.sha256)
    assert not report.ok and report.checksum_matches is False
    assert any("damaged" in p for p in report.problems)


def test_a_truncated_archive_is_refused(made: Made, tmp_path: Path) -> None:
    path = tmp_path / "cut.autorag-backup"
    path.write_bytes(made.archive.read_bytes()[: (1 << 20) + 100])
    report = verify_archive(path, KEY)
    assert not report.ok and not report.decrypted
    assert "truncated" in " ".join(report.problems) or "damaged" in " ".join(report.problems)


def test_the_wrong_key_is_refused_saying_so(made: Made) -> None:
    report = verify_archive(made.archive, Keyring(b"w" * 32))
    assert not report.ok and not report.decrypted
    assert "none of the 1 key tried opens this backup" in report.problems[0]


# -- crafted archives --------------------------------------------------------------------
def _entry(
    name: str, data: bytes, *, mode: int = stat.S_IFREG | 0o600
) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0))
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info, data


def _listed(name: str, data: bytes) -> ManifestFile:
    return ManifestFile(name, len(data), hashlib.sha256(data).hexdigest())


def _seal(
    path: Path, entries: list[tuple[zipfile.ZipInfo, bytes]], manifest: Manifest | bytes
) -> Path:
    """An archive sealed with KEY holding exactly ``entries`` then ``manifest``."""
    with (
        path.open("wb") as raw,
        EncryptingWriter(raw, KEY.current) as sealed,
        zipfile.ZipFile(sealed, "w") as archive,  # type: ignore[arg-type]
    ):
        for info, data in entries:
            archive.writestr(info, data)
        body = manifest if isinstance(manifest, bytes) else manifest_json(manifest)
        archive.writestr(_entry("manifest.json", body)[0], body)
    return path


def _manifest(*files: ManifestFile) -> Manifest:
    return Manifest(
        FORMAT_VERSION, "0.1.0", datetime(2026, 1, 1, tzinfo=UTC), "sqlite", "0017", {},
        vectors_included=True, vector_store="lancedb", files=files,
    )  # fmt: skip


CATALOG = b"SQLite format 3\x00 not really"
SQLITE = "catalog/autorag.db"


Case = tuple[list[tuple[zipfile.ZipInfo, bytes]], Manifest | bytes]
EVIL = b"owned"
ZIP_SLIPS = ("../evil", "/tmp/evil", "files\\uploads\\evil", "C:/evil", "files/uploads/../../evil")


def _with(name: str, data: bytes = EVIL, *, listed: bool = True, mode: int | None = None) -> Case:
    """The catalog and entry ``name`` (listed in the manifest, or not)."""
    extra = _entry(name, data) if mode is None else _entry(name, data, mode=mode)
    files = (_listed(SQLITE, CATALOG), *((_listed(name, data),) if listed else ()))
    return [_entry(SQLITE, CATALOG), extra], _manifest(*files)


def _crafted_cases() -> dict[str, Case]:
    catalog = _entry(SQLITE, CATALOG)
    listed = _listed(SQLITE, CATALOG)
    cases: dict[str, Case] = {}
    for name in ZIP_SLIPS:
        cases[f"unlisted {name!r}"] = _with(name, listed=False)
        cases[f"listed {name!r}"] = _with(name)
    cases["symlink entry"] = _with("files/uploads/x", b"/etc/passwd", mode=stat.S_IFLNK | 0o777)
    cases["extra entry"] = _with("files/uploads/extra", listed=False)
    cases["missing entry"] = ([catalog], _manifest(listed, _listed("files/uploads/gone", EVIL)))
    cases["unknown part"] = _with("elsewhere/x")
    cases["not a manifest"] = ([catalog], b'{"format": "one"}')
    cases["newer format"] = ([catalog], replace(_manifest(listed), format=FORMAT_VERSION + 1))
    cases["no catalog"] = ([], _manifest())
    altered = _listed("vectors/t.lance/data/0.lance", b"original vectors")
    vectors = _entry("vectors/t.lance/data/0.lance", b"altered vectors")
    cases["altered entry"] = ([catalog, vectors], _manifest(listed, altered))
    return cases


CRAFTED = _crafted_cases()


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_verify_refuses_a_crafted_archive(case: str, tmp_path: Path) -> None:
    entries, manifest = CRAFTED[case]
    report = verify_archive(_seal(tmp_path / "crafted", entries, manifest), KEY)
    assert not report.ok and report.problems, case


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize(
    "case", ["listed '../evil'", "symlink entry", "altered entry", "unknown part"]
)
def test_restore_refuses_a_crafted_archive_and_touches_nothing(
    case: str, made: Made, tmp_path: Path
) -> None:
    """Even unverified (the caller skipped verify), restore reads each entry through the
    same checks: nothing is written outside its staging folder, nothing replaced."""
    before = _tree(made.workspace.root.parent)
    entries, manifest = CRAFTED[case]
    archive = _seal(tmp_path / "crafted", entries, manifest)
    context = open_context(made.workspace)
    settings = context.settings
    context.close()
    with pytest.raises(AutoragError):
        restore_archive(made.workspace, settings, archive, KEY)
    assert _tree(made.workspace.root.parent) == before
    assert not made.workspace.restore_staging_dirs()
    assert not (made.workspace.root.parent / "evil").exists()


def test_an_entry_failing_to_extract_leaves_the_workspace_as_it_was(
    made: Made, tmp_path: Path
) -> None:
    """A sound archive but for its last vectors entry, whose bytes differ from the
    manifest: restored up to there into staging, then refused; nothing replaced."""
    entries, manifest = CRAFTED["altered entry"]
    archive = _seal(tmp_path / "altered", entries, manifest)
    context = open_context(made.workspace)
    settings = context.settings
    context.close()
    before = _tree(made.workspace.root)
    with pytest.raises(BackupDamaged, match=r"vectors/t\.lance/data/0\.lance"):
        restore_archive(made.workspace, settings, archive, KEY)
    assert _tree(made.workspace.root) == before


def test_a_backup_of_another_kind_of_catalog_is_refused(made: Made) -> None:
    context = open_context(made.workspace)
    settings = context.settings.model_copy(update={"database_url": "postgresql://db/kb"})
    context.close()
    before = _tree(made.workspace.root)
    with pytest.raises(InvalidInput, match="holds a sqlite catalog") as refused:
        restore_archive(made.workspace, settings, made.archive, KEY)
    assert refused.value.code == "backup_catalog_kind"
    assert _tree(made.workspace.root) == before


def test_an_existing_file_is_never_overwritten(made: Made, tmp_path: Path) -> None:
    taken = tmp_path / "taken.autorag-backup"
    taken.write_bytes(b"someone else's")
    context = open_context(made.workspace)
    try:
        with pytest.raises(FileExistsError):
            write_archive(
                made.workspace, context.settings, context.catalog.engine, KEY.current, taken,
                include_vectors=True,
            )  # fmt: skip
    finally:
        context.close()
    assert taken.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.autorag-backup"]
