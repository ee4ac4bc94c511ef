"""The role/permission table and the one check."""

from __future__ import annotations

import pytest

from autorag.auth.permissions import (
    ALL_PERMISSIONS,
    EVERY_WORKSPACE,
    ROLE_PERMISSIONS,
    ROLES,
    effective_scope,
    is_allowed,
    may_write_archive,
)

MEMBER = {
    "documents:read",
    "documents:write",
    "search:read",
    "chat:use",
    "keys:write",
    "archive:read",
    "push:use",
}
MANAGER = MEMBER | {"workspaces:write", "archive:write", "policy:write"}


def test_the_table() -> None:
    assert set(ROLES) == set(ROLE_PERMISSIONS)
    assert ROLE_PERMISSIONS["member"] == MEMBER
    assert ROLE_PERMISSIONS["manager"] == MANAGER
    assert ROLE_PERMISSIONS["admin"] == ALL_PERMISSIONS
    assert {"users:admin", "workspaces:admin", "keys:admin"} <= ALL_PERMISSIONS - MANAGER


@pytest.mark.parametrize("permission", sorted(ALL_PERMISSIONS))
@pytest.mark.parametrize("role", ROLES)
def test_a_role_holds_exactly_its_permissions(role: str, permission: str) -> None:
    expected = permission in ROLE_PERMISSIONS[role]
    assert is_allowed(role, "token", None, permission) is expected


def test_unknown_roles_and_permissions_allow_nothing() -> None:
    assert not is_allowed("owner", "token", None, "search:read")
    assert not is_allowed("admin", "token", None, "search:write")


def test_workspace_scope_limits_every_permission() -> None:
    scope = frozenset({"a"})
    assert is_allowed("member", "token", scope, "search:read", "a")
    assert not is_allowed("member", "token", scope, "search:read", "b")
    assert is_allowed("member", "token", scope, "search:read")  # no workspace involved
    assert is_allowed("admin", "token", None, "documents:write", "anything")


def test_every_workspace_at_once_needs_an_unconfined_principal() -> None:
    assert is_allowed("admin", "token", None, "workspaces:admin", EVERY_WORKSPACE)
    assert is_allowed("admin", "api_key", None, "workspaces:admin", EVERY_WORKSPACE)
    assert not is_allowed("admin", "api_key", frozenset({"b"}), "workspaces:admin", EVERY_WORKSPACE)
    assert is_allowed("admin", "api_key", frozenset({"b"}), "workspaces:admin", "b")


def test_credentials_are_managed_only_after_a_password_login() -> None:
    for permission in ("users:admin", "keys:admin", "keys:write", "dlp:reveal", "policy:write"):
        assert is_allowed("admin", "token", None, permission)
        assert not is_allowed("admin", "api_key", None, permission)
    assert is_allowed("admin", "api_key", None, "workspaces:admin")


def test_effective_scope() -> None:
    assert effective_scope("admin", [], None) is None
    assert effective_scope("admin", [], ["b"]) == {"b"}
    assert effective_scope("member", ["a", "b"], None) == {"a", "b"}
    assert effective_scope("member", ["a"], ["b"]) == frozenset()  # a key cannot widen
    assert effective_scope("manager", ["a", "b"], ["b", "c"]) == {"b"}


@pytest.mark.parametrize(
    ("role", "scope", "writers", "expected"),
    [
        ("manager", None, (), True),  # archive:write: every archive of the workspace
        ("admin", None, (), True),
        ("member", None, (), False),  # reads, writes nothing without the grant
        ("member", None, ("someone",), False),
        ("member", None, ("mem",), True),  # named among the archive's writers
        ("member", frozenset({"b"}), ("mem",), False),  # not in this workspace at all
        ("", None, ("mem",), False),  # no role: nothing, named or not
    ],
)
def test_who_may_write_an_archive(
    role: str, scope: frozenset[str] | None, writers: tuple[str, ...], expected: bool
) -> None:
    def can(permission: str) -> bool:
        return is_allowed(role, "api_key", scope, permission, "a")

    assert may_write_archive(can, "mem", writers) is expected
    assert not may_write_archive(can, None, writers) or role in ("manager", "admin")
