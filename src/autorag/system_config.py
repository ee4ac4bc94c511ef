"""Installation-wide values an admin changes at run time, kept in the catalog."""

from __future__ import annotations

from sqlalchemy import Engine, delete, select

from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import SystemConfigRow, utcnow

GLOBAL_DEFAULT_MODEL = "llm.default_model"


def get_value(engine: Engine, key: str) -> str | None:
    with engine.connect() as conn:
        return conn.execute(
            select(SystemConfigRow.value).where(SystemConfigRow.key == key)
        ).scalar()


def set_value(engine: Engine, key: str, value: str | None) -> None:
    """Set ``key``; None removes it."""
    with engine.begin() as conn:
        if value is None:
            conn.execute(delete(SystemConfigRow).where(SystemConfigRow.key == key))
            return
        statement = dialect_insert(engine, SystemConfigRow).values(
            key=key, value=value, updated_at=utcnow()
        )
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=["key"],
                set_={
                    "value": statement.excluded.value,
                    "updated_at": statement.excluded.updated_at,
                },
            )
        )
