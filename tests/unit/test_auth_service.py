"""Users, memberships, login and first-run setup against a real SQLite catalog."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select, update

from autorag.auth import service
from autorag.auth.passwords import needs_rehash
from autorag.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthorized
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.models import UserRow
from autorag.store.catalog.repository import Catalog

# argon2 at its production cost (tests/conftest.py): the cost is part of what is tested.
pytestmark = pytest.mark.production_password_cost

PASSWORD = "long enough password"


@pytest.fixture
def catalog(tmp_path: Path, catalog_url: str | None) -> Iterator[Catalog]:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    catalog = Catalog(engine)
    catalog.ensure_workspace("a")
    yield catalog
    engine.dispose()


def test_create_list_and_delete_users(catalog: Catalog) -> None:
    admin = service.create_user(catalog, "root", PASSWORD, "admin")
    service.create_user(catalog, "ann.b-1_", PASSWORD, "member")
    assert (admin.role, admin.disabled, admin.workspaces) == ("admin", False, ())
    assert [u.username for u in service.list_users(catalog)] == ["ann.b-1_", "root"]
    service.delete_user(catalog, "ann.b-1_")
    with pytest.raises(NotFound, match=r"no user 'ann\.b-1_'"):
        service.get_user(catalog, "ann.b-1_")


@pytest.mark.parametrize("username", ["A", "Alice", "al ice", "a" * 65, "al/ice", "älice", ""])
def test_usernames_are_validated(catalog: Catalog, username: str) -> None:
    with pytest.raises(InvalidInput, match="2 to 64 characters"):
        service.create_user(catalog, username, PASSWORD, "member")


def test_roles_passwords_and_duplicates_are_checked(catalog: Catalog) -> None:
    with pytest.raises(InvalidInput, match="unknown role 'owner'"):
        service.create_user(catalog, "bob", PASSWORD, "owner")
    with pytest.raises(InvalidInput, match="at least 10"):
        service.create_user(catalog, "bob", "short", "member")
    service.create_user(catalog, "bob", PASSWORD, "member")
    with pytest.raises(Conflict, match="already exists"):
        service.create_user(catalog, "bob", PASSWORD, "manager")


def test_authenticate(catalog: Catalog) -> None:
    service.create_user(catalog, "bob", PASSWORD, "member")
    assert service.authenticate(catalog, "bob", PASSWORD).username == "bob"
    for username, password in (("bob", "wrong password"), ("nobody", PASSWORD)):
        with pytest.raises(Unauthorized, match="invalid username or password"):
            service.authenticate(catalog, username, password)
    service.set_password(catalog, "bob", "another long password")
    with pytest.raises(Unauthorized):
        service.authenticate(catalog, "bob", PASSWORD)
    assert service.authenticate(catalog, "bob", "another long password").role == "member"


def test_a_disabled_user_is_refused_with_the_same_answer(catalog: Catalog) -> None:
    user = service.create_user(catalog, "bob", PASSWORD, "member")
    service.update_user(catalog, "bob", disabled=True)
    with pytest.raises(Unauthorized, match="invalid username or password"):
        service.authenticate(catalog, "bob", PASSWORD)
    with pytest.raises(Unauthorized):
        service.get_active_user(catalog, user.id)
    service.update_user(catalog, "bob", disabled=False)
    assert service.get_active_user(catalog, user.id).username == "bob"


def test_the_last_enabled_admin_stays(catalog: Catalog) -> None:
    service.create_user(catalog, "root", PASSWORD, "admin")
    for change in (
        lambda: service.delete_user(catalog, "root"),
        lambda: service.update_user(catalog, "root", role="member"),
        lambda: service.update_user(catalog, "root", disabled=True),
    ):
        with pytest.raises(Conflict, match="last enabled admin"):
            change()
    service.create_user(catalog, "root2", PASSWORD, "admin")
    assert service.update_user(catalog, "root", role="manager").role == "manager"
    with pytest.raises(Conflict):
        service.delete_user(catalog, "root2")


def test_memberships(catalog: Catalog) -> None:
    catalog.ensure_workspace("b")
    service.create_user(catalog, "bob", PASSWORD, "member")
    service.add_membership(catalog, "bob", "b")
    service.add_membership(catalog, "bob", "a")
    service.add_membership(catalog, "bob", "a")  # already a member: no-op
    assert service.get_user(catalog, "bob").workspaces == ("a", "b")
    service.remove_membership(catalog, "bob", "b")
    service.remove_membership(catalog, "bob", "b")
    assert service.get_user(catalog, "bob").workspaces == ("a",)
    with pytest.raises(NotFound, match="no workspace 'c'"):
        service.add_membership(catalog, "bob", "c")
    with pytest.raises(NotFound, match="no user 'eve'"):
        service.add_membership(catalog, "eve", "a")


def test_setup_token_lifecycle(catalog: Catalog, tmp_path: Path) -> None:
    token = service.ensure_setup_token(catalog, tmp_path)
    assert token is not None
    stored = tmp_path / service.SETUP_TOKEN_FILE_NAME
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and token not in stored.read_text()

    newer = service.ensure_setup_token(catalog, tmp_path)  # a restart issues a new one
    assert newer is not None and newer != token
    with pytest.raises(Forbidden, match="invalid setup token"):
        service.complete_setup(catalog, tmp_path, token, "root", PASSWORD)
    with pytest.raises(InvalidInput):  # a bad password does not use up the token
        service.complete_setup(catalog, tmp_path, newer, "root", "short")

    admin = service.complete_setup(catalog, tmp_path, newer, "root", PASSWORD)
    assert admin.role == "admin" and not stored.exists()
    with pytest.raises(Conflict, match="already complete"):
        service.complete_setup(catalog, tmp_path, newer, "root2", PASSWORD)
    assert service.ensure_setup_token(catalog, tmp_path) is None


def test_users_made_another_way_end_setup(catalog: Catalog, tmp_path: Path) -> None:
    token = service.ensure_setup_token(catalog, tmp_path)
    assert token is not None
    service.create_user(catalog, "root", PASSWORD, "admin")
    with pytest.raises(Conflict):
        service.complete_setup(catalog, tmp_path, token, "root2", PASSWORD)
    assert service.ensure_setup_token(catalog, tmp_path) is None
    assert not (tmp_path / service.SETUP_TOKEN_FILE_NAME).exists()


def test_a_weak_old_hash_is_upgraded_at_login(catalog: Catalog) -> None:
    service.create_user(catalog, "bob", PASSWORD, "member")
    weak = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(PASSWORD)
    with catalog.engine.begin() as conn:
        conn.execute(update(UserRow).values(password_hash=weak))
    service.authenticate(catalog, "bob", PASSWORD)
    with catalog.engine.connect() as conn:
        upgraded = conn.execute(select(UserRow.password_hash)).scalar_one()
    assert upgraded != weak and not needs_rehash(upgraded)
    assert service.authenticate(catalog, "bob", PASSWORD).username == "bob"
