"""The one place HTTP requests are authenticated and authorized.

Routes declare what they need with ``require("<permission>")``; the decision itself is
``autorag.auth.permissions.is_allowed``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from autorag.api.deps import AppDep
from autorag.auth.keys import looks_like_key
from autorag.auth.permissions import (
    ALL_PERMISSIONS,
    EVERY_WORKSPACE,
    effective_scope,
    in_scope,
    is_allowed,
)
from autorag.auth.ratelimit import SlidingWindowLimiter
from autorag.auth.service import UserInfo, get_active_user, resolve_api_key
from autorag.auth.tokens import TokenSigner, load_or_create_secret
from autorag.context import AppContext
from autorag.errors import Forbidden, NotFound, Unauthorized


@dataclass(frozen=True)
class Principal:
    """Who is calling, and where they may act."""

    user_id: int
    username: str
    role: str  # admin | manager | member
    workspaces: frozenset[str] | None  # names this principal may act in; None = all
    via: str  # "token" | "api_key"

    def can(self, permission: str, workspace: str | None = None) -> bool:
        return is_allowed(self.role, self.via, self.workspaces, permission, workspace)

    def sees(self, workspace: str) -> bool:
        """Whether the workspace exists for this principal at all (others answer 404)."""
        return in_scope(self.workspaces, workspace)

    @property
    def permissions(self) -> list[str]:
        return sorted(p for p in ALL_PERMISSIONS if self.can(p))


@dataclass(frozen=True)
class AuthState:
    """Per-app authentication state, built at start-up."""

    signer: TokenSigner
    login_limiter: SlidingWindowLimiter


@asynccontextmanager
async def auth_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Build the app's AuthState; runs after the app's own lifespan opened the context."""
    context: AppContext = app.state.context
    server = context.settings.server
    secret = load_or_create_secret(context.workspace.data_dir)
    app.state.auth = AuthState(
        TokenSigner(secret, server.token_ttl_minutes * 60),
        SlidingWindowLimiter(server.login_attempts_per_minute),
    )
    yield


def auth_state(request: Request) -> AuthState:
    state: AuthState = request.app.state.auth
    return state


_bearer = HTTPBearer(
    auto_error=False,
    description="A login token from POST /api/auth/login, or an API key (ark_…).",
)


def current_principal(
    request: Request,
    context: AppDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller, from ``Authorization: Bearer``; 401 without valid credentials."""
    if credentials is None:
        raise Unauthorized("authentication required: send Authorization: Bearer <token or key>")
    secret = credentials.credentials
    if looks_like_key(secret):
        user, key_scope = resolve_api_key(context.catalog, secret)
        return _principal(user, key_scope, "api_key")
    claims = auth_state(request).signer.verify(secret)
    return _principal(get_active_user(context.catalog, claims.user_id), None, "token")


PrincipalDep = Annotated[Principal, Depends(current_principal)]


def require(permission: str, *, every_workspace: bool = False) -> Callable[..., Principal]:
    """A dependency answering the caller if they hold ``permission``.

    When the route has a ``{workspace}`` path parameter, the permission must hold in that
    workspace, and a workspace the caller may not act in answers 404 exactly as a missing
    one does, so names cannot be probed. Declare it before other dependencies that look
    the workspace up, so an anonymous caller learns nothing either. With
    ``every_workspace`` it must hold in all of them (creating a workspace, say).
    """
    if permission not in ALL_PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")

    def dependency(request: Request, principal: PrincipalDep) -> Principal:
        workspace = request.path_params.get("workspace")
        if workspace is not None and not principal.sees(workspace):
            raise NotFound(f"no workspace {workspace!r}")
        if not principal.can(permission, EVERY_WORKSPACE if every_workspace else workspace):
            raise Forbidden(f"not allowed: {permission} (role {principal.role}, {principal.via})")
        return principal

    return dependency


def _principal(user: UserInfo, key_scope: frozenset[str] | None, via: str) -> Principal:
    scope = effective_scope(user.role, user.workspaces, key_scope)
    return Principal(user.id, user.username, user.role, scope, via)
