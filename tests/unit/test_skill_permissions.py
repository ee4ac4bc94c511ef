"""A skill decides what the asker may do exactly as the API does (``is_allowed``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from autorag.agent.skills.base import LOCAL_OPERATOR, NOBODY, Caller, SkillContext
from autorag.auth.permissions import ALL_PERMISSIONS, ROLES, is_allowed
from autorag.chat.skills.memory import PERMISSIONS, WorkspaceMemory
from autorag.errors import Forbidden

WORKSPACE = "default"


def _context(caller: Caller | None, user_id: int | None = 7) -> SkillContext:
    app: Any = SimpleNamespace(info=SimpleNamespace(name=WORKSPACE, id=1))
    return SkillContext(app, None, user_id, caller=caller)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("via", ["token", "api_key"])
@pytest.mark.parametrize("scope", [None, frozenset({WORKSPACE}), frozenset({"other"})])
def test_the_skill_check_is_the_api_check(
    role: str, via: str, scope: frozenset[str] | None
) -> None:
    context = _context(Caller(role, via, scope))
    for permission in sorted(ALL_PERMISSIONS):
        assert context.can(permission) == is_allowed(role, via, scope, permission, WORKSPACE)


def test_memory_actions_need_what_the_memory_routes_need() -> None:
    # GET …/memory: chat:use; PUT and DELETE …/memory/{key}: workspaces:write.
    assert PERMISSIONS == {
        "get": "chat:use",
        "list": "chat:use",
        "set": "workspaces:write",
        "delete": "workspaces:write",
    }


def test_a_member_is_refused_before_the_memory_is_touched() -> None:
    """The app stand-in has no catalog: reaching the store would raise AttributeError."""
    member = _context(Caller("member", "token", frozenset({WORKSPACE})))
    for action in ("set", "delete"):
        with pytest.raises(Forbidden, match="workspaces:write"):
            WorkspaceMemory().run({"action": action, "key": "k", "value": "v"}, member)


def test_who_asks_when_nobody_said() -> None:
    assert _context(None, user_id=None).who == LOCAL_OPERATOR  # the command line
    assert _context(None, user_id=7).who == NOBODY  # a user nobody described: nothing
    assert not _context(None, user_id=7).can("chat:use")
    assert _context(None, user_id=None).can("workspaces:write")
