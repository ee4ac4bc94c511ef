"""Catalog tables: the source of truth. Vector stores hold data derived from these."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class WorkspaceRow(Base):
    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    short_id: Mapped[str] = mapped_column(String(16), unique=True)
    settings: Mapped[str] = mapped_column(Text, default="{}")  # JSON, per-workspace options
    # workspace: people's; archive: an archive's hidden index namespace ("archive:<id>").
    kind: Mapped[str] = mapped_column(String(16), default="workspace", server_default="workspace")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DocumentRow(Base):
    __tablename__ = "documents"
    __table_args__ = (
        UniqueConstraint("workspace_id", "source_id", name="uq_documents_workspace_source"),
        Index("ix_documents_workspace_status", "workspace_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(Text)  # canonical virtual id (seed 000)
    # file: found under a search path; datasource: a record from a connector or benchmark.
    origin: Mapped[str] = mapped_column(String(16), default="file")
    title: Mapped[str] = mapped_column(Text, default="")
    doc_type: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    mtime_ns: Mapped[int] = mapped_column(BigInteger, default=0)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    error_code: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    pages: Mapped[int | None] = mapped_column(Integer)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    embedding_model: Mapped[str | None] = mapped_column(String(200))
    # ISO 639-1 code of the text's language: which stemmer its full-text terms had.
    language: Mapped[str | None] = mapped_column(String(16))
    doc_date: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class ChunkRow(Base):
    __tablename__ = "chunks"
    __table_args__ = (Index("ix_chunks_document", "document_id", "chunk_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    chunk_index: Mapped[int] = mapped_column(Integer)
    # "ws<workspace id>": a token the full-text index matches to stay inside a workspace.
    scope: Mapped[str] = mapped_column(String(32))
    # The document title, repeated so the full-text index can weigh it per chunk.
    title: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text)
    # What the full-text index reads: the title and text as autorag.text.analysis makes
    # them terms (stemmed in the document's language, without diacritics).
    fts_title: Mapped[str] = mapped_column(Text, default="")
    fts_text: Mapped[str] = mapped_column(Text, default="")
    content_hash: Mapped[str] = mapped_column(String(64))
    page: Mapped[int | None] = mapped_column(Integer)
    paragraph: Mapped[int] = mapped_column(Integer, default=0)
    char_start: Mapped[int] = mapped_column(Integer, default=0)


class WorkspaceLanguageRow(Base):
    """Each language a workspace's documents were indexed in: a query is made terms in
    every one of them. Rows stay when the last document of a language goes (a spare
    language costs a query a few more terms, nothing else)."""

    __tablename__ = "workspace_languages"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    language: Mapped[str] = mapped_column(String(16), primary_key=True)


class RefreshRunRow(Base):
    """One `refresh`: readiness is derived from the latest run and document states."""

    __tablename__ = "refresh_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    method: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))  # running|completed|interrupted|failed
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    files_seen: Mapped[int] = mapped_column(Integer, default=0)
    indexed: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    needs_ocr: Mapped[int] = mapped_column(Integer, default=0)  # left without text for now
    deleted: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)


class UserRow(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(String(16))  # admin | manager | member
    disabled: Mapped[bool] = mapped_column(default=False)
    # Prepended to the agent's system prompt in this user's chats.
    custom_instructions: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MembershipRow(Base):
    """Which workspaces a (non-admin) user may use."""

    __tablename__ = "memberships"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )


class ApiKeyRow(Base):
    """A script's credential: only a hash is stored; the key is shown once."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(16), unique=True)  # shown in listings
    key_hash: Mapped[str] = mapped_column(String(64))
    workspaces: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of names; [] = all
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class JobRow(Base):
    """Background work that survives restarts (document processing, re-embedding)."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status", "status", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    document_id: Mapped[int | None] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))  # queued | running | done | failed
    payload: Mapped[str] = mapped_column(Text, default="{}")  # JSON
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    claimed_by: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ChatRow(Base):
    """A conversation in a workspace, owned by one user."""

    __tablename__ = "chats"
    __table_args__ = (Index("ix_chats_workspace_user", "workspace_id", "user_id", "updated_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    # None: a chat from the command line or an OpenAI client without a user session.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    title: Mapped[str] = mapped_column(Text, default="")
    model: Mapped[str | None] = mapped_column(String(300))  # per-chat choice, provider/model
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (Index("ix_messages_chat", "chat_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(16))  # user | assistant
    content: Mapped[str] = mapped_column(Text, default="")
    citations: Mapped[str] = mapped_column(Text, default="[]")  # JSON, the sources sent
    plan: Mapped[str | None] = mapped_column(Text)
    model_used: Mapped[str | None] = mapped_column(String(300))
    provider_used: Mapped[str | None] = mapped_column(String(100))
    abort_reason: Mapped[str | None] = mapped_column(String(32))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TokenUsageRow(Base):
    """Tokens spent per workspace and day, written on every exit path of an answer."""

    __tablename__ = "token_usage"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # YYYY-MM-DD, UTC
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)


class WorkspaceMemoryRow(Base):
    """The agent's key-value memory per workspace (skill ``workspace_memory``)."""

    __tablename__ = "workspace_memory"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChatAttachmentRow(Base):
    """A file attached to one chat: read by a job, then searchable there, never indexed."""

    __tablename__ = "chat_attachments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    chat_id: Mapped[int] = mapped_column(ForeignKey("chats.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(Text)
    doc_type: Mapped[str] = mapped_column(String(16))
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    # processing (its job reads it), ready (searchable) or failed (error_code, error)
    status: Mapped[str] = mapped_column(String(16), default="ready", server_default="ready")
    error_code: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ChatAttachmentChunkRow(Base):
    __tablename__ = "chat_attachment_chunks"
    __table_args__ = (Index("ix_attachment_chunks", "attachment_id", "chunk_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    attachment_id: Mapped[int] = mapped_column(
        ForeignKey("chat_attachments.id", ondelete="CASCADE")
    )
    chunk_index: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    page: Mapped[int | None] = mapped_column(Integer)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)  # float32, normalized


class SystemConfigRow(Base):
    """Installation-wide settings an admin changes at run time (the global default model)."""

    __tablename__ = "system_config"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DlpPatternRow(Base):
    """A DLP pattern: the built-ins (seeded on first use; only ``enabled`` changes) and up
    to 50 custom ones."""

    __tablename__ = "dlp_patterns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)  # the match type
    regex: Mapped[str] = mapped_column(Text)  # RE2 syntax
    builtin: Mapped[bool] = mapped_column(default=False)
    enabled: Mapped[bool] = mapped_column(default=True)
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DlpOriginalRow(Base):
    """The original of a text DLP redacted, for an admin's audited reveal."""

    __tablename__ = "dlp_originals"
    __table_args__ = (Index("ix_dlp_originals_ref", "ref"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # opaque, unguessable
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE")
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    source: Mapped[str] = mapped_column(String(16))  # chat | widget
    ref: Mapped[str | None] = mapped_column(String(200))  # what it belongs to: "message:42"
    original: Mapped[str] = mapped_column(Text)
    redacted: Mapped[str] = mapped_column(Text)
    types: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of pattern names
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class AuditEventRow(Base):
    """Something security-relevant that happened (``dlp.redacted``, ``dlp.revealed``…)."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_event", "event", "created_at"),
        Index("ix_audit_events_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(64))
    # Kept (unlinked) when the user or workspace is deleted: the trail outlives them.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    workspace_id: Mapped[int | None] = mapped_column(
        ForeignKey("workspaces.id", ondelete="SET NULL")
    )
    source: Mapped[str | None] = mapped_column(String(16))
    details: Mapped[str] = mapped_column(Text, default="{}")  # JSON; never a secret
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PolicyRuleRow(Base):
    """A source policy rule: a glob over canonical source ids and its level (seed 000)."""

    __tablename__ = "policy_rules"
    __table_args__ = (
        UniqueConstraint("workspace_id", "glob", name="uq_policy_rules_workspace_glob"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    glob: Mapped[str] = mapped_column(String(500))  # canonical form
    level: Mapped[str] = mapped_column(String(16))  # private | ask | share
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PolicySeenSourceRow(Base):
    """A source a peer query returned or considered, so the owner can promote it."""

    __tablename__ = "policy_seen_sources"

    workspace_id: Mapped[int] = mapped_column(
        ForeignKey("workspaces.id", ondelete="CASCADE"), primary_key=True
    )
    source_id: Mapped[str] = mapped_column(Text, primary_key=True)  # canonical id
    first_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    count: Mapped[int] = mapped_column(Integer, default=1)


class OcrJobRow(Base):
    """One OCR pass over a document's scanned pages, with its progress and review state."""

    __tablename__ = "ocr_jobs"
    __table_args__ = (
        Index("ix_ocr_jobs_workspace_status", "workspace_id", "status", "id"),
        Index("ix_ocr_jobs_document", "document_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))  # auto | vision
    # The document's content the job reads: a file changed since is another job's.
    content_hash: Mapped[str | None] = mapped_column(String(64))
    # The file a refresh found, read where it was found; None for an upload (stored).
    source_path: Mapped[str | None] = mapped_column(Text)
    # queued | running | review | indexing | indexed | rejected | failed | no_text
    status: Mapped[str] = mapped_column(String(16))
    engine: Mapped[str | None] = mapped_column(String(64))  # engines that read pages
    pages_total: Mapped[int] = mapped_column(Integer, default=0)  # pages to OCR
    pages_done: Mapped[int] = mapped_column(Integer, default=0)
    quality: Mapped[float | None] = mapped_column(Float)  # engine confidence, 0..1
    credibility: Mapped[float | None] = mapped_column(Float)  # word-likeness, 0..1
    reason: Mapped[str | None] = mapped_column(Text)  # why it failed or waits
    reviewed_by: Mapped[str | None] = mapped_column(String(100))
    reviewed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class OcrPageRow(Base):
    """One page of an OCR job: whether and how it was read, and the text it gave."""

    __tablename__ = "ocr_pages"
    __table_args__ = (
        UniqueConstraint("job_id", "page", name="uq_ocr_pages_job_page"),
        Index("ix_ocr_pages_document", "document_id", "page"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("ocr_jobs.id", ondelete="CASCADE"))
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"))
    page: Mapped[int] = mapped_column(Integer)  # 1-based; a frame of a multi-page TIFF
    # queued | done | low | blank | failed | skipped
    status: Mapped[str] = mapped_column(String(16))
    engine: Mapped[str | None] = mapped_column(String(32))
    confidence: Mapped[float | None] = mapped_column(Float)
    credibility: Mapped[float | None] = mapped_column(Float)
    chars: Mapped[int] = mapped_column(Integer, default=0)
    rotation: Mapped[int] = mapped_column(Integer, default=0)  # degrees turned to read it
    text: Mapped[str] = mapped_column(Text, default="")
    reason: Mapped[str | None] = mapped_column(Text)
