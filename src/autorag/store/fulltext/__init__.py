"""Full-text indexes, picked by the catalog's database dialect."""

from __future__ import annotations

from sqlalchemy import Engine

from autorag.config import SearchSettings
from autorag.errors import InvalidInput
from autorag.store.fulltext.base import FullTextIndex
from autorag.store.fulltext.sqlite import SqliteFullTextIndex


def open_fulltext(engine: Engine, settings: SearchSettings) -> FullTextIndex:
    if engine.dialect.name == "sqlite":
        return SqliteFullTextIndex(engine, title_weight=settings.fts_title_weight)
    raise InvalidInput(f"no full-text index for database dialect {engine.dialect.name!r} yet")
