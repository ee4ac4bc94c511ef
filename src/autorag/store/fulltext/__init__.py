"""Full-text indexes, picked by the catalog's database dialect."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from autorag.config import SearchSettings
from autorag.errors import InvalidInput
from autorag.store.fulltext.base import FullTextIndex
from autorag.store.fulltext.postgres import PostgresFullTextIndex
from autorag.store.fulltext.sqlite import SqliteFullTextIndex


def _sqlite(engine: Engine, settings: SearchSettings) -> FullTextIndex:
    return SqliteFullTextIndex(engine, title_weight=settings.fts_title_weight)


def _postgres(engine: Engine, settings: SearchSettings) -> FullTextIndex:
    return PostgresFullTextIndex(
        engine, config=settings.fts_config, title_weight=settings.fts_title_weight
    )


_BY_DIALECT: dict[str, Callable[[Engine, SearchSettings], FullTextIndex]] = {
    "sqlite": _sqlite,
    "postgresql": _postgres,
}


def open_fulltext(engine: Engine, settings: SearchSettings) -> FullTextIndex:
    opener = _BY_DIALECT.get(engine.dialect.name)
    if opener is None:
        raise InvalidInput(f"no full-text index for database dialect {engine.dialect.name!r}")
    return opener(engine, settings)
