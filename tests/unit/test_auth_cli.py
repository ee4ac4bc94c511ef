"""``autorag users`` and ``autorag keys`` in-process, on a temporary workspace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.cli import WorkspaceCli
from tests.workspaces import new_workspace

from autorag.auth import service
from autorag.context import open_context
from autorag.errors import InvalidInput, NotFound

PASSWORD = "long enough password"


@pytest.fixture
def invoke(tmp_path: Path, catalog_url: str | None) -> WorkspaceCli:
    return WorkspaceCli(new_workspace(tmp_path / "kb", catalog_url))


def test_users_lifecycle(invoke: WorkspaceCli) -> None:
    invoke("users", "create", "root", "--role", "admin", "--password-stdin", stdin=PASSWORD + "\n")
    invoke("users", "create", "ann", "--password-stdin", stdin=PASSWORD + "\n")
    invoke("users", "grant", "ann", "default")
    listed = json.loads(invoke("users", "list", "--json"))
    assert [(u["username"], u["role"], u["workspaces"]) for u in listed] == [
        ("ann", "member", ["default"]),
        ("root", "admin", []),
    ]
    assert "password" not in json.dumps(listed)
    invoke("users", "passwd", "ann", "--password-stdin", stdin="a new long password\n")
    context = open_context(invoke.workspace)
    assert service.authenticate(context.catalog, "ann", "a new long password")
    context.close()
    invoke("users", "revoke", "ann", "default")
    invoke("users", "rm", "ann")
    assert [u["username"] for u in json.loads(invoke("users", "list", "--json"))] == ["root"]


def test_passwords_are_prompted_twice_without_echo(invoke: WorkspaceCli) -> None:
    output = invoke("users", "create", "ann", stdin=f"{PASSWORD}\n{PASSWORD}\n")
    assert PASSWORD not in output and "Created member 'ann'" in output


def test_bad_input_raises_from_the_error_tree(invoke: WorkspaceCli) -> None:
    bad_name = invoke.error("users", "create", "Ann", "--password-stdin", stdin=PASSWORD + "\n")
    assert isinstance(bad_name, InvalidInput)
    assert isinstance(invoke.error("users", "rm", "nobody"), NotFound)
    assert isinstance(invoke.error("keys", "revoke", "nope"), NotFound)


def test_keys_lifecycle(invoke: WorkspaceCli) -> None:
    invoke("users", "create", "ann", "--password-stdin", stdin=PASSWORD + "\n")
    key = invoke("keys", "create", "nightly", "--user", "ann", "--workspace", "default").strip()
    assert re.fullmatch(r"ark_[a-z0-9]{8}_[a-z0-9]{32}", key)
    listed = json.loads(invoke("keys", "list", "--json"))
    assert [(k["prefix"], k["username"], k["workspaces"]) for k in listed] == [
        (key[4:12], "ann", ["default"])
    ]
    assert key not in invoke("keys", "list") + json.dumps(listed)
    invoke("keys", "revoke", key[4:12])
    assert json.loads(invoke("keys", "list", "--json"))[0]["revoked_at"] is not None
