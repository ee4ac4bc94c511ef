"""Password hashing: argon2id, salted, verified without raising."""

from __future__ import annotations

import pytest

from autorag.auth.passwords import (
    MIN_LENGTH,
    hash_password,
    needs_rehash,
    validate_password,
    verify_password,
)
from autorag.errors import InvalidInput

# argon2 at its production cost (tests/conftest.py): the cost is part of what is tested.
pytestmark = pytest.mark.production_password_cost


def test_a_hash_verifies_its_password_only() -> None:
    stored = hash_password("correct horse battery")
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")  # RFC 9106's low-memory
    assert verify_password(stored, "correct horse battery")
    assert not verify_password(stored, "correct horse batterY")
    assert not needs_rehash(stored)


def test_the_same_password_hashes_differently_each_time() -> None:
    assert hash_password("correct horse battery") != hash_password("correct horse battery")


def test_a_damaged_hash_refuses_instead_of_raising() -> None:
    assert not verify_password("not-a-hash", "correct horse battery")
    assert not verify_password("", "correct horse battery")


def test_password_length_is_checked_with_a_clear_message() -> None:
    validate_password("kx8-qv2mzr"[:MIN_LENGTH])
    with pytest.raises(InvalidInput, match="at least 10 characters"):
        validate_password("kx8-qv2mz"[: MIN_LENGTH - 1])
    with pytest.raises(InvalidInput, match="at most"):
        validate_password("kx8-qv2mzr" * 500)
