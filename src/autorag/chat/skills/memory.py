"""``workspace_memory``: the agent's key-value notes per workspace, as a skill."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.chat.memory import (
    MAX_KEY_CHARS,
    MAX_VALUE_BYTES,
    delete_memory,
    get_memory,
    list_memory,
    set_memory,
)
from autorag.errors import InvalidInput
from autorag.llm.base import ToolSpec
from autorag.text import one_line

ACTIONS = ("get", "set", "list", "delete")
# What each action needs: exactly what the API's memory routes need (GET …/memory:
# chat:use; PUT and DELETE …/memory/{key}: workspaces:write).
PERMISSIONS = {
    "get": "chat:use",
    "list": "chat:use",
    "set": "workspaces:write",
    "delete": "workspaces:write",
}
PREVIEW_CHARS = 80  # of each value in a listing: the model gets a value in full with get

SPEC = ToolSpec(
    name="workspace_memory",
    description=(
        "Key-value notes kept for this workspace across chats: 'get', 'set', 'list' or "
        "'delete' a key. Use it to remember facts, preferences or decisions."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "key": {
                "type": "string",
                "maxLength": MAX_KEY_CHARS,
                "description": "the note's name (get, set, delete)",
            },
            "value": {
                "type": "string",
                "description": f"the text to keep (set; up to {MAX_VALUE_BYTES} bytes)",
            },
        },
        "required": ["action"],
    },
)

Handler = Callable[[Mapping[str, Any], SkillContext], SkillResult]


@dataclass
class WorkspaceMemory:
    spec: ToolSpec = SPEC
    progress: str = "Checking the workspace's notes…"

    def available(self, context: SkillContext) -> bool:
        """Offered to whoever may use it at all (``chat:use``)."""
        return context.can("chat:use")

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        action = arguments.get("action")
        handler = _HANDLERS.get(action) if isinstance(action, str) else None
        if handler is None:
            raise InvalidInput(f"workspace_memory needs 'action': one of {', '.join(ACTIONS)}")
        context.require(PERMISSIONS[str(action)], f"workspace_memory {action}")
        return handler(arguments, context)


def _get(arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
    key = _key(arguments)
    entry = get_memory(context.app.catalog, context.app.info.id, key)
    if entry is None:
        return SkillResult(f"No memory is stored under '{key}'.", status=f"Memory: no '{key}'")
    return SkillResult(f"{entry.key}: {entry.value}", status=f"Memory: read '{entry.key}'")


def _set(arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
    key = _key(arguments)
    entry = set_memory(context.app.catalog, context.app.info.id, key, _value(arguments))
    return SkillResult(f"Stored '{entry.key}'.", status=f"Memory: saved '{entry.key}'")


def _list(arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
    entries = list_memory(context.app.catalog, context.app.info.id)
    if not entries:
        return SkillResult("The workspace memory is empty.", status="Memory: empty")
    lines = [f"- {e.key}: {_preview(e.value)}" for e in entries]
    content = f"{len(entries)} keys:\n" + "\n".join(lines)
    return SkillResult(content, status=f"Memory: {len(entries)} keys")


def _delete(arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
    key = _key(arguments)
    if delete_memory(context.app.catalog, context.app.info.id, key):
        return SkillResult(f"Deleted '{key}'.", status=f"Memory: deleted '{key}'")
    return SkillResult(f"No memory is stored under '{key}'.", status=f"Memory: no '{key}'")


_HANDLERS: dict[str, Handler] = {"get": _get, "set": _set, "list": _list, "delete": _delete}


def _key(arguments: Mapping[str, Any]) -> str:
    key = arguments.get("key")
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput(f"workspace_memory '{arguments.get('action')}' needs a 'key' string")
    return key.strip()


def _value(arguments: Mapping[str, Any]) -> str:
    value = arguments.get("value")
    if value is None:
        raise InvalidInput("workspace_memory 'set' needs a 'value'")
    # Models sometimes send a number or an object for a note: keep it as JSON text.
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _preview(value: str) -> str:
    return one_line(value, PREVIEW_CHARS)
