"""Password hashing with argon2id (the library's current recommended parameters)."""

from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from autorag.errors import InvalidInput

MIN_LENGTH = 10
# Bounds the work one login can cost; far above any password a person types.
MAX_LENGTH = 1024


def validate_password(password: str) -> None:
    if len(password) < MIN_LENGTH:
        raise InvalidInput(f"a password needs at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise InvalidInput(f"a password has at most {MAX_LENGTH} characters")


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher().verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """True when the hash was made with weaker parameters than today's defaults."""
    return _hasher().check_needs_rehash(password_hash)


def burn_verification_time(password: str) -> None:
    """Spend what a real verification costs, so an unknown username answers as slowly."""
    verify_password(_dummy_hash(), password)


@cache
def _hasher() -> PasswordHasher:
    return PasswordHasher()


@cache
def _dummy_hash() -> str:
    return hash_password("not a password anyone has")
