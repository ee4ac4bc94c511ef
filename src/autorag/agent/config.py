"""A workspace's agent configuration, kept in the workspace's settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_SKILLS = ("rag_search", "workspace_memory", "document_temp_process")
DEFAULT_SYSTEM_PROMPT = (
    "You are the knowledge assistant of the workspace {workspace}. Today is {date}.\n"
    "Answer from the workspace's documents: search them with rag_search before answering "
    "a question about their content. Cite every claim taken from a source with the [n] "
    "of that source. If the sources do not answer the question, say so plainly; never "
    "invent a source. Answer in the language of the question.\n"
    "Tools you may call: {skills}."
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
