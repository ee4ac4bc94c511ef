"""The trusted peer registry: file mode, atomic writes under a kill, retired fields, merge, rank."""

from __future__ import annotations

import json
import logging
import os
import re
import select
import signal
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autorag.cli.main import app
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.p2p.registry import PeerRegistry
from autorag.p2p.simplex.shapes import Contact, Profile
from autorag.workspace import init_workspace


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / ".autorag" / "p2p" / "simplex-peers.json"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _contact(contact_id: int, name: str, **profile: str) -> Contact:
    shared = Profile(display_name=name, **profile)
    return Contact(contact_id, name, shared, has_connection=True)


def test_add_writes_the_seed_record_layout_at_mode_0600(path: Path) -> None:
    registry = PeerRegistry(path)
    registry.add("bob", 4, "tax lawyer")
    assert _mode(path) == 0o600
    record = json.loads(path.read_text())["peers"]["bob"]
    assert record["contactId"] == 4 and record["description"] == "tax lawyer"
    assert set(record["profile"]) == {
        "displayName",
        "fullName",
        "shortDescr",
        "description",
        "image",
    }
    assert "profileSyncedAt" not in record  # never synced yet
    peer = registry.get("bob")
    assert peer is not None and registry.by_contact_id(4) == peer
    assert registry.get("nobody") is None and registry.by_contact_id(5) is None


def test_a_wrong_mode_is_repaired_on_every_open_with_a_warning(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = PeerRegistry(path)
    registry.add("bob", 4)
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        warnings = registry.load()
    assert _mode(path) == 0o600
    assert any("0644" in w for w in warnings) and "0644" in caplog.text
    path.chmod(0o640)  # the next read notices, even with nothing else changed
    assert registry.peers()[0].name == "bob"
    assert _mode(path) == 0o600 and any("0640" in w for w in registry.warnings)


def test_bad_json_is_an_error_naming_the_file_and_never_wipes_it(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_text('{"peers": {"bob": ')
    registry = PeerRegistry(path)
    with pytest.raises(InvalidInput, match=re.escape(str(path))):
        registry.load()
    with pytest.raises(InvalidInput):
        registry.add("carol", 5)
    assert path.read_text() == '{"peers": {"bob": '


@pytest.mark.parametrize(
    "document",
    [
        '["bob"]',
        '{"version": 2, "peers": {}}',
        '{"version": 1, "peers": []}',
        '{"bob": {"contactId": "four"}}',
        '{"bob": "x"}',
    ],
)
def test_invalid_documents_are_refused(path: Path, document: str) -> None:
    path.parent.mkdir(parents=True)
    path.write_text(document)
    with pytest.raises(InvalidInput, match=r"simplex-peers\.json"):
        PeerRegistry(path).load()


def test_retired_persona_fields_are_dropped_with_a_warning(path: Path) -> None:
    path.parent.mkdir(parents=True)
    retired = {"displayName": "Bob", "role": "lawyer", "org": "Acme", "accessHint": "tax"}
    record = {"contactId": 4, "description": "note", "futureField": [1], **retired}
    path.write_text(json.dumps({"bob": record}))  # the bare map layout
    path.chmod(0o600)
    registry = PeerRegistry(path)
    warnings = registry.load()
    assert len(warnings) == 1 and "displayName, role, org, accessHint" in warnings[0]
    peer = registry.get("bob")
    assert peer is not None and peer.description == "note" and peer.profile.display_name == ""
    written = json.loads(path.read_text())["peers"]["bob"]
    assert not set(retired) & set(written)  # rewritten without them
    assert written["futureField"] == [1]  # a newer AutoRAG's field survives
    assert PeerRegistry(path).load() == []


def test_add_refuses_duplicates_and_bad_names(path: Path) -> None:
    registry = PeerRegistry(path)
    registry.add("bob", 4)
    with pytest.raises(Conflict, match="already trusted"):
        registry.add("bob", 5)
    with pytest.raises(Conflict, match="'bob'"):
        registry.add("robert", 4)  # one record per SimpleX contact
    for name in ("", " bob", "x" * 65, "bo\x1bb"):
        with pytest.raises(InvalidInput):
            registry.add(name, 9)
    with pytest.raises(InvalidInput):
        registry.add("neg", -1)
    with pytest.raises(InvalidInput):
        registry.add("ann", 6, "n" * 2001)


def test_remove_and_note(path: Path) -> None:
    registry = PeerRegistry(path)
    registry.add("bob", 4)
    assert registry.set_note("bob", "accountant").description == "accountant"
    assert PeerRegistry(path).get("bob") == registry.get("bob")
    assert registry.remove("bob").contact_id == 4
    assert registry.peers() == []
    with pytest.raises(NotFound):
        registry.remove("bob")
    with pytest.raises(NotFound):
        registry.set_note("bob", "x")


def test_another_process_changes_are_seen(path: Path) -> None:
    server_view, cli_view = PeerRegistry(path), PeerRegistry(path)
    assert server_view.by_contact_id(4) is None
    cli_view.add("bob", 4)
    assert server_view.by_contact_id(4) is not None
    cli_view.remove("bob")
    assert server_view.by_contact_id(4) is None  # revoking trust takes effect at once


def test_merge_updates_trusted_profiles_and_never_adds_unknown_contacts(path: Path) -> None:
    registry = PeerRegistry(path)
    registry.add("bob", 4, "my lawyer")
    registry.add("carol", 9)
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    shared = _contact(4, "Bob K", full_name="Bob Kim", short_descr="Tax law", image="data:x")
    report = registry.merge_profiles([shared, _contact(7, "Eve")], now=now)
    assert report.synced == ["bob"]
    assert [c.contact_id for c in report.untrusted] == [7]
    assert [p.name for p in report.missing] == ["carol"]
    assert [p.name for p in registry.peers()] == ["bob", "carol"]  # Eve was not added
    bob = registry.get("bob")
    assert bob is not None and bob.profile.full_name == "Bob Kim"
    assert bob.profile_synced_at == now and bob.description == "my lawyer"
    record = json.loads(path.read_text())["peers"]["bob"]
    assert record["profileSyncedAt"] == "2026-01-02T03:04:05Z"
    assert record["profile"]["shortDescr"] == "Tax law" and record["profile"]["image"] == "data:x"
    carol = registry.get("carol")
    assert carol is not None and carol.profile_synced_at is None


def test_rank_uses_local_name_note_and_shared_profile(path: Path) -> None:
    registry = PeerRegistry(path)
    registry.add("tax_bob", 4)
    registry.add("carol", 5, "knows the tax rules")
    registry.add("dave", 6)
    registry.add("erin", 7)
    registry.merge_profiles(
        [
            _contact(4, "Bob"),
            _contact(5, "Carol"),
            _contact(6, "Dave", short_descr="Taxes and accounting"),
            _contact(7, "Erin", description="gardening"),
        ]
    )
    ranked = registry.rank("taxes")
    assert [p.name for p, _ in ranked] == ["tax_bob", "carol", "dave", "erin"]
    scores = [s for _, s in ranked]
    assert scores[0] > scores[1] > scores[2] > scores[3] == 0.0
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert all(s == 0.0 for _, s in registry.rank("the of"))  # stopwords only


# -- atomic write under SIGKILL ----------------------------------------------------------------
# The writer makes whole writes, then stops inside one more at a named point and says so on
# stdout; the test kills it there. No timing decides where the kill lands.
_WRITER = """
import os, sys, tempfile, time
from pathlib import Path
from autorag.p2p.registry import PeerRegistry

path, stop_at = Path(sys.argv[1]), sys.argv[4]
first, whole_writes = int(sys.argv[2]), int(sys.argv[3])
registry = PeerRegistry(path)
for i in range(first, first + whole_writes):
    registry.set_note("p000", f"{i}:" + "x" * 1990)

def stop(point):
    print(point, flush=True)
    while True:
        time.sleep(60)  # until the SIGKILL

real_mkstemp, real_fdopen, real_replace = tempfile.mkstemp, os.fdopen, os.replace
temp_fds = []

class HalfWrite:
    # The temp file's handle: writes half the document, flushes it, then stops.
    def __init__(self, handle):
        self.handle = handle
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self.handle.__exit__(*exc)
    def write(self, data):
        self.handle.write(data[: len(data) // 2])
        self.handle.flush()
        stop("half-written")

def mkstemp(*args, **kwargs):
    fd, name = real_mkstemp(*args, **kwargs)
    if stop_at == "created":
        stop(stop_at)  # the temp file exists, empty
    temp_fds.append(fd)
    return fd, name

def fdopen(fd, *args, **kwargs):
    handle = real_fdopen(fd, *args, **kwargs)
    return HalfWrite(handle) if stop_at == "half-written" and fd in temp_fds else handle

def replace(src, dst):
    if stop_at == "written":
        stop(stop_at)  # the temp file is whole and synced, not yet renamed
    real_replace(src, dst)
    if stop_at == "renamed":
        stop(stop_at)  # renamed, the folder not yet synced

tempfile.mkstemp, os.fdopen, os.replace = mkstemp, fdopen, replace
registry.set_note("p000", f"{first + whole_writes}:" + "x" * 1990)
"""
_PEERS = 300
_NOTE = re.compile(r"\d+:x{1990}")
# Where the writer is killed, and whether the file then holds the new note (else the old one).
_KILL_POINTS = [("created", False), ("half-written", False), ("written", False), ("renamed", True)]
_WHOLE_WRITES = 12


def _seed_registry(path: Path) -> None:
    peers = {f"p{i:03d}": {"contactId": i, "description": "0:" + "x" * 1990} for i in range(_PEERS)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "peers": peers}))
    path.chmod(0o600)


def _check_whole(path: Path) -> str:
    """The note of p000 in a whole registry file (never a torn one)."""
    document = json.loads(path.read_text())
    assert len(document["peers"]) == _PEERS
    note: str = document["peers"]["p000"]["description"]
    assert _NOTE.fullmatch(note)
    return note


@pytest.mark.parametrize(("point", "new_file"), _KILL_POINTS, ids=[p for p, _ in _KILL_POINTS])
def test_a_writer_killed_mid_write_leaves_the_old_or_the_new_file(
    path: Path, point: str, new_file: bool
) -> None:
    _seed_registry(path)
    first = 1000
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(first), str(_WHOLE_WRITES), point],
        stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None
    try:
        # Readers see whole files all the while the writer runs, up to where it stops.
        while not select.select([writer.stdout], [], [], 0)[0]:
            _check_whole(path)
        assert writer.stdout.readline() == f"{point}\n".encode(), "the writer did not stop"
        temp_files = list(path.parent.glob(".simplex-peers.json.*.tmp"))
        assert bool(temp_files) is not new_file  # stopped inside the write, before the rename
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    last_whole = first + _WHOLE_WRITES - 1
    expected = last_whole + 1 if new_file else last_whole
    assert _check_whole(path) == f"{expected}:" + "x" * 1990
    PeerRegistry(path).set_note("p001", "after")  # the next writer clears stale temp files
    assert not list(path.parent.glob(".simplex-peers.json.*.tmp"))
    assert _check_whole(path) == f"{expected}:" + "x" * 1990


# -- the CLI -----------------------------------------------------------------------------------
def test_cli_peers_add_list_rank_note_rm(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "ws")
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, ["-w", str(workspace.root), "p2p", "peers", *args])
        assert result.exit_code == 0, result.output
        return result.output

    assert "No trusted peers" in run()
    run("add", "bob", "4", "--note", "tax lawyer")
    run("add", "ann", "5")
    run("note", "ann", "gardener")
    listed = json.loads(run("--json"))
    assert [(p["name"], p["contactId"], p["description"]) for p in listed] == [
        ("ann", 5, "gardener"),
        ("bob", 4, "tax lawyer"),
    ]
    ranked = json.loads(run("--rank", "lawyer", "--json"))
    assert ranked[0]["name"] == "bob" and ranked[0]["score"] > ranked[1]["score"]
    assert "bob" in run() and "never" in run()
    run("rm", "ann")
    assert [p["name"] for p in json.loads(run("--json"))] == ["bob"]
    assert _mode(workspace.simplex_peers_file) == 0o600
    missing = runner.invoke(app, ["-w", str(workspace.root), "p2p", "peers", "rm", "zed"])
    assert missing.exit_code != 0
