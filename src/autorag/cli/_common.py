"""What every command shares: the workspace option, output helpers, error rendering."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from autorag.times import as_utc

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.workspace import Workspace

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

_option_type = typer.core.TyperOption.display_type_rich


def _value_type(option: typer.core.TyperOption, ctx: Any) -> str | None:
    """What an option takes, as help shows it: a flag takes nothing (``--json``, not
    ``--json <bool>``), a repeatable option one value each time (``<str>``, not
    ``<list[str]>``)."""
    if option.is_flag:
        return None
    shown = _option_type(option, ctx)
    if shown and shown.startswith("<list[") and shown.endswith("]>"):
        return f"<{shown[len('<list[') : -len(']>')]}>"
    return shown


# Typer's help shows a value type after every option, flags included: the one place
# where its look is corrected, for every command.
typer.core.TyperOption.display_type_rich = _value_type  # type: ignore[method-assign,assignment]


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
    from autorag.backup.presence import recover_interrupted
    from autorag.context import open_context  # deferred: `autorag init` never opens one

    workspace = current_workspace(ctx)
    recover_interrupted(workspace)  # a restore killed half-way is taken back first
    return open_context(workspace, **overrides)


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


def camel_json(value: Any) -> Any:
    """A service's plain data (dataclasses, lists, dicts) as JSON data keyed as the API
    answers it (camelCase: ``sizeBytes``), for ``--json``."""
    from pydantic.alias_generators import to_camel  # deferred: `autorag --help` stays fast

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            to_camel(field.name): camel_json(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, list | tuple):
        return [camel_json(item) for item in value]
    if isinstance(value, dict):
        return {key: camel_json(item) for key, item in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=_default, ensure_ascii=False, indent=2))


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 file``, ``2 files``; ``nouns`` for an irregular plural (``search paths``)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def local_time(moment: datetime | str | None) -> str:
    """A moment as people read it: local time to the second, with the zone
    (``2026-12-03 18:20:35 CET``). A moment without a zone is UTC, as stored."""
    if moment is None or moment == "":
        return ""
    when = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    when = as_utc(when)
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def split_types(value: str | None) -> list[str]:
    return [t for t in (value or "").split(",") if t.strip()]


def print_error(message: str) -> None:
    """An error as the user sees it: one line on stderr."""
    err_console.print(f"[red]error:[/red] {escape(message)}", highlight=False)


def _lower(text: str) -> str:
    """``Missing argument`` as ``missing argument``; ``ISO`` stays ``ISO``."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def print_usage_error(exc: typer.TyperException) -> None:
    """A usage error (a missing argument, a bad value) in one plain line, then where to
    read more: ``Try 'autorag search --help'.`` (Typer would draw a box under the usage)."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group given no command: the help
        return  # is printed already
    message = exc.format_message()
    if type(exc) is typer.BadParameter:  # "--from: not a date", not "Invalid value for"
        param = exc.param_hint or (exc.param.get_error_hint() if exc.param else None)
        hint = param if isinstance(param, str) or param is None else " / ".join(param)
        message = f"{hint.replace(chr(39), '')}: {_lower(exc.message)}" if hint else exc.message
    print_error(_lower(message))
    context = getattr(exc, "ctx", None)
    if context is not None:
        err_console.print(f"Try '{context.command_path} --help'.", markup=False, highlight=False)
