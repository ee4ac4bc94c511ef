"""The one place HTTP requests are authenticated and authorized.

Routes declare what they need with ``require("<permission>")``; the decision itself is
``autorag.auth.permissions.is_allowed``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from autorag.api.deps import AppDep, AuthDep
from autorag.api.state import AuthState
from autorag.auth.keys import looks_like_key
from autorag.auth.permissions import (
    ALL_PERMISSIONS,
    EVERY_WORKSPACE,
    PROTECTED,
    PROTECTION_SCOPE,
    ROLE_PERMISSIONS,
    effective_scope,
    in_scope,
    is_allowed,
    is_protected_caller,
)
from autorag.auth.service import UserInfo, get_session_user, resolve_api_key
from autorag.errors import Forbidden, NotFound, Unauthorized


@dataclass(frozen=True)
class Principal:
    """Who is calling, and where they may act."""

    user_id: int
    username: str
    role: str  # admin | manager | member
    workspaces: frozenset[str] | None  # names this principal may act in; None = all
    via: str  # "token" | "api_key"
    key_scopes: frozenset[str] = frozenset()  # an API key's named scopes

    def can(self, permission: str, workspace: str | None = None) -> bool:
        return is_allowed(
            self.role, self.via, self.workspaces, permission, workspace, self.key_scopes
        )

    @property
    def protected(self) -> bool:
        """May do what weakens protection or destroys data (its role permitting)."""
        return is_protected_caller(self.via, self.key_scopes)

    def sees(self, workspace: str) -> bool:
        """Whether the workspace exists for this principal at all (others answer 404)."""
        return in_scope(self.workspaces, workspace)

    @property
    def permissions(self) -> list[str]:
        return sorted(p for p in ALL_PERMISSIONS if self.can(p))


def client_address(request: Request, auth: AuthState) -> str:
    """The client's address: the peer's, or, when the peer is one of
    ``server.trusted_proxies``, the nearest untrusted hop of ``X-Forwarded-For``.

    Anyone can send the header, so it counts only from a configured proxy; `autorag
    serve` turns uvicorn's own handling of it off.
    """
    peer = request.client.host if request.client else "unknown"
    trusted = auth.trusted_proxies
    if not trusted or not _is_trusted(peer, trusted):
        return peer
    hops = [
        hop.strip()
        for header in request.headers.getlist("x-forwarded-for")
        for hop in header.split(",")
        if hop.strip()
    ]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return hop if _is_address(hop) else peer
    return peer


def _is_trusted(address: str, trusted: frozenset[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(net, strict=False) for net in trusted)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_bearer = HTTPBearer(
    auto_error=False,
    description="A login token from POST /api/auth/login, or an API key (ark_…).",
)


def current_principal(
    context: AppDep,
    auth: AuthDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The caller, from ``Authorization: Bearer``; 401 without valid credentials."""
    if credentials is None:
        raise Unauthorized("authentication required: send Authorization: Bearer <token or key>")
    secret = credentials.credentials
    if looks_like_key(secret):
        user, key_scope, named_scopes = resolve_api_key(context.catalog, secret)
        return _principal(user, key_scope, "api_key", named_scopes)
    claims = auth.signer.verify(secret)
    user = get_session_user(context.catalog, claims.user_id, claims.generation)
    return _principal(user, None, "token")


PrincipalDep = Annotated[Principal, Depends(current_principal)]


def require(
    permission: str, *, every_workspace: bool = False, protection: bool = False
) -> Callable[..., Principal]:
    """A dependency answering the caller if they hold ``permission``.

    When the route has a ``{workspace}`` path parameter, the permission must hold in that
    workspace, and a workspace the caller may not act in answers 404 exactly as a missing
    one does, so names cannot be probed. Declare it before other dependencies that look
    the workspace up, so an anonymous caller learns nothing either. With
    ``every_workspace`` it must hold in all of them (creating a workspace, say). With
    ``protection`` the route weakens protection or destroys data: an API key without
    the ``admin:protection`` scope is refused (see ``require_protection``).
    """
    if permission not in ALL_PERMISSIONS:
        raise ValueError(f"unknown permission {permission!r}")

    def dependency(request: Request, principal: PrincipalDep) -> Principal:
        workspace = request.path_params.get("workspace")
        if workspace is not None and not principal.sees(workspace):
            raise NotFound(f"no workspace {workspace!r}")
        where = EVERY_WORKSPACE if every_workspace else workspace
        if not principal.can(permission, where):
            if permission in PROTECTED and _would_allow_unprotected(principal, permission, where):
                require_protection(principal, permission)
            raise Forbidden(f"not allowed: {permission} (role {principal.role}, {principal.via})")
        if protection:
            require_protection(principal, permission)
        return principal

    return dependency


def require_protection(principal: Principal, what: str) -> None:
    """Refuse (403) an API key without the ``admin:protection`` scope: what it asks
    weakens protection or destroys data, which a leaked key must not do."""
    if not principal.protected:
        raise Forbidden(
            f"{what} weakens protection or destroys data: it needs a password login, or "
            f"an API key created with the {PROTECTION_SCOPE!r} scope (this key has none)"
        )


def _would_allow_unprotected(principal: Principal, permission: str, where: str | None) -> bool:
    """Whether only the protection requirement keeps ``principal`` from ``permission``."""
    return permission in ROLE_PERMISSIONS.get(principal.role, frozenset()) and is_allowed(
        principal.role, "token", principal.workspaces, permission, where
    )


def _principal(
    user: UserInfo,
    key_scope: frozenset[str] | None,
    via: str,
    key_scopes: frozenset[str] = frozenset(),
) -> Principal:
    scope = effective_scope(user.role, user.workspaces, key_scope)
    return Principal(user.id, user.username, user.role, scope, via, key_scopes)
