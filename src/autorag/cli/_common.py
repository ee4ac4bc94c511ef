"""What every command shares: the workspace option, output helpers, error rendering."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.workspace import Workspace

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


@dataclasses.dataclass
class CliState:
    workspace: Path | None = None


def current_workspace(ctx: typer.Context) -> Workspace:
    # Deferred, like every heavy import here: the settings (pydantic-settings) cost a
    # third of a second that `autorag --help` does not need.
    from autorag.workspace import find_workspace

    state = ctx.find_object(CliState) or CliState()
    return find_workspace(state.workspace)


def open_app(ctx: typer.Context, **overrides: Any) -> AppContext:
    from autorag.context import open_context  # deferred: `autorag init` never opens one

    return open_context(current_workspace(ctx), **overrides)


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=_default, ensure_ascii=False, indent=2))


def split_types(value: str | None) -> list[str]:
    return [t for t in (value or "").split(",") if t.strip()]
