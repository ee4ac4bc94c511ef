"""Per-workspace settings: options a workspace's admins change at run time, kept as JSON
in the catalog's workspace row, and read by many features (search, chat and its agent,
OCR, indexing, peers). A low module, beside ``system_config``: it imports no feature.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select, update

from autorag.errors import InvalidInput, NotFound
from autorag.store.catalog import outbox
from autorag.store.catalog.models import WorkspaceRow
from autorag.store.catalog.repository import Catalog, WorkspaceInfo

# wiki_query and wiki_write are offered only in a workspace that has an archive.
DEFAULT_SKILLS = (
    "rag_search",
    "workspace_memory",
    "document_temp_process",
    "wiki_query",
    "wiki_write",
)


class AgentConfig(BaseModel):
    """Which skills the agent may use, how it is prompted, and its constraints."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    enabled_skills: list[str] = Field(default_factory=lambda: list(DEFAULT_SKILLS))
    # Placeholders: {workspace}, {date}, {skills}. Empty: the built-in prompt.
    system_prompt: str = Field(default="", max_length=20_000)
    plan_mode: bool = False  # a planning call first, its plan shown and followed
    default_model: str | None = Field(default=None, max_length=300)  # provider/model
    local_llm_only: bool = False  # refuse models whose provider is not local
    hybrid_search_forced: bool = False  # rag_search always runs in hybrid mode
    citation_required: bool = True  # answers must cite; otherwise a disclaimer


class WorkspaceSettings(BaseModel):
    """Per-workspace options, kept as JSON in the catalog. Later features add theirs."""

    model_config = ConfigDict(extra="ignore")

    default_k: int = Field(default=10, ge=1, le=200, description="Search results by default")
    redact_on_ingest: bool = Field(
        default=False, description="Redact personal data from documents as they are indexed"
    )
    agent: AgentConfig = Field(default_factory=AgentConfig)
    # Off: this workspace's searches skip the server's reranker ([search.rerank]) unless
    # a search asks for it (`autorag search --rerank`).
    rerank: bool = Field(default=True, description="Rerank search results")
    ocr_instructions: str = Field(
        default="", max_length=4000, description="Added to the vision OCR prompt"
    )
    # OCR choices of this workspace over the server's [ocr] settings (None: the server's);
    # checked against what is installed and configured by autorag.ocr.options.
    ocr_engine: str | None = Field(default=None, max_length=20)  # an engine, auto or off
    ocr_languages: list[str] | None = Field(default=None, max_length=20)  # Tesseract codes
    ocr_vision_model: str | None = Field(default=None, max_length=300)  # provider/model


def read_settings(catalog: Catalog, workspace: WorkspaceInfo) -> WorkspaceSettings:
    return parse_settings(_stored_settings_text(catalog, workspace))


def update_settings(
    catalog: Catalog, workspace: WorkspaceInfo, changes: Mapping[str, Any]
) -> WorkspaceSettings:
    """Apply ``changes`` (validated as a whole); keys this version does not know stay."""
    with catalog.engine.begin() as conn:
        text = conn.execute(
            select(WorkspaceRow.settings).where(WorkspaceRow.id == workspace.id)
        ).scalar()
        if text is None:
            raise NotFound(f"no workspace {workspace.name!r}")
        stored = _load_json(text)
        try:
            settings = WorkspaceSettings.model_validate({**stored, **changes})
        except ValidationError as exc:
            raise InvalidInput(f"invalid workspace settings: {exc.errors()[0]['msg']}") from exc
        merged = {**stored, **settings.model_dump()}
        conn.execute(
            update(WorkspaceRow)
            .where(WorkspaceRow.id == workspace.id)
            .values(settings=json.dumps(merged, sort_keys=True))
        )
        # Which settings changed, not their values (a prompt may be anything).
        changed = {"workspace": workspace.id, "settings": sorted(changes)}
        outbox.emit(conn, "workspace.updated", changed, workspace=workspace.name)
    return settings


def _stored_settings_text(catalog: Catalog, workspace: WorkspaceInfo) -> str:
    with catalog.engine.connect() as conn:
        text = conn.execute(
            select(WorkspaceRow.settings).where(WorkspaceRow.id == workspace.id)
        ).scalar()
    if text is None:
        raise NotFound(f"no workspace {workspace.name!r}")
    return str(text)


def parse_settings(text: str | None) -> WorkspaceSettings:
    try:
        return WorkspaceSettings.model_validate(_load_json(text or "{}"))
    except ValidationError:
        return WorkspaceSettings()  # a hand-edited value out of range: the defaults


def _load_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
