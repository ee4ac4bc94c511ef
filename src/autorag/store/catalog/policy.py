"""The catalog-backed :class:`~autorag.sources.policy.PolicyBackend`.

Reads and writes of ``policy_rules`` and ``policy_seen_sources`` only; what the rules mean
is :mod:`autorag.sources.policy`'s business.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, delete, func, select

from autorag.sources.policy import (
    Level,
    Rule,
    SeenSource,
    rule_limit_error,
)
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import PolicyRuleRow, PolicySeenSourceRow, utcnow
from autorag.store.catalog.policy_rules import rule_columns, rule_of, rules_of
from autorag.store.catalog.repository import Catalog
from autorag.times import as_utc


class CatalogPolicyBackend:
    """One workspace's rules and seen sources in the catalog database."""

    def __init__(self, catalog: Catalog, workspace_id: int) -> None:
        self._engine = catalog.engine
        self._workspace_id = workspace_id

    def list_rules(self) -> list[Rule]:
        with self._engine.connect() as conn:
            return rules_of(conn, self._workspace_id)

    def put_rule(self, glob: str, level: Level, *, limit: int) -> Rule:
        now = utcnow()
        with self._engine.begin() as conn:
            if conn.execute(self._rule_query(glob)).first() is None:
                count = conn.execute(
                    select(func.count())
                    .select_from(PolicyRuleRow)
                    .where(PolicyRuleRow.workspace_id == self._workspace_id)
                ).scalar_one()
                if count >= limit:
                    raise rule_limit_error(limit)
            statement = dialect_insert(self._engine, PolicyRuleRow).values(
                workspace_id=self._workspace_id,
                glob=glob,
                level=level,
                created_at=now,
                updated_at=now,
            )
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["workspace_id", "glob"],
                    set_={"level": level, "updated_at": now},
                )
            )
            return rule_of(conn.execute(self._rule_query(glob)).one())

    def delete_rule(self, glob: str) -> bool:
        statement = delete(PolicyRuleRow).where(
            PolicyRuleRow.workspace_id == self._workspace_id, PolicyRuleRow.glob == glob
        )
        with self._engine.begin() as conn:
            return conn.execute(statement).rowcount > 0

    def record_seen(self, source_id: str) -> None:
        now = utcnow()
        count = PolicySeenSourceRow.__table__.c["count"]
        statement = dialect_insert(self._engine, PolicySeenSourceRow).values(
            workspace_id=self._workspace_id,
            source_id=source_id,
            first_seen_at=now,
            last_seen_at=now,
            count=1,
        )
        with self._engine.begin() as conn:
            conn.execute(
                statement.on_conflict_do_update(
                    index_elements=["workspace_id", "source_id"],
                    set_={"last_seen_at": now, "count": count + 1},
                )
            )

    def get_seen(self, source_id: str) -> SeenSource | None:
        seen = PolicySeenSourceRow
        query = select(seen.first_seen_at, seen.last_seen_at, seen.count).where(
            seen.workspace_id == self._workspace_id, seen.source_id == source_id
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        first, last, count = row
        return SeenSource(source_id, as_utc(first), as_utc(last), count)

    def _rule_query(self, glob: str) -> Select[str, str, datetime, datetime]:
        return rule_columns().where(
            PolicyRuleRow.workspace_id == self._workspace_id, PolicyRuleRow.glob == glob
        )
