"""Setup, login, users, memberships and API keys.

``/api/setup`` and ``/api/auth/login`` are public; everything else needs credentials and
a permission (see ``autorag.auth.permissions``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, PrincipalDep, client_address, require
from autorag.api.deps import AppDep, AuthDep
from autorag.api.routes import setup_page
from autorag.auth import service
from autorag.auth.passwords import MAX_LENGTH as PASSWORD_MAX
from autorag.auth.permissions import PROTECTION_SCOPE, SESSION
from autorag.auth.service import ApiKeyInfo, UserInfo
from autorag.errors import Forbidden, NotFound, RateLimited, Unauthorized

log = logging.getLogger(__name__)
router = APIRouter(tags=["auth"])
router.include_router(setup_page.router)

Role = Literal["admin", "manager", "member"]
Username = Annotated[str, Path(description="Username", max_length=64)]
WorkspaceName = Annotated[str, Path(description="Workspace name", max_length=200)]
AdminDep = Annotated[Principal, Depends(require("users:admin"))]
KeysDep = Annotated[Principal, Depends(require("keys:write"))]
NO_CONTENT = status.HTTP_204_NO_CONTENT


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetupBody(_Body):
    token: str = Field(min_length=1, max_length=200)
    username: str = Field(max_length=64)
    password: str = Field(max_length=PASSWORD_MAX)


class LoginBody(_Body):
    username: str = Field(max_length=64)
    password: str = Field(max_length=PASSWORD_MAX)


class TokenOut(BaseModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"
    expires_in: int  # seconds


class UserCreate(_Body):
    username: str = Field(max_length=64)
    password: str = Field(max_length=PASSWORD_MAX)
    role: Role = "member"


class UserPatch(_Body):
    role: Role | None = None
    password: str | None = Field(default=None, max_length=PASSWORD_MAX)
    disabled: bool | None = None


class UserOut(BaseModel):
    username: str
    role: str
    disabled: bool
    workspaces: list[str]  # memberships; admins act in every workspace
    createdAt: datetime


class MeOut(BaseModel):
    username: str
    role: str
    via: str
    workspaces: list[str] | None  # null: every workspace
    permissions: list[str]
    scopes: list[str]  # an API key's named scopes (admin:protection)
    # May do what weakens protection or destroys data (a password login, or a key
    # with the admin:protection scope), where the role permits it.
    protection: bool


class KeyCreate(_Body):
    name: str = Field(min_length=1, max_length=100)
    workspaces: list[str] = Field(default_factory=list, max_length=100)  # []: all
    scopes: list[Literal["admin:protection"]] = Field(
        default_factory=list,
        max_length=1,
        description=(
            "Named scopes. admin:protection lets the key do what weakens protection or "
            "destroys data (DLP patterns, deleting a workspace, source policy), as a "
            "password login may; without it such requests answer 403."
        ),
    )


class KeyOut(BaseModel):
    prefix: str
    name: str
    username: str
    workspaces: list[str]  # []: every workspace the user may act in
    createdAt: datetime
    lastUsedAt: datetime | None
    revokedAt: datetime | None
    scopes: list[str]  # named scopes: admin:protection, or none


class KeyCreatedOut(KeyOut):
    key: str  # shown once, never again


# -- first run and login --------------------------------------------------------------
@router.post("/api/setup", status_code=status.HTTP_201_CREATED, response_model=UserOut)
def setup(body: SetupBody, context: AppDep) -> UserOut:
    """Create the first admin with the one-time token `autorag serve` printed."""
    user = service.complete_setup(
        context.catalog, context.workspace.data_dir, body.token, body.username, body.password
    )
    log.info("first admin %r created", user.username)
    return _user_out(user)


@router.post(
    "/api/auth/login",
    response_model=TokenOut,
    responses={401: {"description": "bad credentials"}, 429: {"description": "rate limited"}},
)
def login(body: LoginBody, request: Request, context: AppDep, auth: AuthDep) -> TokenOut:
    """Exchange a username and password for a short-lived bearer token.

    Limits: attempts per client address per minute, and exponential backoff after
    repeated wrong passwords for one username from one address (another address is not
    slowed down). Password checks run a few at a time; a burst beyond that answers 429
    with Retry-After.
    """
    client = client_address(request, auth)
    guard = auth.login_guard
    # The username is not logged: people type passwords into that field too.
    try:
        guard.attempt(client, body.username)
        try:
            user = service.authenticate(context.catalog, body.username, body.password)
        except Unauthorized:
            guard.failed(client, body.username)
            raise
    except (RateLimited, Unauthorized):
        log.warning("login refused from %s", client)
        raise
    guard.succeeded(client, body.username)
    token = auth.signer.issue(user.id, service.token_generation(context.catalog, user.id))
    return TokenOut(access_token=token, expires_in=auth.signer.ttl_seconds)


@router.post("/api/auth/logout", status_code=NO_CONTENT, response_class=Response)
def logout(
    principal: PrincipalDep,
    context: AppDep,
    everywhere: Annotated[
        bool, Query(description="Accepted for clarity: every logout ends all your logins")
    ] = False,
) -> Response:
    """End your login tokens: this one and every other you hold (another browser, a
    script), since tokens carry one generation per user. A password or role change
    does the same. An API key is not a login: revoke it with DELETE /api/keys/{prefix}."""
    if principal.via != SESSION:
        raise Forbidden(
            "an API key is not a login: log out with a login token, or revoke the key "
            "(DELETE /api/keys/{prefix})"
        )
    service.end_logins(context.catalog, principal.user_id)
    log.info("user %r logged out%s", principal.username, " everywhere" if everywhere else "")
    return Response(status_code=NO_CONTENT)


@router.get("/api/auth/me", response_model=MeOut)
def me(principal: PrincipalDep) -> MeOut:
    """Who the credentials belong to, and what they allow."""
    scope = sorted(principal.workspaces) if principal.workspaces is not None else None
    return MeOut(
        username=principal.username,
        role=principal.role,
        via=principal.via,
        workspaces=scope,
        permissions=principal.permissions,
        scopes=sorted(principal.key_scopes),
        protection=principal.protected,
    )


# -- users (admin) --------------------------------------------------------------------
@router.get("/api/users", response_model=list[UserOut])
def list_users(_: AdminDep, context: AppDep) -> list[UserOut]:
    return [_user_out(u) for u in service.list_users(context.catalog)]


@router.post("/api/users", status_code=status.HTTP_201_CREATED, response_model=UserOut)
def create_user(body: UserCreate, admin: AdminDep, context: AppDep) -> UserOut:
    user = service.create_user(
        context.catalog, body.username, body.password, body.role, actor=admin.username
    )
    return _user_out(user)


@router.patch("/api/users/{username}", response_model=UserOut)
def update_user(username: Username, body: UserPatch, _: AdminDep, context: AppDep) -> UserOut:
    """Change a user's role, password or disabled flag (the last enabled admin stays)."""
    user = service.update_user(
        context.catalog, username, role=body.role, password=body.password, disabled=body.disabled
    )
    return _user_out(user)


@router.delete("/api/users/{username}", status_code=NO_CONTENT)
def delete_user(username: Username, admin: AdminDep, context: AppDep) -> None:
    service.delete_user(context.catalog, username, actor=admin.username)


@router.put("/api/users/{username}/workspaces/{workspace}", status_code=NO_CONTENT)
def grant_workspace(
    username: Username, workspace: WorkspaceName, _: AdminDep, context: AppDep
) -> None:
    """Make the user a member of the workspace."""
    service.add_membership(context.catalog, username, workspace)


@router.delete("/api/users/{username}/workspaces/{workspace}", status_code=NO_CONTENT)
def revoke_workspace(
    username: Username, workspace: WorkspaceName, _: AdminDep, context: AppDep
) -> None:
    service.remove_membership(context.catalog, username, workspace)


# -- API keys -------------------------------------------------------------------------
@router.get("/api/keys", response_model=list[KeyOut])
def list_keys(principal: KeysDep, context: AppDep) -> list[KeyOut]:
    """Your API keys; an admin sees everyone's."""
    owner = None if principal.can("keys:admin") else principal.username
    return [_key_out(k) for k in service.list_api_keys(context.catalog, owner)]


@router.post("/api/keys", status_code=status.HTTP_201_CREATED, response_model=KeyCreatedOut)
def create_key(body: KeyCreate, principal: KeysDep, context: AppDep) -> KeyCreatedOut:
    """A new API key for you, limited to some of your workspaces or not; shown once.

    With ``scopes: ["admin:protection"]`` it may also do what weakens protection or
    destroys data, as your password login may; listings show the scope."""
    hidden = next((w for w in body.workspaces if not principal.sees(w)), None)
    if hidden is not None:
        raise NotFound(f"no workspace {hidden!r}")
    info, key = service.create_api_key(
        context.catalog, principal.username, body.name, body.workspaces, body.scopes
    )
    if PROTECTION_SCOPE in info.scopes:
        log.info("API key %r of %r has the %s scope", info.prefix, info.username, PROTECTION_SCOPE)
    return KeyCreatedOut(**_key_out(info).model_dump(), key=key)


@router.delete("/api/keys/{prefix}", status_code=NO_CONTENT)
def revoke_key(
    prefix: Annotated[str, Path(max_length=16)], principal: KeysDep, context: AppDep
) -> None:
    """Revoke one of your keys (an admin: anyone's)."""
    info = service.get_api_key(context.catalog, prefix)
    if info.username != principal.username and not principal.can("keys:admin"):
        raise NotFound(f"no API key {prefix!r}")  # others' keys do not exist for you
    service.revoke_api_key(context.catalog, prefix)


def _user_out(user: UserInfo) -> UserOut:
    return UserOut(
        username=user.username,
        role=user.role,
        disabled=user.disabled,
        workspaces=list(user.workspaces),
        createdAt=user.created_at,
    )


def _key_out(key: ApiKeyInfo) -> KeyOut:
    return KeyOut(
        prefix=key.prefix,
        name=key.name,
        username=key.username,
        workspaces=list(key.workspaces),
        createdAt=key.created_at,
        lastUsedAt=key.last_used_at,
        revokedAt=key.revoked_at,
        scopes=list(key.scopes),
    )
