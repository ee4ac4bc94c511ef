"""Source policy over HTTP: a workspace's glob rules and how a source resolves.

Reading needs ``documents:read``; changing a rule needs ``policy:write`` (managers and
admins), since it decides what trusted peers may get.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import WorkspaceDep
from autorag.context import open_policy
from autorag.sources.globs import MAX_GLOB_CHARS
from autorag.sources.policy import MAX_SOURCE_CHARS, Explanation, Level, Rule

router = APIRouter(prefix="/api/workspaces", tags=["policy"])
ReadDep = Annotated[Principal, Depends(require("documents:read"))]
# policy:write needs a password login or an API key with the admin:protection scope.
WriteDep = Annotated[Principal, Depends(require("policy:write", protection=True))]
GlobField = Field(
    max_length=MAX_GLOB_CHARS,
    description="An absolute id pattern: /docs/**, /kakao/*/chunks/**, C:/secrets/**",
)


class RuleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    glob: str = GlobField
    level: Level


class ExplainIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        max_length=MAX_SOURCE_CHARS,
        description="A real path, a virtual id (/docs/a.md) or a datasource id",
    )


class RuleOut(BaseModel):
    glob: str
    level: Level
    createdAt: datetime
    updatedAt: datetime


class RulesOut(BaseModel):
    rules: list[RuleOut]


class MatchOut(BaseModel):
    glob: str
    level: Level


class ExplanationOut(BaseModel):
    source: str
    canonical: str | None  # null: not a valid source id, so private (fail closed)
    invalidReason: str | None
    matches: list[MatchOut]  # the winner first
    winner: MatchOut | None
    level: Level
    decidedBy: str  # rule | default | invalid


def _rule(rule: Rule) -> RuleOut:
    return RuleOut(
        glob=rule.glob, level=rule.level, createdAt=rule.created_at, updatedAt=rule.updated_at
    )


def _explanation(explanation: Explanation) -> ExplanationOut:
    matches = [MatchOut(glob=r.glob, level=r.level) for r in explanation.matches]
    return ExplanationOut(
        source=explanation.source,
        canonical=explanation.canonical,
        invalidReason=explanation.invalid_reason,
        matches=matches,
        winner=matches[0] if matches else None,
        level=explanation.level,
        decidedBy=explanation.decided_by,
    )


@router.get("/{workspace}/policy", response_model=RulesOut)
def list_rules(_: ReadDep, context: WorkspaceDep) -> RulesOut:
    """The workspace's policy rules, by glob."""
    return RulesOut(rules=[_rule(rule) for rule in open_policy(context).list_rules()])


@router.put("/{workspace}/policy", response_model=RuleOut)
def put_rule(_: WriteDep, body: RuleIn, context: WorkspaceDep) -> RuleOut:
    """Create or change the rule for a glob (stored in canonical form; at most 1000)."""
    return _rule(open_policy(context).set_rule(body.glob, body.level))


@router.delete("/{workspace}/policy", status_code=204, response_class=Response)
def delete_rule(
    _: WriteDep,
    context: WorkspaceDep,
    glob: Annotated[str, Query(max_length=MAX_GLOB_CHARS, description="The rule's glob")],
) -> Response:
    """Remove the rule for a glob (404 when there is none)."""
    open_policy(context).remove_rule(glob)
    return Response(status_code=204)


@router.post("/{workspace}/policy/explain", response_model=ExplanationOut)
def explain(_: ReadDep, body: ExplainIn, context: WorkspaceDep) -> ExplanationOut:
    """How a source resolves: its canonical id (or why it is invalid), every matching
    rule, the winner and the level."""
    return _explanation(open_policy(context).explain(body.source))
