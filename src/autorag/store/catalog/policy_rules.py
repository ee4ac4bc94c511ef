"""Reading a workspace's source-policy rules on a connection: for the policy backend and
for what the catalog itself must not let leave (event payloads name only shared sources).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, Row, Select, select

from autorag.sources.policy import DEFAULT_LEVEL, Level, Rule, matching_rules, parse_level
from autorag.store.catalog.models import PolicyRuleRow
from autorag.times import as_utc

RuleRow = Row[str, str, datetime, datetime]


def rule_columns() -> Select[str, str, datetime, datetime]:
    return select(
        PolicyRuleRow.glob, PolicyRuleRow.level, PolicyRuleRow.created_at, PolicyRuleRow.updated_at
    )


def rule_of(row: RuleRow) -> Rule:
    glob, level, created_at, updated_at = row
    return Rule(glob, parse_level(level), as_utc(created_at), as_utc(updated_at))


def rules_of(conn: Connection, workspace_id: int) -> list[Rule]:
    query = rule_columns().where(PolicyRuleRow.workspace_id == workspace_id)
    return [rule_of(row) for row in conn.execute(query)]


def level_of(rules: list[Rule], source_id: str) -> Level:
    """The policy of a stored (canonical) source id under ``rules``."""
    matches = matching_rules(rules, source_id)
    return matches[0].level if matches else DEFAULT_LEVEL
