"""Settings: defaults < ``autorag.toml`` < ``AUTORAG_*`` environment < CLI flags.

Nested groups map to TOML tables (``[search]``) and to environment variables with a
double underscore (``AUTORAG_SEARCH__RRF_K=60``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

CONFIG_FILE_NAME = "autorag.toml"


class EmbeddingSettings(BaseModel):
    provider: str = "local"
    model: str = "all-MiniLM-L6-v2"
    base_url: str | None = None
    api_key: SecretStr | None = None
    batch_size: int = Field(default=64, ge=1, le=4096)
    cache: bool = True  # persistent cache keyed by model and content hash
    cache_dir: Path | None = None  # default: the user's cache directory
    cache_max_mb: int = Field(default=2048, ge=16)


class IngestSettings(BaseModel):
    chunk_size: int = Field(default=1000, ge=50)
    chunk_overlap: int = Field(default=200, ge=0)
    max_file_mb: float = Field(default=100, gt=0)
    max_unzipped_mb: float = Field(default=500, gt=0)
    # File and folder names skipped while walking search paths (fnmatch globs).
    ignore: list[str] = Field(default_factory=lambda: [".*", "~$*", "*.tmp", "node_modules"])
    batch_chunks: int = Field(default=256, ge=1)  # chunks embedded and written together


class SearchSettings(BaseModel):
    rrf_k: int = Field(default=60, ge=0)
    vector_weight: float = Field(default=1.0, ge=0)
    fts_weight: float = Field(default=1.0, ge=0)
    candidate_depth: int = Field(default=100, ge=1)  # hits taken from each leg before fusion
    default_k: int = Field(default=10, ge=1)
    fts_title_weight: float = Field(default=1.0, ge=0)


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"  # loopback unless told otherwise
    port: int = Field(default=8000, ge=1, le=65535)
    max_upload_mb: float = Field(default=100, gt=0)
    workers: int = Field(default=2, ge=1, le=64)  # background document processing
    cors_origins: list[str] = Field(default_factory=list)  # CORS is off unless listed
    token_ttl_minutes: int = Field(default=60, ge=1)
    login_attempts_per_minute: int = Field(default=10, ge=1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="AUTORAG_", env_nested_delimiter="__", extra="ignore"
    )

    workspace: str = "default"
    search_paths: list[str] = Field(default_factory=list)
    database_url: str | None = None  # default: SQLite inside <workspace>/.autorag/
    vector_store: str = "lancedb"
    llm_provider: str = "extractive"
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)


def load_settings(config_file: Path | None, **overrides: Any) -> Settings:
    """Build Settings reading ``config_file`` (if it exists) under env and ``overrides``."""

    class _FileBacked(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if config_file is not None and config_file.is_file():
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
            return tuple(sources)

    loaded = _FileBacked(**overrides)
    return Settings.model_validate(loaded.model_dump())
