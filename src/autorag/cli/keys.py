"""``autorag keys``: API keys for scripts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from autorag.auth import service
from autorag.cli._common import console, err_console, local_time, open_app, print_json
from autorag.errors import InvalidInput

if TYPE_CHECKING:
    from autorag.store.catalog.repository import Catalog

app = typer.Typer(help="Create, list and revoke API keys.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the key is for.")],
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="The user the key acts as (default: the only admin)."),
    ] = None,
    workspaces: Annotated[
        list[str] | None,
        typer.Option("--workspace", help="Limit the key to this workspace (repeatable)."),
    ] = None,
) -> None:
    """Create a key and print it once: it cannot be shown again.

    Example: KEY=$(autorag keys create nightly --workspace default)
    """
    catalog = open_app(ctx).catalog
    owner = user if user is not None else _only_admin(catalog)
    info, key = service.create_api_key(catalog, owner, name, workspaces or [])
    err_console.print(
        f"API key {info.prefix!r} for {info.username!r}; store it now, it is not kept:",
        highlight=False,
    )
    typer.echo(key)  # alone on stdout, so `KEY=$(autorag keys create …)` works


@app.command("list")
def list_keys(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option("--user", "-u", help="Only this user's.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """List keys (never the keys themselves)."""
    keys = service.list_api_keys(open_app(ctx).catalog, user)
    if as_json:
        print_json(keys)
        return
    table = Table("prefix", "name", "user", "workspaces", "last used", "revoked")
    for key in keys:
        table.add_row(
            key.prefix,
            key.name,
            key.username,
            ", ".join(key.workspaces) or "(all)",
            local_time(key.last_used_at),
            local_time(key.revoked_at),
        )
    console.print(table)


@app.command("revoke")
def revoke(
    ctx: typer.Context, prefix: Annotated[str, typer.Argument(help="The key's prefix.")]
) -> None:
    """Revoke a key for good."""
    info = service.revoke_api_key(open_app(ctx).catalog, prefix)
    console.print(f"Revoked {info.prefix!r} ({info.name}).", highlight=False)


def _only_admin(catalog: Catalog) -> str:
    """The user a key acts as when ``--user`` is not given: the one enabled admin."""
    admins = [
        u.username for u in service.list_users(catalog) if u.role == "admin" and not u.disabled
    ]
    if len(admins) == 1:
        return admins[0]
    if not admins:
        raise InvalidInput("no admin exists yet to own the key: create one, or give --user NAME")
    raise InvalidInput(
        f"there are {len(admins)} admins ({', '.join(sorted(admins))}): say which with --user NAME"
    )
