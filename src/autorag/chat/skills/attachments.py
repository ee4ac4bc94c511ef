"""``document_temp_process``: search the files attached to this chat, as a skill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autorag.agent.skills.base import SkillContext, SkillResult
from autorag.agent.skills.rag_search import format_tool_result
from autorag.chat.attachments import (
    AttachmentInfo,
    has_attachments,
    list_attachments,
    search_attachments,
)
from autorag.errors import InvalidInput
from autorag.llm.base import ToolSpec

NO_ATTACHMENTS = "No files are attached to this chat."

SPEC = ToolSpec(
    name="document_temp_process",
    description=(
        "Search the files attached to this chat (not the workspace's documents). Returns "
        "numbered passages; cite them in the answer with their [n]."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "attachment": {
                "type": "string",
                "description": "only this attached file (its name); all of them if left out",
            },
        },
        "required": ["query"],
    },
)


@dataclass
class DocumentTempProcess:
    spec: ToolSpec = SPEC
    progress: str = "Reading the attached files…"

    def available(self, context: SkillContext) -> bool:
        """Offered in a chat that has files attached, to whoever may use the chat."""
        if context.chat_id is None or not context.can("chat:use"):
            return False
        return has_attachments(context.app, context.chat_id)

    def run(self, arguments: Mapping[str, Any], context: SkillContext) -> SkillResult:
        if context.chat_id is None:
            raise InvalidInput(
                "document_temp_process searches a chat's attached files, and there is no "
                "chat here: attach the file to a chat first"
            )
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("document_temp_process needs a non-empty 'query' string")
        context.require("chat:use", "document_temp_process")
        listed = list_attachments(context.app, context.chat_id)
        if not listed:
            return SkillResult(NO_ATTACHMENTS, status="No attachments")
        name = _attachment(arguments, [a.name for a in listed])
        unread = [a for a in listed if a.status != "ready" and name in (None, a.name)]
        citations = search_attachments(
            context.app,
            context.chat_id,
            query.strip(),
            context.k,
            name=name,
            first_number=context.first_citation_number,
        )
        content = format_tool_result(citations) if citations else "No matching passages."
        if unread:
            content = f"{content}\n\n{_not_searched(unread)}"
        return SkillResult(
            content, citations, status=f"Searched attachments: {len(citations)} passages"
        )


def _not_searched(unread: Sequence[AttachmentInfo]) -> str:
    """What the search could not cover yet, so the answer can say so."""
    lines = ["Not searched:"]
    for item in unread:
        if item.status == "processing":
            lines.append(f"- {item.name}: still being read; ask again in a moment")
        else:
            lines.append(f"- {item.name}: could not be read ({item.error or item.error_code})")
    return "\n".join(lines)


def _attachment(arguments: Mapping[str, Any], names: list[str]) -> str | None:
    """The stored name the model meant (case aside), or None for every attachment."""
    wanted = arguments.get("attachment")
    if wanted is None or (isinstance(wanted, str) and not wanted.strip()):
        return None
    if not isinstance(wanted, str):
        raise InvalidInput("document_temp_process 'attachment' must be a file name string")
    for name in names:
        if name.casefold() == wanted.strip().casefold():
            return name
    raise InvalidInput(
        f"no file named {wanted!r} is attached to this chat (attached: {', '.join(names)})"
    )
