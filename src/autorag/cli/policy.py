"""``autorag policy``: which sources may leave this machine (private, ask, share)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from autorag.cli._common import console, local_time, open_app, print_json
from autorag.context import open_policy
from autorag.sources.policy import Explanation, PolicyStore, Rule

app = typer.Typer(
    help="Source policy: glob rules deciding which sources peers may get.\n\n"
    "Levels: private (default; never leaves this machine), ask (each peer query needs "
    "your approval), share (trusted peers may get it). When several rules match, the "
    "most specific wins: an exact id, then the longest literal prefix; ties go to the "
    "most restrictive level.",
    no_args_is_help=True,
)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
GlobArg = Annotated[
    str,
    typer.Argument(
        help="An absolute id pattern: /docs/**, /kakao/*/chunks/**, /etc/secrets/**, "
        "C:/secrets/**. '*' stays within a segment, '**' spans segments."
    ),
]


@app.command("list")
def list_rules(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the workspace's policy rules."""
    rules = _store(ctx).list_rules()
    if as_json:
        print_json([rule_json(rule) for rule in rules])
        return
    if not rules:
        console.print("No rules: every source is private.")
        return
    table = Table("glob", "level", "updated")
    for rule in rules:
        # Text, not a str: a glob's brackets are file name characters, not markup.
        table.add_row(Text(rule.glob), rule.level, local_time(rule.updated_at))
    console.print(table)


@app.command("set")
def set_rule(
    ctx: typer.Context,
    glob: GlobArg,
    level: Annotated[str, typer.Argument(help="private, ask or share.")],
) -> None:
    """Create or change the rule for GLOB."""
    rule = _store(ctx).set_rule(glob, level)
    console.print(f"{rule.glob} → {rule.level}", highlight=False, markup=False)


@app.command("rm")
def remove_rule(ctx: typer.Context, glob: GlobArg) -> None:
    """Remove the rule for GLOB."""
    _store(ctx).remove_rule(glob)
    console.print(f"Removed the rule for {glob}.", highlight=False, markup=False)


@app.command("explain")
def explain(
    ctx: typer.Context,
    source: Annotated[
        str,
        typer.Argument(
            help="An absolute real path, a virtual id (/docs/a.md) or a datasource id "
            "(/kakao/<instance>/chunks/chunk-1)."
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Show how SOURCE resolves: its canonical id, the matching rules, the winner."""
    explanation = _store(ctx).explain(source)
    if as_json:
        print_json(explanation_json(explanation))
        return
    for label, value in _explanation_lines(explanation):
        console.print(f"{label:<10} {value}", highlight=False, markup=False)


def rule_json(rule: Rule) -> dict[str, Any]:
    return {
        "glob": rule.glob,
        "level": rule.level,
        "createdAt": rule.created_at.isoformat(),
        "updatedAt": rule.updated_at.isoformat(),
    }


def explanation_json(explanation: Explanation) -> dict[str, Any]:
    winner = explanation.winner
    return {
        "source": explanation.source,
        "canonical": explanation.canonical,
        "invalidReason": explanation.invalid_reason,
        "matches": [{"glob": r.glob, "level": r.level} for r in explanation.matches],
        "winner": None if winner is None else {"glob": winner.glob, "level": winner.level},
        "level": explanation.level,
        "decidedBy": explanation.decided_by,
    }


def _explanation_lines(explanation: Explanation) -> list[tuple[str, str]]:
    lines = [("source", explanation.source)]
    if explanation.canonical is None:
        lines.append(("invalid", explanation.invalid_reason or "not a valid source id"))
        return [*lines, ("level", "private (fail closed)")]
    lines.append(("canonical", explanation.canonical))
    for position, rule in enumerate(explanation.matches):
        note = "  (wins)" if position == 0 else ""
        lines.append(("rules" if position == 0 else "", f"{rule.glob} → {rule.level}{note}"))
    if explanation.decided_by == "default":
        return [*lines, ("level", "private (default: no rule matches)")]
    return [*lines, ("level", explanation.level)]


def _store(ctx: typer.Context) -> PolicyStore:
    return open_policy(open_app(ctx))
