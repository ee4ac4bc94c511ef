"""The application context: settings plus the adapters built from them, opened once."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorag.config import Settings, load_settings
from autorag.embeddings.base import KNOWN_MODEL_DIMS, EmbeddingProvider
from autorag.errors import AutoragError
from autorag.sources import SourceRoot, plan_source_roots
from autorag.store.catalog.db import bind_data_dir, create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.repository import Catalog, WorkspaceInfo
from autorag.workspace import Workspace

log = logging.getLogger(__name__)

# The indexer, the searcher and the stores are imported where they are first built: a
# CLI call that only reads the catalog (`autorag status`, `docs`, `users`) never pays
# for the parsers, DLP or LanceDB (seconds on a busy machine).
if TYPE_CHECKING:
    from autorag.ingest.pipeline import Indexer
    from autorag.ingest.readiness import CountsVectors, Readiness
    from autorag.llm.router import ModelRouter, Target
    from autorag.rerank.stage import RerankStage
    from autorag.retrieval.hybrid import HybridSearcher
    from autorag.sources.policy import PolicyStore
    from autorag.store.fulltext.base import FullTextIndex
    from autorag.store.vectors import VectorStore


@dataclass
class AppContext:
    workspace: Workspace
    settings: Settings
    catalog: Catalog
    info: WorkspaceInfo
    read_embedding_cache: bool = True
    _closed: bool = field(default=False, repr=False)
    # Contexts of other workspaces, kept so a server opens each vector table once.
    _scoped: dict[WorkspaceInfo, AppContext] = field(default_factory=dict, repr=False)
    _scoped_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @cached_property
    def roots(self) -> list[SourceRoot]:
        return plan_source_roots(self.settings.search_paths)

    @cached_property
    def embedder(self) -> EmbeddingProvider:
        from autorag.embeddings.cache import CachedEmbedder, EmbeddingCache, default_cache_path
        from autorag.embeddings.registry import get_embedding_provider

        opts = self.settings.embedding
        options: dict[str, Any] = {"batch_size": opts.batch_size}
        if opts.base_url:
            options["base_url"] = opts.base_url
        if opts.api_key is not None:
            options["api_key"] = opts.api_key.get_secret_value()
        provider = get_embedding_provider(opts.provider, opts.model, **options)
        if not opts.cache:
            return provider
        cache_dir = opts.cache_dir
        path = cache_dir / "embeddings.sqlite" if cache_dir else default_cache_path()
        cache = EmbeddingCache(path, max_bytes=opts.cache_max_mb * 1024**2)
        return CachedEmbedder(provider, cache, read_cache=self.read_embedding_cache)

    @cached_property
    def vectors(self) -> VectorStore:
        return self.open_vectors()

    def open_vectors(self, *, recreate: bool = False) -> VectorStore:
        store = self.open_vector_table(self.info.vector_table, recreate=recreate)
        if recreate:
            self.__dict__["vectors"] = store  # later users see the new table
        return store

    def open_vector_table(self, table: str, *, recreate: bool = False) -> VectorStore:
        """A table of the configured vector store (the workspace's, or a shadow of it)."""
        from autorag.store.vectors import open_vector_store

        model = self.settings.embedding.model
        dim = KNOWN_MODEL_DIMS.get(model) or self.embedder.dim
        return open_vector_store(
            self.settings.vector_store,
            self.workspace.vectors_dir,
            table,
            dim,
            recreate=recreate,
            engine=self.catalog.engine,
            settings=self.settings.vectors,
        )

    @cached_property
    def fulltext(self) -> FullTextIndex:
        from autorag.store.fulltext import open_fulltext

        return open_fulltext(self.catalog.engine, self.settings.search)

    @cached_property
    def searcher(self) -> HybridSearcher:
        from autorag.embeddings.base import model_languages
        from autorag.retrieval.hybrid import HybridSearcher

        embedding = self.settings.embedding
        return HybridSearcher(
            self.catalog,
            self.info,
            self.fulltext,
            vectors=lambda: self.vectors,
            embedder=lambda: self.embedder,
            settings=self.settings.search,
            roots=self.roots,
            reranker=self._rerank_stage(),
            vector_languages=model_languages(embedding.model, embedding.languages),
        )

    def _rerank_stage(self) -> RerankStage | None:
        """``[search.rerank]`` built for this workspace: its own switch, its chat model
        (the llm reranker's, resolved per search) and its source policy (what a hosted
        reranker may be sent)."""
        from autorag.rerank.llm import workspace_chat_model
        from autorag.rerank.registry import build_stage
        from autorag.rerank.stage import policy_shareable
        from autorag.workspace_settings import read_settings

        settings = self.settings.search.rerank
        routers: list[ModelRouter] = []  # built on the first llm rerank, then kept

        def chat_model() -> Target:
            if not routers:
                routers.append(build_model_router(self))
            return workspace_chat_model(routers[0], self.catalog, self.info, settings.model)

        return build_stage(
            settings,
            chat_model=chat_model,
            workspace_on=lambda: read_settings(self.catalog, self.info).rerank,
            shareable=policy_shareable(
                lambda: open_policy(self),
                lambda: read_settings(self.catalog, self.info).agent.local_llm_only,
            ),
        )

    @cached_property
    def indexer(self) -> Indexer:
        from autorag.ingest.pipeline import Indexer

        return Indexer(
            self.catalog,
            self.info,
            vectors=lambda: self.vectors,
            embedder=lambda: self.embedder,
            settings=self.settings.ingest,
        )

    def readiness(self) -> Readiness:
        """Seed 000's readiness of this workspace's index, with the reason."""
        from autorag.ingest.readiness import check_readiness, recorded_vectors

        vectors: CountsVectors | None = None
        if "vectors" not in self.__dict__:  # an open table counts itself
            vectors = recorded_vectors(self.settings, self.workspace.vectors_dir, self.info)
        why = ""
        try:
            vectors = vectors or self.vectors
        except AutoragError as exc:  # judged with the others' state: degraded or not
            why = exc.message
        return check_readiness(
            self.catalog.readiness_facts(self.info.id),
            search_paths=self.settings.search_paths,
            embedding_model=self._embedding_model_id(),
            vectors=vectors,
            vectors_error=why or "vector store could not be opened",
        )

    def _embedding_model_id(self) -> str:
        """The model documents should be embedded with, from the provider when it is
        built, else from the settings (building it would import NumPy for nothing)."""
        from autorag.ingest.readiness import configured_model

        if "embedder" in self.__dict__:
            return self.embedder.model_id
        return configured_model(self.settings)

    def warm_up(self) -> None:
        """Load what the first question needs: the embedding model, the vector table and
        the full-text index, through one search. Never raises: a store that cannot open
        is what readiness reports, and the question that needs it gets the error."""
        from autorag.retrieval.hybrid import SearchRequest

        try:
            self.searcher.search(SearchRequest("warm up", k=1))
        except Exception:  # a warm-up is best effort by design
            log.info(
                "warm-up search failed; the first question will load what it needs", exc_info=True
            )

    def for_workspace(self, info: WorkspaceInfo) -> AppContext:
        """The same catalog, settings and embedding model, scoped to another workspace.

        Cached per workspace identity (id, name, short id): a renamed workspace gets a
        fresh context, since its vector table name changes with it.
        """
        if info == self.info:
            return self
        with self._scoped_lock:
            if info not in self._scoped:
                self._scoped[info] = self._scope(info)
            return self._scoped[info]

    def _scope(self, info: WorkspaceInfo) -> AppContext:
        scoped = AppContext(
            self.workspace,
            self.settings.model_copy(update={"workspace": info.name}),
            self.catalog,
            info,
            self.read_embedding_cache,
        )
        if "embedder" in self.__dict__:
            scoped.__dict__["embedder"] = self.__dict__["embedder"]  # one model in memory
        return scoped

    # What ``reset`` drops: every cached part that holds the catalog's or the vector
    # folder's content (the embedding model and the search roots read neither).
    _CATALOG_PARTS = ("vectors", "fulltext", "searcher", "indexer")

    def reset(self) -> None:
        """Forget what was read from the catalog and the vector store, and close the
        catalog's connections: a restore replaced them under this context (the engine
        connects again on next use, to what is there now)."""
        for name in self._CATALOG_PARTS:
            self.__dict__.pop(name, None)
        with self._scoped_lock:
            self._scoped.clear()
        self.catalog.engine.dispose()

    def reopen(self) -> None:
        """``reset``, then this workspace as the catalog now knows it (a restored catalog
        may have given it another id)."""
        self.reset()
        self.info = self.catalog.ensure_workspace(self.settings.workspace)

    def close(self) -> None:
        if not self._closed:
            self.catalog.engine.dispose()
            self._closed = True


def open_context(workspace: Workspace, /, **overrides: Any) -> AppContext:
    settings = load_settings(workspace.config_file, **overrides)
    url = settings.database_url or sqlite_url(workspace.database_file)
    engine = create_catalog_engine(url)
    # The key that seals this catalog's secrets lives in this workspace's .autorag/, also
    # when the catalog is a PostgreSQL server (migration 0011 seals with it).
    bind_data_dir(engine, workspace.data_dir)
    migrate(engine)
    catalog = Catalog(engine)
    return AppContext(workspace, settings, catalog, catalog.ensure_workspace(settings.workspace))


def build_model_router(app: AppContext) -> ModelRouter:
    """The providers configured in ``llm.providers``, the built-in extractive one, and
    the model connections stored in the catalog (taken up as they change)."""
    from autorag.connections.service import Connections, StoredProviders
    from autorag.errors import InvalidInput
    from autorag.llm.base import LLMProvider
    from autorag.llm.extractive import ExtractiveProvider
    from autorag.llm.registry import build_provider
    from autorag.llm.router import EXTRACTIVE, ModelRouter

    # The embedding model loads on first use, not when the router is built.
    extractive = ExtractiveProvider(embed=lambda texts: app.embedder.embed(texts))
    providers: list[LLMProvider] = [extractive]
    for config in app.settings.llm.providers:
        if config.name == EXTRACTIVE:
            raise InvalidInput("the provider name 'extractive' is reserved for the built-in one")
        providers.append(build_provider(config))
    llm = app.settings.llm
    source = StoredProviders(Connections(app.catalog.engine, llm))
    return ModelRouter(providers, env_default=llm.default, fallback=llm.fallback, source=source)


def open_policy(app: AppContext) -> PolicyStore:
    """The policy of the context's workspace, canonicalizing through its search paths."""
    from autorag.sources.policy import PolicyStore
    from autorag.store.catalog.policy import CatalogPolicyBackend

    return PolicyStore(CatalogPolicyBackend(app.catalog, app.info.id), app.roots)


def resolve_search_path(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())
