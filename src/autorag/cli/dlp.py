"""``autorag dlp``: scan text for secrets and personal data; manage the patterns."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from autorag.cli._common import (
    CliState,
    console,
    current_workspace,
    err_console,
    open_app,
    print_json,
)
from autorag.context import open_context
from autorag.dlp.scanner import ScanResult, scan_content
from autorag.dlp.service import DlpService
from autorag.dlp.store import PatternRecord
from autorag.errors import InvalidInput, NotFound

app = typer.Typer(help="Find and redact secrets and personal data (DLP).", no_args_is_help=True)
patterns_app = typer.Typer(help="List, add, test, enable and disable DLP patterns.")
app.add_typer(patterns_app, name="patterns", no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
NameArg = Annotated[str, typer.Argument(help="Pattern name (e.g. email, or a custom one).")]
MAX_INPUT_BYTES = 64 * 1024 * 1024


@app.command("scan")
def scan(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="A file to scan, or - for standard input.")],
    as_json: JsonFlag = False,
) -> None:
    """Print the redacted text on stdout, and a table of what was found on stderr.

    Uses the workspace's enabled patterns; outside any workspace, the built-ins.
    """
    text = _read(source)
    result = _scanner(ctx)(text)
    if as_json:
        print_json(_scan_json(result))
        return
    _report(result, text)
    sys.stdout.write(result.redacted_text)


@patterns_app.command("list")
def list_patterns(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Built-in and custom patterns, enabled or not."""
    records = _service(ctx).list_patterns()
    if as_json:
        print_json([_pattern_json(r) for r in records])
        return
    table = Table("name", "enabled", "description", "regex")
    for r in records:
        # A built-in's regex is long and fixed (see --json); a custom one is the admin's.
        regex = "(built-in)" if r.builtin else r.regex
        # Text, not markup: a regex like [a-z]+ would otherwise be read as a style.
        table.add_row(r.name, "yes" if r.enabled else "no", Text(r.description), Text(regex))
    console.print(table)


@patterns_app.command("add")
def add_pattern(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits and '_'.")],
    regex: Annotated[
        str, typer.Argument(help="RE2 syntax; a group named 'value' is redacted alone.")
    ],
    description: Annotated[str, typer.Option(help="What it finds.")] = "",
    disabled: Annotated[bool, typer.Option("--disabled", help="Add it switched off.")] = False,
) -> None:
    """Add a custom pattern (at most 50)."""
    record = _service(ctx).create_pattern(name, regex, description, enabled=not disabled)
    state = "disabled" if disabled else "enabled"
    console.print(f"Added pattern {record.name!r} ({state}).", highlight=False)


@patterns_app.command("test")
def test_pattern(
    ctx: typer.Context,
    sample: Annotated[str, typer.Argument(help="Sample text, or - for standard input.")],
    regex: Annotated[
        str | None, typer.Option("--regex", help="Try this regex instead of the enabled ones.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show what a regex (or every enabled pattern) finds in a sample."""
    text = sys.stdin.read() if sample == "-" else sample
    result = _service(ctx).test_patterns(text, regex)
    if as_json:
        print_json(_scan_json(result))
        return
    _report(result, text)
    console.print(result.redacted_text, highlight=False, markup=False)


@patterns_app.command("disable")
def disable(ctx: typer.Context, name: NameArg) -> None:
    """Switch a pattern off (a running server notices within 5 minutes)."""
    _set_enabled(ctx, name, False)


@patterns_app.command("enable")
def enable(ctx: typer.Context, name: NameArg) -> None:
    """Switch a pattern on (a running server notices within 5 minutes)."""
    _set_enabled(ctx, name, True)


@patterns_app.command("rm")
def remove(ctx: typer.Context, name: NameArg) -> None:
    """Delete a custom pattern (built-ins can only be disabled)."""
    service = _service(ctx)
    service.delete_pattern(service.find_pattern(name).id)
    console.print(f"Deleted pattern {name!r}.", highlight=False)


# -- helpers --------------------------------------------------------------------------
def _service(ctx: typer.Context) -> DlpService:
    context = open_app(ctx)
    return DlpService(context.catalog, context.settings.dlp)


def _scanner(ctx: typer.Context) -> Callable[[str], ScanResult]:
    """The workspace's scan, or the built-ins' when no workspace was named or found."""
    state = ctx.find_object(CliState) or CliState()
    try:
        workspace = current_workspace(ctx)
    except NotFound:
        if state.workspace is not None:
            raise
        err_console.print("(no workspace: built-in patterns only)", highlight=False)
        return scan_content
    context = open_context(workspace)
    return DlpService(context.catalog, context.settings.dlp).scan


def _set_enabled(ctx: typer.Context, name: str, enabled: bool) -> None:
    service = _service(ctx)
    service.update_pattern(service.find_pattern(name).id, enabled=enabled)
    state = "enabled" if enabled else "disabled"
    console.print(f"Pattern {name!r} {state}.", highlight=False)


def _read(source: str) -> str:
    if source == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        path = Path(source)
        if not path.is_file():
            raise NotFound(f"no file {source!r}")
        with path.open("rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInput(f"input larger than {MAX_INPUT_BYTES // 1024**2} MB")
    return data.decode("utf-8", errors="replace")


def _report(result: ScanResult, text: str) -> None:
    """What was found and where, never the secret itself."""
    if not result.has_match:
        err_console.print("No matches.")
        return
    table = Table("type", "line", "column", "start", "end")
    for match in result.matches:
        line = text.count("\n", 0, match.start) + 1
        column = match.start - (text.rfind("\n", 0, match.start) + 1) + 1
        table.add_row(match.type, str(line), str(column), str(match.start), str(match.end))
    err_console.print(table)


def _scan_json(result: ScanResult) -> dict[str, Any]:
    return {
        "hasMatch": result.has_match,
        "matches": [{"type": m.type, "start": m.start, "end": m.end} for m in result.matches],
        "redactedText": result.redacted_text,
    }


def _pattern_json(record: PatternRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "name": record.name,
        "regex": record.regex,
        "builtin": record.builtin,
        "enabled": record.enabled,
        "description": record.description,
    }
