"""A persistent embedding cache, and a provider wrapper that consults it.

One SQLite file (WAL mode, so several processes can read while one writes) maps
``(model_id, content_hash)`` to a float32 vector. It only ever saves work: if the file
is missing it is recreated, if it is corrupt it is moved aside and recreated, and if it
cannot be used at all the cache lives in memory for this process. Callers never see
a cache error.

Embeddings say much about the text they were made from: the file and its WAL and
shared-memory files are 0600, made so on creation and repaired on every open, in a
folder created 0700 (the default folder is kept so).
"""

from __future__ import annotations

import hashlib
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import platformdirs

from autorag.embeddings.base import EmbeddingProvider, Vectors
from autorag.errors import InvalidInput
from autorag.private_files import make_private_dir, tighten_all, touch_private, warn_repaired

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    last_used REAL NOT NULL,
    PRIMARY KEY (model_id, content_hash)
);
CREATE INDEX IF NOT EXISTS embeddings_by_last_used ON embeddings (last_used);
"""

# How long a writer waits for another process's write to finish.
_BUSY_TIMEOUT_S = 10.0
_LOCKED_RETRY_S = 0.05
# SQLite's default limit on bound parameters is far above this; smaller keeps statements cheap.
_LOOKUP_CHUNK = 500
# A hit rewrites last_used only if it is older than this: reads stay reads in the common
# case, and LRU does not need finer resolution than an hour.
_TOUCH_INTERVAL_S = 3600.0
# Eviction frees down to this fraction of max_bytes, so it runs once per fifth of the
# budget written rather than on every put.
_LOW_WATER = 0.8
# Stored size of a row relative to its raw bytes (two indexes, partly filled pages).
_ROW_OVERHEAD = 2
# The WAL is truncated back to this after checkpoints instead of keeping its peak size.
_WAL_LIMIT_BYTES = 16 * 1024 * 1024


def default_cache_path() -> Path:
    """The per-user cache file shared by every workspace on this machine."""
    return Path(platformdirs.user_cache_dir("autorag")) / "embeddings.sqlite"


def content_hash(text: str) -> str:
    """sha256 hex of the UTF-8 text, the key a text's embedding is cached under."""
    # surrogatepass: a lone surrogate from a badly decoded file must not crash hashing.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    size_bytes: int
    max_bytes: int
    entries_by_model: dict[str, int] = field(default_factory=dict)


class EmbeddingCache:
    """Vectors by ``(model_id, content_hash)`` in one SQLite file, least recently used
    rows evicted when the data outgrows ``max_bytes``.

    One connection per instance, serialised by a lock: instances may be shared by
    threads, and separate instances or processes may share the file.
    """

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int = 1024**3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_bytes <= 0:
            raise InvalidInput(f"max_bytes must be positive, got {max_bytes}")
        self.path = path
        self.max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._conn = self._open()

    def get_many(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vectors]:
        """The cached vectors among ``hashes``; absent ones are simply missing."""
        if not hashes:
            return {}
        return self._run(lambda conn: self._select(conn, model_id, list(dict.fromkeys(hashes))), {})

    def put_many(self, model_id: str, items: Mapping[str, Vectors]) -> None:
        """Store vectors by content hash, replacing any already there."""
        if not items:
            return
        now = self._clock()
        rows = [
            (model_id, key, np.ascontiguousarray(vector, dtype=np.float32).tobytes(), now)
            for key, vector in items.items()
        ]
        self._run(lambda conn: self._insert(conn, rows), None)

    def clear(self) -> None:
        """Drop every entry and give the space back to the file system."""

        def wipe(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM embeddings")
            conn.execute("VACUUM")

        self._run(wipe, None)

    def stats(self) -> CacheStats:
        def count(conn: sqlite3.Connection) -> CacheStats:
            by_model = dict(
                conn.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id")
            )
            return CacheStats(
                self.path, sum(by_model.values()), _size_bytes(conn), self.max_bytes, by_model
            )

        return self._run(count, CacheStats(self.path, 0, 0, self.max_bytes))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- storage ---------------------------------------------------------------------

    def _select(
        self, conn: sqlite3.Connection, model_id: str, hashes: list[str]
    ) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        stale: list[str] = []
        now = self._clock()
        for start in range(0, len(hashes), _LOOKUP_CHUNK):
            chunk = hashes[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT content_hash, vector, last_used FROM embeddings "
                f"WHERE model_id = ? AND content_hash IN ({marks})"
            )
            for key, blob, last_used in conn.execute(query, (model_id, *chunk)):
                found[key] = np.frombuffer(blob, dtype=np.float32).copy()
                if now - last_used > _TOUCH_INTERVAL_S:
                    stale.append(key)
        if stale:
            self._touch(conn, model_id, stale, now)
        return found

    def _touch(self, conn: sqlite3.Connection, model_id: str, keys: list[str], now: float) -> None:
        """Mark rows as recently used; best effort, since the vectors are already read."""
        try:
            with _transaction(conn):
                conn.executemany(
                    "UPDATE embeddings SET last_used = ? WHERE model_id = ? AND content_hash = ?",
                    [(now, model_id, key) for key in keys],
                )
        except sqlite3.OperationalError as exc:
            logger.debug("embedding cache %s: last_used not updated: %s", self.path, exc)

    def _insert(self, conn: sqlite3.Connection, rows: list[tuple[str, str, bytes, float]]) -> None:
        incoming = _ROW_OVERHEAD * sum(len(m) + len(k) + len(b) for m, k, b, _ in rows)
        with _transaction(conn):
            self._make_room(conn, incoming)
            conn.executemany(
                "INSERT INTO embeddings (model_id, content_hash, vector, last_used) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (model_id, content_hash) "
                "DO UPDATE SET vector = excluded.vector, last_used = excluded.last_used",
                rows,
            )

    def _make_room(self, conn: sqlite3.Connection, incoming: int) -> None:
        """Evict least recently used rows if ``incoming`` bytes would pass the budget.

        Reading page counts only reads the file header, so this runs on every put; the
        row count is only taken when eviction is due.
        """
        used = _used_bytes(conn)
        if used + incoming <= self.max_bytes:
            return
        rows: int = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        target = max(0.0, self.max_bytes * _LOW_WATER - incoming)
        evict = math.ceil(rows * (1 - target / used)) if used else 0
        if evict:
            conn.execute(
                "DELETE FROM embeddings WHERE rowid IN "
                "(SELECT rowid FROM embeddings ORDER BY last_used LIMIT ?)",
                (evict,),
            )
            logger.debug("evicted %d embeddings from %s", evict, self.path)

    # -- resilience ------------------------------------------------------------------

    def _run(self, operation: Callable[[sqlite3.Connection], _T], fallback: _T) -> _T:
        """Run ``operation``; on any database trouble, log it and return ``fallback``."""
        with self._lock:
            try:
                return operation(self._conn)
            except sqlite3.OperationalError as exc:
                # Locked past the timeout, disk full, I/O error: skip this call only.
                logger.warning("embedding cache %s skipped: %s", self.path, exc)
            except sqlite3.DatabaseError as exc:
                logger.warning("embedding cache %s is damaged: %s", self.path, exc)
                self._conn.close()
                self._conn = self._reopen_fresh()
            return fallback

    def _open(self) -> sqlite3.Connection:
        try:
            return _connect(self.path)
        except sqlite3.OperationalError as exc:
            return _in_memory(self.path, exc)
        except sqlite3.DatabaseError as exc:
            logger.warning("embedding cache %s is not a database: %s", self.path, exc)
            return self._reopen_fresh()
        except OSError as exc:
            return _in_memory(self.path, exc)

    def _reopen_fresh(self) -> sqlite3.Connection:
        """Move the damaged file aside (kept for inspection) and start an empty one."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.time_ns()}")
        try:
            self.path.rename(aside)
            for suffix in ("-wal", "-shm"):  # belong to the damaged file; meaningless now
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
            logger.warning("moved the damaged embedding cache to %s", aside)
            return _connect(self.path)
        except (OSError, sqlite3.DatabaseError) as exc:
            return _in_memory(self.path, exc)


def _connect(path: Path) -> sqlite3.Connection:
    make_private_dir(path.parent, tighten_existing=path == default_cache_path())
    repaired = [m for m in (touch_private(path),) if m]  # 0600 before SQLite makes it 0644
    conn = sqlite3.connect(
        path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        _prepare_when_free(conn)
    except BaseException:
        conn.close()
        raise
    # SQLite gives the WAL and shared-memory files the database file's mode.
    sidecars = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    warn_repaired(repaired + tighten_all(sidecars), "the embedding cache")
    return conn


def _prepare_when_free(conn: sqlite3.Connection) -> None:
    """``_prepare``, waiting out another process that holds the file.

    Switching a new file to WAL fails at once with "database is locked" while another
    process does the same (SQLite's busy timeout does not cover it): two processes
    creating the cache together would otherwise leave one of them caching in memory.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            _prepare(conn)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(_LOCKED_RETRY_S)


def _in_memory(path: Path, reason: BaseException) -> sqlite3.Connection:
    logger.warning("embedding cache %s unusable (%s); caching in memory only", path, reason)
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    _prepare(conn)
    return conn


def _prepare(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    # Safe with WAL (no corruption on power loss, at worst the last commits are lost),
    # which is all a cache needs.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT_BYTES}")
    conn.executescript(_SCHEMA)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    # IMMEDIATE takes the write lock up front: upgrading a read transaction later can
    # fail at once with SQLITE_BUSY instead of waiting for the other writer.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _page_pragma(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute(f"PRAGMA {name}").fetchone()[0])


def _size_bytes(conn: sqlite3.Connection) -> int:
    return _page_pragma(conn, "page_count") * _page_pragma(conn, "page_size")


def _used_bytes(conn: sqlite3.Connection) -> int:
    """The file's size minus its free pages, which new rows reuse before it grows."""
    used_pages = _page_pragma(conn, "page_count") - _page_pragma(conn, "freelist_count")
    return used_pages * _page_pragma(conn, "page_size")


class CachedEmbedder:
    """An ``EmbeddingProvider`` that embeds each distinct text once per model.

    ``embed`` looks texts up by content hash, sends only the misses (deduplicated) to
    the provider in one call, stores them, and returns rows in input order. Queries are
    not cached: they are short and rarely repeat. ``read_cache=False`` ignores stored
    vectors but still stores new ones (cold benchmark runs).

    ``hits`` and ``misses`` count distinct texts per call: a text repeated within one
    call is embedded once and counted once.
    """

    def __init__(
        self,
        provider: EmbeddingProvider,
        cache: EmbeddingCache | None,
        *,
        read_cache: bool = True,
    ) -> None:
        self.provider = provider.provider
        self.model = provider.model
        self.hits = 0
        self.misses = 0
        self._inner = provider
        self._cache = cache
        self._read_cache = read_cache
        self._count_lock = threading.Lock()

    @property
    def inner(self) -> EmbeddingProvider:
        """The provider behind the cache (benchmarks time it directly)."""
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return self._inner.embed(texts)
        hashes = [content_hash(text) for text in texts]
        distinct = dict(zip(hashes, texts, strict=True))
        found = self._lookup(list(distinct))
        missing = {key: text for key, text in distinct.items() if key not in found}
        computed = self._compute(missing)
        with self._count_lock:
            self.hits += len(found)
            self.misses += len(missing)
        vectors = found | computed
        return np.stack([vectors[key] for key in hashes]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> Vectors:
        return self._inner.embed_query(text)

    def _lookup(self, hashes: list[str]) -> dict[str, Vectors]:
        if self._cache is None or not self._read_cache:
            return {}
        return self._cache.get_many(self.model_id, hashes)

    def _compute(self, missing: dict[str, str]) -> dict[str, Vectors]:
        if not missing:
            return {}
        computed = dict(zip(missing, self._inner.embed(list(missing.values())), strict=True))
        if self._cache is not None:
            self._cache.put_many(self.model_id, computed)
        return computed
