"""``autorag backup`` as a user runs it, through the command's entry point
(``tests/cli.py``): a backup made, listed, verified and restored (asked first, a safety
backup made, what came after it gone), refusals with their exit codes, jobs, the key
export; and as separate processes: a backup killed with ``kill -9`` (no run marked
succeeded, the lock freed by the next one) and a restore refused while
``autorag worker`` holds the workspace."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from autorag.backup.presence import workspace_holder
from autorag.workspace import Workspace
from tests.cli import AUTORAG, Completed, autorag
from tests.workspaces import catalog_sql, new_workspace

WAIT_S = 120.0  # a generous deadline for a separate process to get somewhere


def backup(kb: Workspace, *args: str, input: str | None = None) -> Completed:
    return autorag("-w", str(kb.root), "backup", *args, input=input, env={"COLUMNS": "200"})


def ok(kb: Workspace, *args: str) -> str:
    result = backup(kb, *args)
    assert result.returncode == 0, f"autorag backup {' '.join(args)}:\n{result.stderr}"
    return result.stdout


def as_json(kb: Workspace, *args: str) -> Any:
    return json.loads(ok(kb, *args, "--json"))


def workspaces(kb: Workspace) -> list[str]:
    done = autorag("-w", str(kb.root), "workspaces", "list", "--json")
    assert done.returncode == 0, done.stderr
    return sorted(entry["name"] for entry in json.loads(done.stdout))


def _poll(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def kb(tmp_path: Path) -> Workspace:
    return new_workspace(tmp_path / "kb")


def test_a_backup_made_listed_verified_and_restored(kb: Workspace) -> None:
    made = as_json(kb, "run")
    assert made["status"] == "succeeded" and made["archive"].endswith(".autorag-backup")
    assert {"id", "trigger", "destination", "sizeBytes", "sha256", "startedAt", "log"} <= set(made)
    (listed,) = as_json(kb, "list")
    assert listed == made
    table = ok(kb, "list")
    assert made["sha256"][:12] in table and "succeeded" in table
    report = as_json(kb, "verify", str(made["id"]))
    assert report["ok"] is True and report["checksumMatches"] is True, report["problems"]
    assert "the backup is whole" in ok(kb, "verify", str(made["id"]))

    created = autorag("-w", str(kb.root), "workspaces", "create", "after-the-backup")
    assert created.returncode == 0, created.stderr
    asked = backup(kb, "restore", str(made["id"]), input="n\n")
    assert asked.returncode == 1 and "Aborted" in asked.stderr
    assert "replaces everything in the workspace" in asked.stderr
    assert "after-the-backup" in workspaces(kb)  # nothing was done

    restored = ok(kb, "restore", str(made["id"]), "--yes")
    assert f"Restored {made['archive']}" in restored
    assert "after-the-backup" not in workspaces(kb)
    runs = as_json(kb, "list")
    safety = runs[0]
    assert (safety["trigger"], safety["status"]) == ("safety", "succeeded")
    assert f"kept in backup {safety['id']}" in restored
    assert [run["id"] for run in runs] == [safety["id"], made["id"]]
    shown = ok(kb, "show", str(made["id"]))
    assert made["archive"] in shown and "stored as" in shown


def test_refusals_say_why_and_exit_non_zero(kb: Workspace, tmp_path: Path) -> None:
    missing = backup(kb, "verify", "999")
    assert missing.returncode == 3 and "error: no backup run 999" in missing.stderr
    failed = backup(kb, "run", "--to", "local:/proc/no-backups-here")
    assert failed.returncode == 1 and "error: backup run 1 failed:" in failed.stderr
    shown = as_json(kb, "show", "1")
    assert shown["status"] == "failed" and shown["error"]

    made = as_json(kb, "run")
    folder = Path(made["destination"].removeprefix("local:"))
    copy = tmp_path / "tampered.autorag-backup"
    data = bytearray((folder / made["archive"]).read_bytes())
    data[-40] ^= 0x01
    copy.write_bytes(bytes(data))
    checked = backup(kb, "verify", str(copy), "--json")
    assert checked.returncode == 1 and json.loads(checked.stdout)["ok"] is False
    refused = backup(kb, "restore", str(copy), "--yes")
    assert refused.returncode == 2 and "refused to restore tampered.autorag-backup" in (
        refused.stderr
    )
    assert [run["id"] for run in as_json(kb, "list")] == [made["id"], 1]  # no safety backup


def test_jobs_added_listed_paused_and_removed(kb: Workspace) -> None:
    added = as_json(
        kb, "jobs", "add", "nightly", "--cron", "0 3 * * *", "--to", "s3://bucket/autorag",
        "--retention-days", "7", "--no-vectors",
    )  # fmt: skip
    assert (added["name"], added["retentionDays"], added["includeVectors"]) == ("nightly", 7, False)
    assert "nightly" in ok(kb, "jobs", "list")  # the table folds long URLs to the width
    assert as_json(kb, "jobs", "list")[0]["destination"] == "s3://bucket/autorag"
    assert "disabled" in ok(kb, "jobs", "disable", "nightly")
    assert as_json(kb, "jobs", "list")[0]["enabled"] is False
    assert as_json(kb, "jobs", "enable", "nightly")["enabled"] is True
    assert as_json(kb, "jobs", "list")[0]["enabled"] is True
    bad = backup(kb, "jobs", "add", "hourly", "--cron", "0 * *", "--to", "s3://b/p")
    assert bad.returncode == 2 and "bad cron expression" in bad.stderr
    taken = backup(kb, "jobs", "add", "nightly", "--cron", "0 3 * * *", "--to", "s3://b/p")
    assert taken.returncode == 4 and "exists" in taken.stderr
    ok(kb, "jobs", "remove", "nightly")
    assert as_json(kb, "jobs", "list") == []
    gone = backup(kb, "jobs", "remove", "nightly")
    assert gone.returncode == 3 and "no backup job 'nightly'" in gone.stderr


def test_the_key_export_prints_the_key_and_warns(kb: Workspace) -> None:
    exported = backup(kb, "key", "export")
    assert exported.returncode == 0, exported.stderr
    key = exported.stdout.strip()
    assert len(base64.b64decode(key)) == 32
    assert "warning:" in exported.stderr and "AUTORAG_ENCRYPTION_KEY" in exported.stderr
    own = base64.b64encode(bytes(range(32))).decode()
    told = autorag(
        "-w", str(kb.root), "backup", "key", "export", env={"AUTORAG_ENCRYPTION_KEY": own}
    )
    assert told.stdout.strip() == own


# -- separate processes ------------------------------------------------------------------
@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on loopback that accepts connections and never answers: an FTP
    destination on it keeps a backup waiting in its upload."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def _running_run(kb: Workspace) -> tuple[int, int] | None:
    with catalog_sql(kb) as conn:
        row = conn.execute(text("SELECT id, pid FROM backup_runs WHERE status = 'running'")).first()
    return None if row is None else (int(row[0]), int(row[1]))


def test_a_killed_backup_is_never_succeeded_and_frees_the_lock(
    kb: Workspace, silent_server: int
) -> None:
    assert as_json(kb, "list") == []  # the catalog made, before the process starts
    stuck = subprocess.Popen(
        [
            *AUTORAG,
            "-w",
            str(kb.root),
            "backup",
            "run",
            "--to",
            f"ftp://127.0.0.1:{silent_server}/b",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id, pid = _poll(lambda: _running_run(kb), "the backup to hold the running row")
        assert pid == stuck.pid
        # Waiting on the silent destination: the archive is written, the upload is not.
        _poll(
            lambda: any("putting" in line for line in as_json(kb, "show", str(run_id))["log"]),
            "the backup to reach its upload",
        )
    finally:
        stuck.send_signal(signal.SIGKILL)
        stuck.wait(WAIT_S)
    assert stuck.returncode == -signal.SIGKILL

    after = as_json(kb, "run")  # the next backup finds the dead one and frees the lock
    assert after["status"] == "succeeded"
    killed = as_json(kb, "show", str(run_id))
    assert (killed["status"], killed["error"]) == ("failed", "interrupted")
    assert "is gone" in killed["log"][-1]
    assert [run["status"] for run in as_json(kb, "list")] == ["succeeded", "failed"]
    folder = Path(after["destination"].removeprefix("local:"))
    assert not list(folder.glob("*.partial"))


def test_a_restore_is_refused_while_a_worker_holds_the_workspace(kb: Workspace) -> None:
    made = as_json(kb, "run")
    worker = subprocess.Popen(
        [*AUTORAG, "-w", str(kb.root), "worker", "--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert worker.stdout is not None
        assert "Worker on" in worker.stdout.readline()  # started: it holds the workspace
        assert workspace_holder(kb) == f"pid {worker.pid}"
        refused = backup(kb, "restore", str(made["id"]), "--yes")
        assert refused.returncode == 4, refused.stderr
        assert f"a server (pid {worker.pid}) is running on this workspace" in refused.stderr
        assert len(as_json(kb, "list")) == 1  # no safety backup: nothing was done
    finally:
        worker.send_signal(signal.SIGTERM)
        _out, err = worker.communicate(timeout=WAIT_S)
    assert worker.returncode == 0, err
    assert workspace_holder(kb) is None
