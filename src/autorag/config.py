"""Settings: defaults < ``autorag.toml`` < ``AUTORAG_*`` environment < CLI flags.

Nested groups map to TOML tables (``[search]``) and to environment variables with a
double underscore (``AUTORAG_SEARCH__RRF_K=60``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from autorag.errors import InvalidInput

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
    # The languages the model was trained on (ISO 639-1 codes, "*" for any). Unset: as
    # known for the model (all-MiniLM-L6-v2: English), else any. A question in another
    # language is ranked by full text; the vector leg only orders what full text missed.
    languages: list[Annotated[str, StringConstraints(pattern=r"^(\*|[a-z]{2})$")]] | None = None


class IngestSettings(BaseModel):
    chunk_size: int = Field(default=1000, ge=50)
    chunk_overlap: int = Field(default=200, ge=0)
    max_file_mb: float = Field(default=100, gt=0)
    max_unzipped_mb: float = Field(default=500, gt=0)
    # File and folder names skipped while walking search paths (fnmatch globs).
    ignore: list[str] = Field(default_factory=lambda: [".*", "~$*", "*.tmp", "node_modules"])
    batch_chunks: int = Field(default=256, ge=1)  # chunks embedded and written together
    # Search paths (as in search_paths) whose symbolic links may lead outside every search
    # path; files reached so are indexed under their real path (`autorag add --follow-links`).
    follow_links: list[str] = Field(default_factory=list)
    # Files with more than one name on disk (hard links) are refused by default: the policy
    # of the one name a walk sees may not be the policy of the others.
    index_hard_links: bool = False
    # A document's language picks its full-text stemmer: "auto" detects it from the text
    # (ISO 639-1 code; see autorag.text.language), a code fixes it for every document.
    language: str = Field(default="auto", pattern=r"^(auto|[a-z]{2})$")
    # Used when detection is unsure (short or mixed text).
    default_language: str = Field(default="en", pattern=r"^[a-z]{2}$")


class RerankSettings(BaseModel):
    """A second stage over the first ``top_n`` hits (``autorag.rerank``); off unless a
    provider is set. It never fails a search: past ``timeout_s``, or on any error, the
    first-stage order stands and the response says why."""

    provider: Literal["none", "cross-encoder", "http", "llm"] = "none"
    # cross-encoder: the path of a sentence-transformers CrossEncoder directory (never
    # downloaded); http: the model name sent, if the API wants one; llm: provider/model
    # (default: the workspace's chat model).
    model: str | None = Field(default=None, max_length=1000)
    url: str | None = Field(default=None, max_length=2000)  # http: the /rerank endpoint
    # http: the request shape: TEI's {query, texts} or Cohere's {query, documents} (Jina,
    # Voyage and mixedbread speak Cohere's).
    api: Literal["tei", "cohere"] = "tei"
    api_key: SecretStr | None = None  # http: sent as a bearer token
    # http: whether the service runs on this machine or network. None: judged from the
    # url's host. A hosted one is sent only passages whose source policy is `share`.
    local: bool | None = None
    top_n: int = Field(default=30, ge=1, le=200)  # first-stage hits reranked
    timeout_s: float = Field(default=5.0, gt=0, le=60)  # then the first-stage order stands
    max_passage_chars: int = Field(default=2000, ge=100, le=20_000)  # each passage sent

    @model_validator(mode="after")
    def _complete(self) -> RerankSettings:
        if self.provider == "http" and not self.url:
            raise ValueError("search.rerank.provider = 'http' needs search.rerank.url")
        if self.provider == "cross-encoder" and not self.model:
            raise ValueError(
                "search.rerank.provider = 'cross-encoder' needs search.rerank.model, "
                "the path of a local model directory"
            )
        return self


class SearchSettings(BaseModel):
    # How the two legs are fused: "rrf" (the seed's reciprocal rank fusion, each leg's
    # rank) or "convex" (a weighted sum of each leg's scores, min-max normalised over its
    # own candidates). The weights scale each leg in either.
    fusion: Literal["rrf", "convex"] = "rrf"
    rrf_k: int = Field(default=60, ge=0)
    vector_weight: float = Field(default=1.0, ge=0)
    fts_weight: float = Field(default=1.0, ge=0)
    candidate_depth: int = Field(default=100, ge=1)  # hits taken from each leg before fusion
    default_k: int = Field(default=10, ge=1)
    fts_title_weight: float = Field(default=1.0, ge=0)
    # PostgreSQL text-search configuration (a name in pg_ts_config) applied to the terms
    # autorag.text.analysis has already stemmed per language: keep "simple", which adds
    # no stemming of its own. SQLite's FTS5 index ignores it.
    fts_config: str = Field(default="simple", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    rerank: RerankSettings = Field(default_factory=RerankSettings)


class VectorSettings(BaseModel):
    """Where the server-side vector stores live (``vector_store`` picks one by name)."""

    # Qdrant: a server at ``qdrant_url``; without one, qdrant-client's in-process local
    # mode at ``qdrant_path`` (default <workspace>/.autorag/vectors/qdrant), one process.
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    qdrant_path: Path | None = None
    qdrant_timeout_s: float = Field(default=30, gt=0)
    qdrant_batch_size: int = Field(default=256, ge=1)  # points per upsert request
    # pgvector: tables live in this schema of the catalog database.
    pgvector_schema: str = Field(default="autorag_vectors", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    pgvector_hnsw_m: int = Field(default=16, ge=2, le=100)
    pgvector_hnsw_ef_construction: int = Field(default=64, ge=4, le=1000)
    # Raised to the search depth when that is larger: HNSW returns at most ef_search rows.
    pgvector_ef_search: int = Field(default=100, ge=1, le=1000)
    # maintenance_work_mem for index builds: a build is fast while the graph fits in it.
    pgvector_build_memory_mb: int = Field(default=1024, ge=64)


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"  # loopback unless told otherwise
    port: int = Field(default=8000, ge=1, le=65535)
    max_upload_mb: float = Field(default=100, gt=0)
    # Any other request body (search, chat, JSON): refused with 413 past this, unread.
    max_body_kb: int = Field(default=1024, ge=16)
    # Background document processing threads; 0: leave jobs to `autorag worker` processes.
    workers: int = Field(default=2, ge=0, le=64)
    # Searches computed at once over HTTP (others wait their turn without a thread); 0:
    # one per CPU core, at least 2. More threads than cores only fight over them and keep
    # the event loop (and /healthz) waiting for the interpreter lock.
    search_threads: int = Field(default=0, ge=0, le=64)
    cors_origins: list[str] = Field(default_factory=list)  # CORS is off unless listed
    token_ttl_minutes: int = Field(default=60, ge=1)
    login_attempts_per_minute: int = Field(default=10, ge=1)
    # Addresses of reverse proxies whose X-Forwarded-For names the client (login limits,
    # logs). None by default: the header is ignored and the peer address is the client.
    trusted_proxies: list[str] = Field(default_factory=list)
    # `autorag serve` loads the embedding model and opens the indexes in the background
    # at start-up, so that the first question does not wait for them (seconds).
    warm_up: bool = True


class LLMProviderSettings(BaseModel):
    """One model server. ``kind`` picks the adapter: ``openai`` (any OpenAI-compatible
    server: OpenAI, vLLM, llama.cpp, LM Studio, Ollama's /v1), ``ollama`` (native API)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,39}$")
    kind: str
    base_url: str | None = None
    api_key: SecretStr | None = None
    default_model: str | None = None
    # Offered models; empty: whatever the server lists.
    models: list[str] = Field(default_factory=list)
    # Whether text stays on this machine or network. None: judged from base_url's host.
    local: bool | None = None
    timeout_s: float = Field(default=120, gt=0)


class LLMSettings(BaseModel):
    """Model servers and the environment's default model.

    A model is named ``provider/model`` (``ollama/llama3.2:3b``) or just ``provider`` for
    its default model. The built-in ``extractive`` provider needs no server and is always
    there: the default when nothing else is configured, and the last fallback.
    """

    providers: list[LLMProviderSettings] = Field(default_factory=list)
    default: str = "extractive"
    poll_seconds: float = Field(default=30, gt=0)  # availability polling interval
    fallback: bool = True  # answer with the next available model when the chosen is down


class AgentSettings(BaseModel):
    """Budgets and limits of the ReAct orchestrator."""

    max_iterations: int = Field(default=8, ge=1, le=50)
    wallclock_s: float = Field(default=180, gt=0)
    token_budget: int = Field(default=60_000, ge=1000)  # prompt + completion, per answer
    context_bytes: int = Field(default=64_000, ge=4000)  # prompt kept under this size
    keep_last_messages: int = Field(default=8, ge=1)  # kept when the context is cut
    skill_timeout_s: float = Field(default=30, gt=0)
    tool_output_chars: int = Field(default=12_000, ge=500)
    loop_repeats: int = Field(default=3, ge=2)  # same call this often: a loop
    max_concurrent_per_user: int = Field(default=3, ge=1)  # CHAT_MAX_CONCURRENT_PER_USER
    search_k: int = Field(default=6, ge=1, le=50)  # sources rag_search returns


class DlpSettings(BaseModel):
    """Data-loss prevention: secrets and personal data redacted where text leaves."""

    enabled: bool = True  # DLP_ENABLED
    # Roles exempt from scanning and redaction (DLP_BYPASS_ROLES, a JSON list); every
    # bypass is audited as dlp.bypassed.
    bypass_roles: list[str] = Field(default_factory=list)


class OcrSettings(BaseModel):
    """OCR of scans and images (``autorag.ocr``): engines, bounds, the review bar."""

    enabled: bool = True
    # tesseract | rapidocr | vision; "auto": tesseract when installed, else rapidocr.
    engine: str = "auto"
    languages: list[str] = Field(default_factory=lambda: ["eng"])  # tesseract codes
    dpi: int = Field(default=300, ge=72, le=600)  # pages are rendered at this resolution
    max_pages: int = Field(default=500, ge=1)  # per document; later pages are skipped
    # Bigger images are refused and bigger pages rendered at a lower dpi: a 300-dpi A4
    # page is 8.7 MP, so this leaves room for A3 while bounding memory per worker.
    max_image_pixels: int = Field(default=40_000_000, ge=1_000_000)
    page_timeout_s: float = Field(default=120, gt=0)  # one page, one engine
    # Results below either score wait for an admin's approval before they are indexed.
    review_below_quality: float = Field(default=0.75, ge=0, le=1)
    review_below_credibility: float = Field(default=0.6, ge=0, le=1)
    # The vision engine: a [[llm.providers]] name (any kind) and a vision model it serves.
    vision_provider: str | None = None
    vision_model: str | None = None
    vision_max_pages: int = Field(default=50, ge=1)  # per document
    # Page images are documents: they go to a hosted service only when this says so.
    vision_allow_hosted: bool = False


class P2PSettings(BaseModel):
    """Peer queries over SimpleX (seed 000): the simplex-chat child process and its limits."""

    enabled: bool = False
    # Seed 000 names it p2p.simplexDbPrefix; default <workspace>/.autorag/p2p/simplex.
    # A relative path is taken from the workspace folder.
    simplex_db_prefix: Path | None = Field(
        default=None, validation_alias=AliasChoices("simplex_db_prefix", "simplexDbPrefix")
    )
    simplex_binary: str = "simplex-chat"
    ws_port: int = Field(default=5225, ge=1, le=65535)  # simplex-chat's WebSocket (127.0.0.1)
    bot_name: str = Field(default="AutoRAG", min_length=1, max_length=100)
    start_timeout_s: float = Field(default=30, gt=0)  # until the WebSocket port answers
    command_timeout_s: float = Field(default=30, gt=0)
    # Commands that wait for the network (/_address, /_accept, /_connect): >= 60 s.
    interactive_timeout_s: float = Field(default=90, gt=0)
    # One chat message is at most 15 602 encoded bytes (the brief's §7); parts are split
    # well below that so the JSON envelope still fits.
    max_message_bytes: int = Field(default=12_000, ge=1024, le=15_000)
    query_timeout_s: float = Field(default=60, gt=0)  # a peer query's time budget here
    approval_ttl_minutes: float = Field(default=30, gt=0)  # then the peer gets `timeout`
    peers_asked: int = Field(default=2, ge=1, le=10)  # by the peer_search skill


class SmtpSettings(BaseModel):
    """An SMTP server: backup failure e-mails and the ``email:`` backup destination."""

    host: str | None = None  # unset: no e-mail is sent
    port: int = Field(default=587, ge=1, le=65535)
    username: str | None = None
    password: SecretStr | None = None
    sender: str | None = None  # the From address (default: autorag@<host>)
    security: str = Field(default="starttls", pattern=r"^(starttls|ssl|none)$")
    timeout_s: float = Field(default=30, gt=0)


class S3Settings(BaseModel):
    """Credentials for ``s3://bucket/prefix`` destinations; ``endpoint_url`` makes them
    S3-compatible (MinIO, Backblaze B2, Wasabi, Cloudflare R2…)."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None  # unset: boto3's own chain (env, ~/.aws, instance role)
    secret_access_key: SecretStr | None = None
    addressing_style: str = Field(default="auto", pattern=r"^(auto|path|virtual)$")


class SftpSettings(BaseModel):
    """``sftp://user@host[:port]/path``: the server's host key must be known (fail closed)."""

    password: SecretStr | None = None
    key_file: Path | None = None  # a private key (OpenSSH format)
    known_hosts: Path | None = None  # default: ~/.ssh/known_hosts
    timeout_s: float = Field(default=30, gt=0)


class FtpSettings(BaseModel):
    """``ftp://`` and ``ftps://`` (explicit TLS) destinations."""

    username: str | None = None  # default: the URL's, else anonymous
    password: SecretStr | None = None
    timeout_s: float = Field(default=30, gt=0)


class OAuthUploadSettings(BaseModel):
    """A cloud drive reached through its HTTP upload API with an OAuth access token."""

    access_token: SecretStr | None = None
    api_url: str | None = None  # default: the provider's public API (a double in tests)
    content_url: str | None = None  # Dropbox's content host; unused by Google Drive


class BackupSettings(BaseModel):
    """Backups (seed 003): where they go, what they hold, who hears of a failure."""

    dir: Path | None = None  # default: <workspace>/.autorag/backups (also safety backups)
    destination: str | None = None  # default for `backup run`: the local folder above
    include_vectors: bool = True  # false: vectors are rebuilt from the catalog on restore
    retention_days: int = Field(default=30, ge=1)
    stale_after_hours: float = Field(default=2, gt=0)  # a `running` run older is failed
    notify_email: list[str] = Field(default_factory=list)  # failure e-mails go here
    email_max_mb: float = Field(default=20, gt=0)  # the largest backup e-mailed (email:)
    pg_bin_dir: Path | None = None  # where pg_dump and psql are (default: PATH)
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    s3: S3Settings = Field(default_factory=S3Settings)
    sftp: SftpSettings = Field(default_factory=SftpSettings)
    ftp: FtpSettings = Field(default_factory=FtpSettings)
    dropbox: OAuthUploadSettings = Field(default_factory=OAuthUploadSettings)
    gdrive: OAuthUploadSettings = Field(default_factory=OAuthUploadSettings)


class WebhookSettings(BaseModel):
    """Webhooks (seed 003): signed POSTs of events to URLs an admin registers."""

    # Private, loopback and link-local targets are refused unless this is set: a webhook
    # must not become a way into the LAN (SSRF).
    allow_private: bool = False
    timeout_s: float = Field(default=10, gt=0)  # one attempt
    retry_delays_s: list[float] = Field(default_factory=lambda: [1.0, 2.0, 4.0])
    disable_after_failures: int = Field(default=10, ge=1)  # consecutive, then disabled
    keep_deliveries: int = Field(default=200, ge=10)  # per webhook, in the delivery log


class McpToolsSettings(BaseModel):
    """MCP tool servers installed in workspaces (issue 22): their tools are agent skills."""

    # An HTTP server on a private, loopback or link-local address is refused unless this
    # is set (SSRF: the rule of webhooks.allow_private). Stdio servers are commands an
    # admin installs: not concerned.
    allow_private: bool = False
    # Installing and testing: connect, initialize and list the tools within this.
    connect_timeout_s: float = Field(default=20, gt=0)


class EventSettings(BaseModel):
    """The event log (issue 21): what is kept of events already delivered."""

    # Delivered events older than this are deleted (hourly, by whichever process
    # dispatches); undelivered ones are kept whatever their age.
    keep_days: int = Field(default=90, ge=1)
    # Off: `autorag serve` delivers no events and leaves them to `autorag worker` processes
    # (as `server.workers = 0` leaves jobs), so that deliveries cost the server nothing.
    deliver_in_server: bool = True
    # How the server delivers: from a child process of its own once anyone subscribes
    # (a webhook enabled, a browser subscribed to push), so that deliveries do not take
    # the interpreter lock its searches need; off: from threads of the server process.
    delivery_process: bool = True


class PushSettings(BaseModel):
    """Web Push (VAPID): keys from AUTORAG_VAPID_* or made on first start, stored sealed."""

    enabled: bool = True
    vapid_public_key: str | None = None  # base64url, uncompressed P-256 point
    vapid_private_key: SecretStr | None = None  # base64url raw 32 bytes, or PEM
    vapid_subject: str = "mailto:admin@localhost"  # who the push service may contact
    ttl_s: int = Field(default=86_400, ge=0)  # how long a push service keeps a message
    timeout_s: float = Field(default=10, gt=0)


class YoutubeSettings(BaseModel):
    """YouTube videos added as documents: their transcripts (youtube-transcript-api)."""

    # Transcript languages in order of preference (language codes: en, es, pt-BR...).
    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1)
    timeout_s: float = Field(default=15, gt=0)  # one request to YouTube


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="AUTORAG_", env_nested_delimiter="__", extra="ignore"
    )

    workspace: str = "default"
    search_paths: list[str] = Field(default_factory=list)
    database_url: str | None = None  # default: SQLite inside <workspace>/.autorag/
    vector_store: str = "lancedb"  # lancedb | pgvector | qdrant
    vectors: VectorSettings = Field(default_factory=VectorSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    dlp: DlpSettings = Field(default_factory=DlpSettings)
    p2p: P2PSettings = Field(default_factory=P2PSettings)
    ocr: OcrSettings = Field(default_factory=OcrSettings)
    backup: BackupSettings = Field(default_factory=BackupSettings)
    events: EventSettings = Field(default_factory=EventSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    mcp_tools: McpToolsSettings = Field(default_factory=McpToolsSettings)
    push: PushSettings = Field(default_factory=PushSettings)
    youtube: YoutubeSettings = Field(default_factory=YoutubeSettings)


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
    _apply_seed_environment(loaded)
    return Settings.model_validate(loaded.model_dump())


# Names the seed gives its environment variables, honoured beside the AUTORAG_* ones.
_SEED_ENVIRONMENT = {
    "CHAT_MAX_CONCURRENT_PER_USER": ("agent", "max_concurrent_per_user"),
    "DLP_ENABLED": ("dlp", "enabled"),
    "DLP_BYPASS_ROLES": ("dlp", "bypass_roles"),
    "AUTORAG_VAPID_PUBLIC_KEY": ("push", "vapid_public_key"),
    "AUTORAG_VAPID_PRIVATE_KEY": ("push", "vapid_private_key"),
    "AUTORAG_VAPID_SUBJECT": ("push", "vapid_subject"),
}


def _apply_seed_environment(settings: Settings) -> None:
    for variable, (group, key) in _SEED_ENVIRONMENT.items():
        value = os.environ.get(variable)
        own = f"AUTORAG_{group}__{key}".upper()
        if value is not None and own not in os.environ:
            section = getattr(settings, group)
            # Lists come as JSON ('["member"]'); other values are validated as their field
            # is ("false" is False, not bool("false")).
            try:
                parsed = json.loads(value) if isinstance(getattr(section, key), list) else value
                updated = section.model_validate({**section.model_dump(), key: parsed})
            except ValueError as exc:  # pydantic's ValidationError is one too
                raise InvalidInput(f"environment variable {variable}={value!r}: {exc}") from None
            setattr(settings, group, updated)
