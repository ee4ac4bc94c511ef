"""Passwords: the policy a new one must meet, and argon2id hashing in a bounded pool.

The policy follows NIST SP 800-63B (5.1.1.2): a length floor, no composition rules, and
a refusal of passwords attackers try first: common and breached ones (a list shipped
with the package, ``autorag.auth.common_passwords``), one character repeated, a short
pattern repeated, or a keyboard, alphabet or digit run. Every refusal says why.

Hashing and verifying cost 64 MiB of memory each (the library's recommended
parameters); at most ``HASH_CONCURRENCY`` run at once, process-wide, so a burst of
logins cannot exhaust memory: at most ``HASH_QUEUE`` more wait for a turn (up to
``HASH_WAIT_S``), and the rest raise ``Busy`` at once (answered 429 with Retry-After).
"""

from __future__ import annotations

import threading
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from autorag.auth.common_passwords import common_passwords
from autorag.errors import InvalidInput, RateLimited

MIN_LENGTH = 10
# Bounds the work one login can cost; far above any password a person types.
MAX_LENGTH = 1024
# argon2 operations at once (each holds 64 MiB while it runs), and how long one waits
# for a turn before the caller is told to come back later.
HASH_CONCURRENCY = 2
HASH_QUEUE = 8
HASH_WAIT_S = 5.0
BUSY_RETRY_AFTER_S = 2

# Keyboard rows and columns, the alphabet and the digits: a password that is a stretch
# of one of these (either way round) is refused.
_RUNS = (
    "01234567890",
    "abcdefghijklmnopqrstuvwxyz",
    "`1234567890-=",
    "~!@#$%^&*()_+",
    "qwertyuiop[]\\",
    "asdfghjkl;'",
    "zxcvbnm,./",
    "qwertyuiopasdfghjklzxcvbnm",
    "qwertzuiopasdfghjklyxcvbnm",
    "azertyuiopqsdfghjklmwxcvbn",
    "1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/-['=]",
    "qazwsxedcrfvtgbyhnujmikolp",
    "7894561230",
)
# A unit this short repeated to the password's length is no better than one character.
_MAX_REPEATED_UNIT = 4


class Busy(RateLimited):
    """Every password-hashing slot is taken: the caller should retry later."""

    def __init__(self) -> None:
        super().__init__(
            f"the server is busy checking other passwords; retry in {BUSY_RETRY_AFTER_S} s",
            retry_after=BUSY_RETRY_AFTER_S,
        )


def password_problem(password: str) -> str | None:
    """Why ``password`` may not be set, or None when it may."""
    if len(password) < MIN_LENGTH:
        return f"a password needs at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"a password has at most {MAX_LENGTH} characters"
    folded = password.lower()
    if len(set(folded)) == 1:
        return "this password is one character repeated: choose a longer phrase instead"
    if _repeats_a_short_unit(folded):
        return "this password repeats a short pattern: choose a longer phrase instead"
    if _is_a_run(folded):
        return (
            "this password is a keyboard, alphabet or digit run (like qwertyuiop or "
            "1234567890): choose a phrase nobody would guess"
        )
    if folded in common_passwords() or folded.strip() in common_passwords():
        return (
            "this password is on a list of common or breached passwords: "
            "choose one nobody else uses"
        )
    return None


def validate_password(password: str) -> None:
    problem = password_problem(password)
    if problem is not None:
        raise InvalidInput(problem)


def hash_password(password: str) -> str:
    with _slot():
        return _hasher().hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    with _slot():
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


class _Slots:
    """``size`` argon2 operations at once, ``queue`` more waiting; the rest refused."""

    def __init__(self, size: int, queue: int, wait_s: float) -> None:
        self._semaphore = threading.BoundedSemaphore(size)
        self._admitted = threading.BoundedSemaphore(size + queue)
        self._wait_s = wait_s

    def __enter__(self) -> None:
        if not self._admitted.acquire(blocking=False):
            raise Busy()
        if not self._semaphore.acquire(timeout=self._wait_s):
            self._admitted.release()
            raise Busy()

    def __exit__(self, *_: object) -> None:
        self._semaphore.release()
        self._admitted.release()


_SLOTS = _Slots(HASH_CONCURRENCY, HASH_QUEUE, HASH_WAIT_S)


def _slot() -> _Slots:
    return _SLOTS


def _repeats_a_short_unit(folded: str) -> bool:
    for size in range(2, _MAX_REPEATED_UNIT + 1):
        unit = folded[:size]
        if (unit * (len(folded) // size + 1))[: len(folded)] == folded:
            return True
    return False


def _is_a_run(folded: str) -> bool:
    return any(folded in run or folded in run[::-1] for run in _RUNS)


@cache
def _hasher() -> PasswordHasher:
    return PasswordHasher()


@cache
def _dummy_hash() -> str:
    return hash_password("not a password anyone has")
