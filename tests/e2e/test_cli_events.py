"""``autorag events``: the log listed and filtered, and followed as it grows (in a
separate process, stopped with Ctrl+C as a person would)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from autorag.auth.service import create_user
from autorag.context import AppContext, open_context
from autorag.workspace import Workspace
from tests.cli import AUTORAG, autorag, interruptible
from tests.workspaces import new_workspace

PASSWORD = "a long enough password"


@pytest.fixture
def kb(tmp_path: Path) -> Workspace:
    return new_workspace(tmp_path / "kb")


def _users(workspace: Workspace, *names: str) -> None:
    context: AppContext = open_context(workspace)
    try:
        for name in names:
            create_user(context.catalog, name, PASSWORD, "member")
    finally:
        context.close()


def test_list_filters_and_prints_json(kb: Workspace) -> None:
    _users(kb, "ann", "bob")
    listed = autorag("-w", str(kb.root), "events", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    events = json.loads(listed.stdout)
    assert [(e["event"], e["data"]["username"]) for e in events] == [
        ("user.created", "ann"),
        ("user.created", "bob"),
    ]  # oldest first
    table = autorag("-w", str(kb.root), "events", "list", "--name", "user.created")
    assert table.returncode == 0 and "user.created" in table.stdout and "bob" in table.stdout
    wrong = autorag("-w", str(kb.root), "events", "list", "--name", "user.creatd")
    assert wrong.returncode != 0 and "autorag events names" in wrong.stderr
    names = autorag("events", "names", "--json")
    assert "document.processed" in json.loads(names.stdout)


def test_follow_streams_new_events_until_ctrl_c(kb: Workspace) -> None:
    _users(kb, "ann")
    follower = subprocess.Popen(
        [*AUTORAG, "-w", str(kb.root), "events", "list", "--follow", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        assert follower.stdout is not None
        first = json.loads(follower.stdout.readline())  # the log so far
        assert first["data"]["username"] == "ann"
        _users(kb, "bob", "cy")  # committed while it follows
        later = [json.loads(follower.stdout.readline()) for _ in range(2)]
        assert [e["data"]["username"] for e in later] == ["bob", "cy"]
        assert later[0]["id"] > first["id"]
        follower.send_signal(signal.SIGINT)
        assert follower.wait(30) == 0, follower.stderr.read() if follower.stderr else ""
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
