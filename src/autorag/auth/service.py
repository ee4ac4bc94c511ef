"""Users, memberships, API keys and first-run setup: the catalog operations of access.

Every function takes the ``Catalog`` first and raises from the one error tree; nothing
here knows about HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from autorag.auth.keys import generate_key, key_matches, key_prefix
from autorag.auth.passwords import (
    burn_verification_time,
    hash_password,
    needs_rehash,
    validate_password,
    verify_password,
)
from autorag.auth.permissions import KEY_SCOPES, ROLES
from autorag.auth.tables import ApiKeyScopeRow, UserSessionRow
from autorag.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized
from autorag.private_files import write_private
from autorag.store.catalog import outbox
from autorag.store.catalog.models import ApiKeyRow, MembershipRow, UserRow, WorkspaceRow, utcnow
from autorag.store.catalog.repository import WORKSPACE_KIND, Catalog
from autorag.times import as_utc

USERNAME_RE = re.compile(r"^[a-z0-9_.-]{2,64}$")
KEY_NAME_MAX = 100
SETUP_TOKEN_FILE_NAME = "setup-token"
# A key's last use is written at most this often: a write per request would serialise
# every search behind the catalog's write lock.
LAST_USED_RESOLUTION = timedelta(minutes=1)
_BAD_LOGIN = "invalid username or password"


@dataclass(frozen=True)
class UserInfo:
    id: int
    username: str
    role: str
    disabled: bool
    created_at: datetime
    workspaces: tuple[str, ...]  # memberships, sorted; admins act in every workspace


@dataclass(frozen=True)
class ApiKeyInfo:
    prefix: str
    name: str
    username: str
    workspaces: tuple[str, ...]  # empty: every workspace the user may act in
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    scopes: tuple[str, ...] = ()  # named scopes (admin:protection), sorted


# -- users ----------------------------------------------------------------------------
def create_user(
    catalog: Catalog, username: str, password: str, role: str, *, actor: str | None = None
) -> UserInfo:
    """A new user; ``actor``: who made it (an admin's username; None: the command line
    or the first-run setup), named by its ``user.created`` event."""
    _validate_username(username)
    _validate_role(role)
    validate_password(password)
    password_hash = hash_password(password)  # slow: outside the transaction
    try:
        with Session(catalog.engine) as session, session.begin():
            if _find_user(session, username) is not None:
                raise Conflict(f"user {username!r} already exists")
            row = UserRow(
                username=username, password_hash=password_hash, role=role, created_at=utcnow()
            )
            session.add(row)
            session.flush()
            session.add(UserSessionRow(user_id=row.id, generation=secrets.randbelow(2**31)))
            data = {"user": row.id, "username": username, "role": role}
            outbox.emit(session.connection(), "user.created", data, actor=actor)
            return _user_info(session, row)
    except IntegrityError as exc:  # created concurrently
        raise Conflict(f"user {username!r} already exists") from exc


def list_users(catalog: Catalog) -> list[UserInfo]:
    with Session(catalog.engine) as session:
        rows = session.scalars(select(UserRow).order_by(UserRow.username)).all()
        return [_user_info(session, row) for row in rows]


def get_user(catalog: Catalog, username: str) -> UserInfo:
    with Session(catalog.engine) as session:
        return _user_info(session, _user_row(session, username))


def existing_usernames(catalog: Catalog, names: Collection[str]) -> set[str]:
    """Which of ``names`` are users' names (as written: names are exact), in one query."""
    if not names:
        return set()
    query = select(UserRow.username).where(UserRow.username.in_(set(names)))
    with Session(catalog.engine) as session:
        return set(session.scalars(query))


def get_active_user(catalog: Catalog, user_id: int) -> UserInfo:
    """The user a credential names; Unauthorized once deleted or disabled."""
    with Session(catalog.engine) as session:
        row = session.get(UserRow, user_id)
        if row is None or row.disabled:
            raise Unauthorized("unknown or disabled user")
        return _user_info(session, row)


def get_session_user(catalog: Catalog, user_id: int, generation: int) -> UserInfo:
    """The user a login token names, if it was issued under their current generation;
    Unauthorized once deleted or disabled, or after a password or role change or a
    logout."""
    with Session(catalog.engine) as session:
        row = session.get(UserRow, user_id)
        if row is None or row.disabled:
            raise Unauthorized("unknown or disabled user")
        if _generation(session, user_id) != generation:
            raise Unauthorized("this login has ended (logout, or a password or role change)")
        return _user_info(session, row)


def token_generation(catalog: Catalog, user_id: int) -> int:
    """The generation a login token issued now carries."""
    with Session(catalog.engine) as session:
        return _generation(session, user_id)


def end_logins(catalog: Catalog, user_id: int) -> None:
    """Refuse every login token the user holds (logout, sign out everywhere)."""
    with Session(catalog.engine) as session, session.begin():
        _bump_generation(session, user_id)


MAX_INSTRUCTIONS_CHARS = 4000


def custom_instructions(catalog: Catalog, user_id: int) -> str:
    """What the user asked the agent to keep in mind in every chat ("" when nothing)."""
    with Session(catalog.engine) as session:
        row = session.get(UserRow, user_id)
        return row.custom_instructions if row is not None else ""


def set_custom_instructions(catalog: Catalog, user_id: int, text: str) -> str:
    text = text.strip()
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidInput(
            f"custom instructions are longer than {MAX_INSTRUCTIONS_CHARS} characters"
        )
    with Session(catalog.engine) as session, session.begin():
        row = session.get(UserRow, user_id)
        if row is None:
            raise NotFound(f"no user {user_id}")
        row.custom_instructions = text
    return text


def update_user(
    catalog: Catalog,
    username: str,
    *,
    role: str | None = None,
    password: str | None = None,
    disabled: bool | None = None,
) -> UserInfo:
    if role is not None:
        _validate_role(role)
    password_hash = None
    if password is not None:
        validate_password(password)
        password_hash = hash_password(password)
    demoted = role is not None and role != "admin"
    with Session(catalog.engine) as session, session.begin():
        row = _user_row(session, username)
        if demoted or disabled:
            _keep_an_admin(session, row)
        if password_hash is not None or (role is not None and role != row.role) or disabled:
            _bump_generation(session, row.id)  # the user's login tokens end here
        row.role = role if role is not None else row.role
        row.disabled = disabled if disabled is not None else row.disabled
        row.password_hash = password_hash or row.password_hash
        session.flush()
        return _user_info(session, row)


def set_password(catalog: Catalog, username: str, password: str) -> UserInfo:
    return update_user(catalog, username, password=password)


def delete_user(catalog: Catalog, username: str, *, actor: str | None = None) -> None:
    with Session(catalog.engine) as session, session.begin():
        row = _user_row(session, username)
        _keep_an_admin(session, row)
        data = {"user": row.id, "username": row.username, "role": row.role}
        session.delete(row)  # memberships and API keys go with it (ON DELETE CASCADE)
        session.flush()
        outbox.emit(session.connection(), "user.deleted", data, actor=actor)


def authenticate(catalog: Catalog, username: str, password: str) -> UserInfo:
    """The user these credentials belong to; Unauthorized otherwise.

    An unknown username costs the same hash verification as a wrong password, and every
    refusal says the same thing, so answers do not reveal which usernames exist.
    """
    with Session(catalog.engine) as session:
        row = _find_user(session, username)
        if row is None:
            burn_verification_time(password)
            raise Unauthorized(_BAD_LOGIN)
        if not verify_password(row.password_hash, password) or row.disabled:
            raise Unauthorized(_BAD_LOGIN)
        stale_hash = needs_rehash(row.password_hash)
        info = _user_info(session, row)
    if stale_hash:  # upgrade to today's parameters while the password is at hand
        _store_password_hash(catalog, info.id, hash_password(password))
    return info


# -- memberships ----------------------------------------------------------------------
def add_membership(catalog: Catalog, username: str, workspace_name: str) -> None:
    """Let ``username`` act in the workspace (no-op when already a member)."""
    workspace = catalog.get_workspace(workspace_name)
    with Session(catalog.engine) as session, session.begin():
        user = _user_row(session, username)
        if session.get(MembershipRow, (user.id, workspace.id)) is None:
            session.add(MembershipRow(user_id=user.id, workspace_id=workspace.id))


def remove_membership(catalog: Catalog, username: str, workspace_name: str) -> None:
    """Take the workspace away from ``username`` (no-op when not a member)."""
    workspace = catalog.get_workspace(workspace_name)
    with Session(catalog.engine) as session, session.begin():
        user = _user_row(session, username)
        session.execute(
            delete(MembershipRow).where(
                MembershipRow.user_id == user.id, MembershipRow.workspace_id == workspace.id
            )
        )


# -- API keys -------------------------------------------------------------------------
def create_api_key(
    catalog: Catalog,
    username: str,
    name: str,
    workspaces: list[str],
    scopes: Collection[str] = (),
) -> tuple[ApiKeyInfo, str]:
    """A new key for ``username`` limited to ``workspaces`` ([] = all the user's), with
    the named ``scopes`` (``admin:protection``: may do what weakens protection or
    destroys data, as a password login may).

    Returns the key's description and the key itself, which is never shown again.
    """
    name = name.strip()
    if not name or len(name) > KEY_NAME_MAX:
        raise InvalidInput(f"a key name has 1 to {KEY_NAME_MAX} characters")
    unknown = sorted(set(scopes) - KEY_SCOPES)
    if unknown:
        raise InvalidInput(
            f"unknown key scope {unknown[0]!r}: use one of {', '.join(sorted(KEY_SCOPES))}"
        )
    scope = sorted({catalog.get_workspace(w).name for w in workspaces})
    new = generate_key()
    with Session(catalog.engine) as session, session.begin():
        user = _user_row(session, username)
        row = ApiKeyRow(
            user_id=user.id,
            name=name,
            prefix=new.prefix,
            key_hash=new.key_hash,
            workspaces=json.dumps(scope),
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        session.add_all(ApiKeyScopeRow(key_id=row.id, scope=scope) for scope in set(scopes))
        session.flush()
        return _key_info(row, user.username, _key_scopes(session, row.id)), new.key


def list_api_keys(catalog: Catalog, username: str | None = None) -> list[ApiKeyInfo]:
    """Every key, or only ``username``'s, revoked ones included, oldest first."""
    query = select(ApiKeyRow, UserRow.username).join(UserRow).order_by(ApiKeyRow.id)
    if username is not None:
        query = query.where(UserRow.username == username)
    with Session(catalog.engine) as session:
        return [
            _key_info(row, owner, _key_scopes(session, row.id))
            for row, owner in session.execute(query).all()
        ]


def get_api_key(catalog: Catalog, prefix: str) -> ApiKeyInfo:
    with Session(catalog.engine) as session:
        row, owner = _key_row(session, prefix)
        return _key_info(row, owner, _key_scopes(session, row.id))


def revoke_api_key(catalog: Catalog, prefix: str) -> ApiKeyInfo:
    """Revoke for good (revoking twice keeps the first time)."""
    with Session(catalog.engine) as session, session.begin():
        row, owner = _key_row(session, prefix)
        row.revoked_at = row.revoked_at or utcnow()
        session.flush()
        return _key_info(row, owner, _key_scopes(session, row.id))


def resolve_api_key(
    catalog: Catalog, key: str
) -> tuple[UserInfo, frozenset[str] | None, frozenset[str]]:
    """The user behind ``key``, the workspaces it is limited to (None: no limit) and its
    named scopes."""
    prefix = key_prefix(key)
    with Session(catalog.engine) as session:
        row = None if prefix is None else _find_key(session, prefix)
        if row is None or not key_matches(key, row.key_hash):
            raise Unauthorized("invalid API key")
        if row.revoked_at is not None:
            raise Unauthorized("API key revoked")
        user_id, key_id, last_used = row.user_id, row.id, row.last_used_at
        names: list[str] = json.loads(row.workspaces)
        scopes = frozenset(_key_scopes(session, key_id))
    user = get_active_user(catalog, user_id)
    if last_used is None or as_utc(last_used) < utcnow() - LAST_USED_RESOLUTION:
        _touch_key(catalog, key_id)
    return user, (frozenset(names) if names else None), scopes


# -- first run ------------------------------------------------------------------------
def ensure_setup_token(catalog: Catalog, data_dir: Path) -> str | None:
    """A fresh one-time setup token while no user exists, else None.

    Only its hash is kept (``<data dir>/setup-token``), so every start with no users
    issues a new one and the previous one stops working.
    """
    path = data_dir / SETUP_TOKEN_FILE_NAME
    if _has_users(catalog):
        path.unlink(missing_ok=True)
        return None
    token = secrets.token_urlsafe(32)
    write_private(path, _digest(token).encode("ascii"), replace=True)
    return token


def complete_setup(
    catalog: Catalog, data_dir: Path, token: str, username: str, password: str
) -> UserInfo:
    """Create the first admin with the setup token, which is used up."""
    _validate_username(username)
    validate_password(password)  # a typo must not use up the token
    if _has_users(catalog):
        raise Conflict("setup is already complete: log in instead")
    path = data_dir / SETUP_TOKEN_FILE_NAME
    stored = path.read_text("ascii").strip() if path.is_file() else ""
    if not stored or not hmac.compare_digest(_digest(token), stored):
        raise Forbidden("invalid setup token")
    try:
        path.unlink()  # whoever removes the file first owns the setup
    except FileNotFoundError as exc:
        raise Conflict("setup is already complete: log in instead") from exc
    return create_user(catalog, username, password, "admin")


# -- helpers --------------------------------------------------------------------------
def _validate_username(username: str) -> None:
    if not USERNAME_RE.match(username):
        raise InvalidInput(
            "a username has 2 to 64 characters: lowercase letters, digits, '_', '.' or '-'"
        )


def _validate_role(role: str) -> None:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}: use one of {', '.join(ROLES)}")


def _find_user(session: Session, username: str) -> UserRow | None:
    return session.scalar(select(UserRow).where(UserRow.username == username))


def _user_row(session: Session, username: str) -> UserRow:
    row = _find_user(session, username)
    if row is None:
        raise NotFound(f"no user {username!r}")
    return row


def _user_info(session: Session, row: UserRow) -> UserInfo:
    names = session.scalars(
        select(WorkspaceRow.name)
        .join(MembershipRow, MembershipRow.workspace_id == WorkspaceRow.id)
        .where(MembershipRow.user_id == row.id, WorkspaceRow.kind == WORKSPACE_KIND)
        .order_by(WorkspaceRow.name)
    ).all()
    return UserInfo(
        row.id, row.username, row.role, row.disabled, as_utc(row.created_at), tuple(names)
    )


def _keep_an_admin(session: Session, row: UserRow) -> None:
    """Refuse to remove the last enabled admin: nobody could manage users after it."""
    if row.role != "admin" or row.disabled:
        return
    others = session.scalar(
        select(func.count())
        .select_from(UserRow)
        .where(UserRow.role == "admin", UserRow.disabled.is_(False), UserRow.id != row.id)
    )
    if not others:
        raise Conflict(f"{row.username!r} is the last enabled admin")


def _has_users(catalog: Catalog) -> bool:
    with Session(catalog.engine) as session:
        return session.scalar(select(UserRow.id).limit(1)) is not None


def _find_key(session: Session, prefix: str) -> ApiKeyRow | None:
    return session.scalar(select(ApiKeyRow).where(ApiKeyRow.prefix == prefix))


def _key_row(session: Session, prefix: str) -> tuple[ApiKeyRow, str]:
    found = session.execute(
        select(ApiKeyRow, UserRow.username).join(UserRow).where(ApiKeyRow.prefix == prefix)
    ).first()
    if found is None:
        raise NotFound(f"no API key {prefix!r}")
    return found[0], found[1]


def _key_scopes(session: Session, key_id: int) -> tuple[str, ...]:
    return tuple(
        session.scalars(
            select(ApiKeyScopeRow.scope)
            .where(ApiKeyScopeRow.key_id == key_id)
            .order_by(ApiKeyScopeRow.scope)
        ).all()
    )


def _generation(session: Session, user_id: int) -> int:
    row = session.get(UserSessionRow, user_id)
    return row.generation if row is not None else 0  # users made before migration 0012


def _bump_generation(session: Session, user_id: int) -> None:
    bumped = session.execute(
        update(UserSessionRow)
        .where(UserSessionRow.user_id == user_id)
        .values(generation=UserSessionRow.generation + 1)
    )
    if not bumped.rowcount:  # type: ignore[attr-defined]
        session.add(UserSessionRow(user_id=user_id, generation=1))


def _key_info(row: ApiKeyRow, username: str, scopes: tuple[str, ...] = ()) -> ApiKeyInfo:
    return ApiKeyInfo(
        prefix=row.prefix,
        name=row.name,
        username=username,
        workspaces=tuple(json.loads(row.workspaces)),
        created_at=as_utc(row.created_at),
        last_used_at=as_utc(row.last_used_at) if row.last_used_at else None,
        revoked_at=as_utc(row.revoked_at) if row.revoked_at else None,
        scopes=scopes,
    )


def _store_password_hash(catalog: Catalog, user_id: int, password_hash: str) -> None:
    with Session(catalog.engine) as session, session.begin():
        session.execute(
            update(UserRow).where(UserRow.id == user_id).values(password_hash=password_hash)
        )


def _touch_key(catalog: Catalog, key_id: int) -> None:
    with Session(catalog.engine) as session, session.begin():
        row = session.get(ApiKeyRow, key_id)
        if row is not None:
            row.last_used_at = utcnow()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
