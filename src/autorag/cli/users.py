"""``autorag users``: accounts, roles and workspace memberships."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from autorag.auth import service
from autorag.auth.permissions import ROLES
from autorag.cli._common import console, open_app, print_json

app = typer.Typer(help="Manage users, their roles and workspaces.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
UsernameArg = Annotated[str, typer.Argument(help="Lowercase letters, digits, '_', '.', '-'.")]
WorkspaceArg = Annotated[str, typer.Argument(help="Workspace name.")]
PasswordStdin = Annotated[
    bool,
    typer.Option("--password-stdin", help="Read the password from standard input (scripts)."),
]


def read_password(from_stdin: bool) -> str:
    """The new password: one line of stdin, or typed twice without echo."""
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@app.command("create")
def create(
    ctx: typer.Context,
    username: UsernameArg,
    role: Annotated[str, typer.Option(help=" | ".join(ROLES))] = "member",
    password_stdin: PasswordStdin = False,
) -> None:
    """Create a user (non-admins then need `users grant` to use a workspace)."""
    password = read_password(password_stdin)
    user = service.create_user(open_app(ctx).catalog, username, password, role)
    console.print(f"Created {user.role} {user.username!r}.", highlight=False)


@app.command("list")
def list_users(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List users with their role and workspaces."""
    users = service.list_users(open_app(ctx).catalog)
    if as_json:
        print_json(users)
        return
    table = Table("username", "role", "disabled", "workspaces")
    for user in users:
        scope = "(all)" if user.role == "admin" else ", ".join(user.workspaces)
        table.add_row(user.username, user.role, "yes" if user.disabled else "", scope)
    console.print(table)


@app.command("passwd")
def passwd(
    ctx: typer.Context, username: UsernameArg, password_stdin: PasswordStdin = False
) -> None:
    """Set a user's password."""
    password = read_password(password_stdin)
    service.set_password(open_app(ctx).catalog, username, password)
    console.print(f"Password of {username!r} changed.", highlight=False)


@app.command("rm")
def remove(ctx: typer.Context, username: UsernameArg) -> None:
    """Delete a user with their API keys (the last enabled admin stays)."""
    service.delete_user(open_app(ctx).catalog, username)
    console.print(f"Deleted {username!r}.", highlight=False)


@app.command("grant")
def grant(ctx: typer.Context, username: UsernameArg, workspace: WorkspaceArg) -> None:
    """Let a user act in a workspace."""
    service.add_membership(open_app(ctx).catalog, username, workspace)
    console.print(f"{username!r} is a member of {workspace!r}.", highlight=False)


@app.command("revoke")
def revoke(ctx: typer.Context, username: UsernameArg, workspace: WorkspaceArg) -> None:
    """Take a workspace away from a user."""
    service.remove_membership(open_app(ctx).catalog, username, workspace)
    console.print(f"{username!r} is no longer a member of {workspace!r}.", highlight=False)
