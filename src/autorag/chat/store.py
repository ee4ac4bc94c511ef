"""Chats, their messages and the tokens they spend, in the catalog."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.orm import Session

from autorag.errors import NotFound
from autorag.llm.base import ChatMessage, Usage
from autorag.models import Citation
from autorag.store.catalog import outbox
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import (
    ChatRow,
    MessageRow,
    TokenUsageRow,
    UserRow,
    WorkspaceRow,
    utcnow,
)
from autorag.text import one_line
from autorag.times import as_utc

TITLE_CHARS = 80


@dataclass(frozen=True)
class ChatInfo:
    id: int
    workspace_id: int
    user_id: int | None
    title: str
    model: str | None
    created_at: datetime
    updated_at: datetime
    messages: int = 0


@dataclass(frozen=True)
class MessageInfo:
    id: int
    chat_id: int
    role: str
    content: str
    citations: list[dict[str, Any]]
    plan: str | None
    model_used: str | None
    provider_used: str | None
    abort_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    created_at: datetime


@dataclass(frozen=True)
class AssistantMessage:
    """An answer as stored: what was sent, and how it was made."""

    content: str
    citations: list[Citation]
    plan: str | None
    model_used: str | None
    provider_used: str | None
    abort_reason: str
    usage: Usage


# -- chats ------------------------------------------------------------------------------
def create_chat(engine: Engine, workspace_id: int, user_id: int | None, title: str) -> ChatInfo:
    now, title = utcnow(), _title(title)
    row = insert(ChatRow).values(
        workspace_id=workspace_id, user_id=user_id, title=title, created_at=now, updated_at=now
    )
    with engine.begin() as conn:
        chat_id = int(conn.execute(row).inserted_primary_key[0])  # type: ignore[index]
    return ChatInfo(chat_id, workspace_id, user_id, title, None, now, now)


def get_chat(engine: Engine, workspace_id: int, chat_id: int, user_id: int | None) -> ChatInfo:
    """The chat, if it is in this workspace and belongs to this user (404 otherwise)."""
    for chat in _chats(engine, workspace_id, user_id, chat_id=chat_id):
        return chat
    raise NotFound(f"no chat {chat_id} in this workspace")


def list_chats(
    engine: Engine, workspace_id: int, user_id: int | None, *, limit: int = 50, offset: int = 0
) -> list[ChatInfo]:
    return _chats(engine, workspace_id, user_id, limit=limit, offset=offset)


def _chats(
    engine: Engine,
    workspace_id: int,
    user_id: int | None,
    *,
    chat_id: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[ChatInfo]:
    counts = (
        select(MessageRow.chat_id, func.count(MessageRow.id).label("n"))
        .group_by(MessageRow.chat_id)
        .subquery()
    )
    owner = ChatRow.user_id.is_(None) if user_id is None else ChatRow.user_id == user_id
    query = (
        select(*ChatRow.__table__.c, func.coalesce(counts.c.n, 0).label("message_count"))
        .outerjoin(counts, counts.c.chat_id == ChatRow.id)
        .where(ChatRow.workspace_id == workspace_id, owner)
        .order_by(ChatRow.updated_at.desc(), ChatRow.id.desc())
        .limit(limit)
        .offset(offset)
    )
    if chat_id is not None:
        query = query.where(ChatRow.id == chat_id)
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        ChatInfo(
            r.id,
            r.workspace_id,
            r.user_id,
            r.title,
            r.model,
            as_utc(r.created_at),
            as_utc(r.updated_at),
            int(r.message_count),
        )
        for r in rows
    ]


def set_chat_model(engine: Engine, chat: ChatInfo, model: str | None) -> ChatInfo:
    with engine.begin() as conn:
        conn.execute(update(ChatRow).where(ChatRow.id == chat.id).values(model=model))
    return ChatInfo(**{**asdict(chat), "model": model})


def rename_chat(engine: Engine, chat: ChatInfo, title: str) -> ChatInfo:
    with engine.begin() as conn:
        conn.execute(update(ChatRow).where(ChatRow.id == chat.id).values(title=_title(title)))
    return ChatInfo(**{**asdict(chat), "title": _title(title)})


def delete_chat(engine: Engine, chat: ChatInfo) -> None:
    with engine.begin() as conn:
        conn.execute(delete(ChatRow).where(ChatRow.id == chat.id))


# -- messages ---------------------------------------------------------------------------
def add_user_message(engine: Engine, chat_id: int, content: str) -> int:
    return _add(engine, chat_id, role="user", content=content)


def add_assistant_message(engine: Engine, chat_id: int, message: AssistantMessage) -> int:
    """Save an answer, with its ``chat.completed`` event in the same transaction."""

    def completed(conn: Connection, message_id: int) -> None:
        _announce_completed(conn, chat_id, message_id, message)

    return _add(
        engine,
        chat_id,
        after=completed,
        role="assistant",
        content=message.content,
        citations=json.dumps([asdict(c) for c in message.citations]),
        plan=message.plan,
        model_used=message.model_used,
        provider_used=message.provider_used,
        abort_reason=message.abort_reason,
        prompt_tokens=message.usage.prompt_tokens,
        completion_tokens=message.usage.completion_tokens,
    )


def _add(
    engine: Engine,
    chat_id: int,
    *,
    after: Callable[[Connection, int], None] | None = None,
    **values: Any,
) -> int:
    now = utcnow()
    with engine.begin() as conn:
        result = conn.execute(insert(MessageRow).values(chat_id=chat_id, created_at=now, **values))
        conn.execute(update(ChatRow).where(ChatRow.id == chat_id).values(updated_at=now))
        message_id = int(result.inserted_primary_key[0])  # type: ignore[index]
        if after is not None:
            after(conn, message_id)
    return message_id


def _announce_completed(
    conn: Connection, chat_id: int, message_id: int, message: AssistantMessage
) -> None:
    """The answer's event: ids, the model, counts; never the question or the answer."""
    owner = conn.execute(
        select(WorkspaceRow.name, UserRow.username)
        .select_from(ChatRow)
        .join(WorkspaceRow, WorkspaceRow.id == ChatRow.workspace_id)
        .outerjoin(UserRow, UserRow.id == ChatRow.user_id)
        .where(ChatRow.id == chat_id)
    ).first()
    data = {
        "chat": chat_id,
        "message": message_id,
        "model": message.model_used,
        "provider": message.provider_used,
        "aborted": message.abort_reason or None,
        "citations": len(message.citations),
        "promptTokens": message.usage.prompt_tokens,
        "completionTokens": message.usage.completion_tokens,
    }
    workspace, actor = (owner[0], owner[1]) if owner is not None else (None, None)
    outbox.emit(conn, "chat.completed", data, workspace=workspace, actor=actor)


def list_messages(engine: Engine, chat_id: int) -> list[MessageInfo]:
    query = select(MessageRow).where(MessageRow.chat_id == chat_id).order_by(MessageRow.id)
    with Session(engine) as session:
        rows = session.execute(query).scalars().all()
    return [
        MessageInfo(
            r.id,
            r.chat_id,
            r.role,
            r.content,
            json.loads(r.citations or "[]"),
            r.plan,
            r.model_used,
            r.provider_used,
            r.abort_reason,
            r.prompt_tokens,
            r.completion_tokens,
            as_utc(r.created_at),
        )
        for r in rows
    ]


def history(engine: Engine, chat_id: int, *, turns: int) -> list[ChatMessage]:
    """The chat's last ``turns`` messages as conversation for the model, oldest first."""
    query = (
        select(MessageRow.role, MessageRow.content)
        .where(MessageRow.chat_id == chat_id, MessageRow.content != "")
        .order_by(MessageRow.id.desc())
        .limit(turns)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [ChatMessage("user" if r[0] == "user" else "assistant", r[1]) for r in reversed(rows)]


# -- token usage ---------------------------------------------------------------------------
def record_usage(engine: Engine, workspace_id: int, usage: Usage, *, failed: bool) -> None:
    """Add one answer's tokens to today's row for the workspace (an upsert)."""
    values = {
        "workspace_id": workspace_id,
        "day": datetime.now(UTC).date().isoformat(),
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "requests": 1,
        "errors": int(failed),
    }
    statement = dialect_insert(engine, TokenUsageRow).values(**values)
    table = TokenUsageRow.__table__.c
    statement = statement.on_conflict_do_update(
        index_elements=["workspace_id", "day"],
        set_={
            key: getattr(table, key) + getattr(statement.excluded, key)
            for key in ("prompt_tokens", "completion_tokens", "requests", "errors")
        },
    )
    with engine.begin() as conn:
        conn.execute(statement)


def usage_by_day(engine: Engine, workspace_id: int, *, days: int = 30) -> list[dict[str, Any]]:
    query = (
        select(TokenUsageRow)
        .where(TokenUsageRow.workspace_id == workspace_id)
        .order_by(TokenUsageRow.day.desc())
        .limit(days)
    )
    with Session(engine) as session:
        rows = session.execute(query).scalars().all()
    return [
        {
            "day": r.day,
            "promptTokens": r.prompt_tokens,
            "completionTokens": r.completion_tokens,
            "requests": r.requests,
            "errors": r.errors,
        }
        for r in rows
    ]


def _title(text: str) -> str:
    return one_line(text, TITLE_CHARS)
