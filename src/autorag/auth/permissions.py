"""Who may do what: the one table of roles and permissions, and the one check.

A permission is a named string. A feature adds its permission to ``ROLE_PERMISSIONS``
and guards its routes with it; nothing else decides access.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

ROLES = ("admin", "manager", "member")

# Backups (issue 20) are the installation's: an admin lists, makes, verifies and downloads
# them (an archive is encrypted, so an API key may fetch one) and manages their jobs;
# restoring one replaces everything, and re-keying reseals every stored secret.
BACKUP_ADMIN = "backup:admin"
BACKUP_RESTORE = "backup:restore"
# Events (issue 21): an admin reads the event log and manages webhooks (each sends event
# data to a URL outside: a password login or a protection-scoped key) and tests push;
# every user may ask for notifications in their own browser.
EVENTS_READ = "events:read"
WEBHOOKS_ADMIN = "webhooks:admin"
PUSH_ADMIN = "push:admin"
PUSH_USE = "push:use"
# MCP tool servers (issue 22): installing one makes a command run on this machine (or
# a URL reached) whenever the agent calls its tools: a password login or a
# protection-scoped key, per workspace.
MCP_ADMIN = "mcp:admin"
# Chat widgets (issue 22): a widget answers anonymous visitors of other sites from a
# workspace, so making or changing one publishes that workspace: admins, with a password
# login or a protection-scoped key.
WIDGETS_ADMIN = "widgets:admin"

_MEMBER = frozenset(
    {
        "documents:read",
        "documents:write",
        "search:read",
        "chat:use",
        "keys:write",  # manage one's own API keys
        "archive:read",  # the workspace's archives (wiki pages)
        PUSH_USE,  # notifications in one's own browser
    }
)
# policy:write changes which sources peers may get (autorag.sources.policy).
# archive:write creates archives and writes every page of them; a member may write the
# pages of an archive that names them among its writers (may_write_archive).
_MANAGER = _MEMBER | {"workspaces:write", "archive:write", "policy:write"}
_ADMIN = _MANAGER | {
    "p2p:admin",
    "users:admin",
    "workspaces:admin",
    "keys:admin",
    "dlp:admin",
    "dlp:reveal",
    BACKUP_ADMIN,
    BACKUP_RESTORE,
    EVENTS_READ,
    WEBHOOKS_ADMIN,
    PUSH_ADMIN,
    MCP_ADMIN,
    WIDGETS_ADMIN,
}

ROLE_PERMISSIONS: Mapping[str, frozenset[str]] = {
    "admin": _ADMIN,
    "manager": _MANAGER,
    "member": _MEMBER,
}
ALL_PERMISSIONS: frozenset[str] = frozenset().union(*ROLE_PERMISSIONS.values())

# Managing credentials needs a password login: a leaked API key must not be able to
# mint credentials that outlive its revocation. Nor may it read what DLP redacted.
# Approving what a peer takes is as sensitive: a leaked key must not do it. Nor may it
# replace the whole installation with a backup, or reseal its secrets.
SESSION_ONLY = frozenset(
    {"users:admin", "keys:admin", "keys:write", "dlp:reveal", "p2p:admin", BACKUP_RESTORE}
)
SESSION = "token"

# Actions that weaken protection or destroy data (DLP patterns, deleting a workspace,
# source policy changes, turning redaction off…) need a password login or an API key
# created with this named scope. A permission that is such an action whole is listed in
# PROTECTED; routes where only some uses of a permission are declare it with
# ``require(…, protection=True)``.
PROTECTION_SCOPE = "admin:protection"
KEY_SCOPES = frozenset({PROTECTION_SCOPE})
# Changing which sources peers may get; where events are sent.
PROTECTED = frozenset({"policy:write", WEBHOOKS_ADMIN, MCP_ADMIN, WIDGETS_ADMIN})


def is_protected_caller(via: str, key_scopes: frozenset[str]) -> bool:
    """Whether a principal may do what weakens protection or destroys data (its role
    permitting): a password login, or an API key with the ``admin:protection`` scope."""
    return via == SESSION or PROTECTION_SCOPE in key_scopes


# Given as the workspace, asks whether a permission holds in every workspace at once, as
# creating a workspace needs: a principal confined to some workspaces (an API key with a
# scope) acts inside those, not on the set of workspaces. No workspace bears this name.
EVERY_WORKSPACE = "*"


def is_allowed(
    role: str,
    via: str,
    scope: frozenset[str] | None,
    permission: str,
    workspace: str | None = None,
    key_scopes: frozenset[str] = frozenset(),
) -> bool:
    """Whether a principal may use ``permission`` (inside ``workspace`` when given).

    ``scope`` is the set of workspace names the principal may act in, None for all;
    ``workspace`` may be ``EVERY_WORKSPACE``; ``key_scopes`` are an API key's named
    scopes.
    """
    if permission not in ROLE_PERMISSIONS.get(role, frozenset()):
        return False
    if permission in SESSION_ONLY and via != SESSION:
        return False
    if permission in PROTECTED and not is_protected_caller(via, key_scopes):
        return False
    return workspace is None or in_scope(scope, workspace)


ARCHIVE_READ = "archive:read"
ARCHIVE_WRITE = "archive:write"


def may_write_archive(
    can: Callable[[str], bool], username: str | None, writers: Collection[str]
) -> bool:
    """Whether a caller may write one archive's pages (save, rename, restore, delete,
    import): holding ``archive:write`` in its workspace (managers, admins), or holding
    ``archive:read`` there and being named in the archive's ``writers`` (a member a
    manager or admin granted it). ``can(permission)`` answers for the archive's
    workspace (``Principal.can`` or ``SkillContext.can``); creating, changing (the
    writers among it) and deleting the archive itself need ``archive:write``."""
    if can(ARCHIVE_WRITE):
        return True
    return username is not None and username in writers and can(ARCHIVE_READ)


def in_scope(scope: frozenset[str] | None, workspace: str) -> bool:
    if workspace == EVERY_WORKSPACE:
        return scope is None
    return scope is None or workspace in scope


def effective_scope(
    role: str, memberships: Iterable[str], key_scope: Iterable[str] | None
) -> frozenset[str] | None:
    """The workspaces a principal may act in: admins everywhere, others where they are
    members; an API key narrows either to its own list (None: no narrowing)."""
    scope = None if role == "admin" else frozenset(memberships)
    if key_scope is None:
        return scope
    keys = frozenset(key_scope)
    return keys if scope is None else scope & keys
