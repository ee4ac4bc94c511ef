"""API keys: format, hashing at rest, scoping, revocation."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from autorag.auth import service
from autorag.auth.keys import generate_key, hash_key, key_matches, key_prefix, looks_like_key
from autorag.errors import InvalidInput, NotFound, Unauthorized
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.models import ApiKeyRow
from autorag.store.catalog.repository import Catalog

KEY_RE = re.compile(r"^ark_[a-z0-9]{8}_[a-z0-9]{32}$")


@pytest.fixture
def catalog(tmp_path: Path, catalog_url: str | None) -> Iterator[Catalog]:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    catalog = Catalog(engine)
    for name in ("a", "b"):
        catalog.ensure_workspace(name)
    service.create_user(catalog, "alice", "alice-password", "member")
    service.add_membership(catalog, "alice", "a")
    service.add_membership(catalog, "alice", "b")
    yield catalog
    engine.dispose()


def test_key_format_and_hash() -> None:
    new = generate_key()
    assert KEY_RE.match(new.key) and new.key.startswith(f"ark_{new.prefix}_")
    assert key_prefix(new.key) == new.prefix and looks_like_key(new.key)
    assert new.key_hash == hashlib.sha256(new.key.encode()).hexdigest() == hash_key(new.key)
    assert key_matches(new.key, new.key_hash)
    assert not key_matches(_altered(new.key), new.key_hash)
    assert generate_key().key != new.key


@pytest.mark.parametrize(
    "junk", ["", "ark_", "ark_ABCDEFGH_" + "a" * 32, "ark_abcdefgh_" + "a" * 31, "token.sig"]
)
def test_malformed_keys_have_no_prefix(junk: str) -> None:
    assert key_prefix(junk) is None


def test_only_the_hash_is_stored_and_the_key_resolves(catalog: Catalog) -> None:
    info, key = service.create_api_key(catalog, "alice", "nightly sync", ["b"])
    assert KEY_RE.match(key) and info.prefix == key_prefix(key)
    with catalog.engine.connect() as conn:
        row = conn.execute(select(ApiKeyRow)).one()
    assert row.key_hash == hash_key(key)
    assert not any(key in str(value) for value in row)  # the key itself is nowhere
    user, scope, named = service.resolve_api_key(catalog, key)
    assert user.username == "alice" and scope == {"b"} and named == frozenset()
    assert service.get_api_key(catalog, info.prefix).last_used_at is not None


def test_an_unscoped_key_has_no_limit_of_its_own(catalog: Catalog) -> None:
    _, key = service.create_api_key(catalog, "alice", "all", [])
    assert service.resolve_api_key(catalog, key)[1] is None


def test_a_revoked_key_stops_working(catalog: Catalog) -> None:
    info, key = service.create_api_key(catalog, "alice", "laptop", [])
    revoked = service.revoke_api_key(catalog, info.prefix)
    assert revoked.revoked_at is not None
    with pytest.raises(Unauthorized, match="revoked"):
        service.resolve_api_key(catalog, key)
    assert service.revoke_api_key(catalog, info.prefix).revoked_at == revoked.revoked_at
    assert [k.prefix for k in service.list_api_keys(catalog, "alice")] == [info.prefix]


def test_guessed_or_altered_keys_are_refused(catalog: Catalog) -> None:
    _, key = service.create_api_key(catalog, "alice", "laptop", [])
    for candidate in (_altered(key), "ark_zzzzzzzz_" + "a" * 32, "ark_nonsense"):
        with pytest.raises(Unauthorized, match="invalid API key"):
            service.resolve_api_key(catalog, candidate)


def test_a_disabled_owner_disables_the_key(catalog: Catalog) -> None:
    _, key = service.create_api_key(catalog, "alice", "laptop", [])
    service.update_user(catalog, "alice", disabled=True)
    with pytest.raises(Unauthorized):
        service.resolve_api_key(catalog, key)


def test_a_key_needs_existing_workspaces_and_a_name(catalog: Catalog) -> None:
    with pytest.raises(NotFound, match="no workspace 'c'"):
        service.create_api_key(catalog, "alice", "x", ["c"])
    with pytest.raises(NotFound, match="no user 'bob'"):
        service.create_api_key(catalog, "bob", "x", [])
    with pytest.raises(InvalidInput, match="key name"):
        service.create_api_key(catalog, "alice", "  ", [])
    with pytest.raises(NotFound, match="no API key"):
        service.revoke_api_key(catalog, "nope")


def _altered(key: str) -> str:
    return key[:-1] + ("a" if key[-1] != "a" else "b")
