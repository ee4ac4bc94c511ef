"""Issue 15 in units: the password policy, the bounded argon2 pool, per (user, address)
login backoff, and the admin:protection scope in the permission check."""

from __future__ import annotations

import pytest

from autorag.auth import passwords
from autorag.auth.common_passwords import MIN_ENTRY_LENGTH, common_passwords
from autorag.auth.passwords import MIN_LENGTH, Busy, password_problem, validate_password
from autorag.auth.permissions import PROTECTION_SCOPE, is_allowed, is_protected_caller
from autorag.auth.ratelimit import BACKOFF_MAX_S, FREE_FAILURES, LoginGuard
from autorag.errors import InvalidInput, RateLimited


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


# -- the policy ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("password", "reason"),
    [
        (" " * 10, "one character repeated"),
        ("aaaaaaaaaa", "one character repeated"),
        ("AAAAAAAAAAAA", "one character repeated"),
        ("abcabcabcabc", "repeats a short pattern"),
        ("1212121212", "repeats a short pattern"),
        ("password12", "common or breached"),
        ("Password12", "common or breached"),  # case does not help
        ("iloveyou12", "common or breached"),
        ("1234567890", "keyboard, alphabet or digit run"),
        ("0987654321", "keyboard, alphabet or digit run"),
        ("qwertyuiop", "keyboard, alphabet or digit run"),
        ("POIUYTREWQ", "keyboard, alphabet or digit run"),
        ("abcdefghij", "keyboard, alphabet or digit run"),
        ("asdfghjkl;'", "keyboard, alphabet or digit run"),
        ("1qaz2wsx3edc", "keyboard, alphabet or digit run"),
        ("short one", f"at least {MIN_LENGTH} characters"),
    ],
)
def test_weak_passwords_are_refused_with_the_reason(password: str, reason: str) -> None:
    assert reason in (password_problem(password) or "")
    with pytest.raises(InvalidInput, match=reason.split()[0]):
        validate_password(password)


@pytest.mark.parametrize(
    "password",
    ["a long enough password", "correct horse battery staple", "kx8-qv2mzr", "qwertyuiop!x"],
)
def test_ordinary_passphrases_pass(password: str) -> None:
    assert password_problem(password) is None


def test_the_shipped_list_is_there_and_only_as_long_as_it_needs() -> None:
    listed = common_passwords()
    assert len(listed) > 1000
    assert MIN_ENTRY_LENGTH <= MIN_LENGTH
    assert all(len(p) >= MIN_ENTRY_LENGTH and p == p.lower() for p in listed)
    assert {"password12", "1234567890", "qwertyuiop"} <= listed


# -- the pool ------------------------------------------------------------------------------
def test_a_full_pool_refuses_at_once_and_frees_on_exit() -> None:
    slots = passwords._Slots(1, 0, 0.0)
    with slots:
        with pytest.raises(Busy) as refused, slots:
            pass
        assert isinstance(refused.value, RateLimited)
        assert refused.value.retry_after == passwords.BUSY_RETRY_AFTER_S
    with slots:  # released: usable again
        pass


def test_a_queued_check_that_gets_no_turn_is_refused_and_leaves_its_place() -> None:
    slots = passwords._Slots(1, 1, 0.0)
    with slots:
        for _ in range(3):  # admitted to the queue, no turn within 0 s: refused each time
            with pytest.raises(Busy), slots:
                pass
    with slots:
        pass


# -- login backoff -------------------------------------------------------------------------
def test_failures_back_off_the_pair_exponentially() -> None:
    clock = Clock()
    guard = LoginGuard(1000, clock=clock)
    for _ in range(FREE_FAILURES):
        guard.attempt("203.0.113.1", "root")
        guard.failed("203.0.113.1", "root")
    guard.attempt("203.0.113.1", "root")  # still free
    guard.failed("203.0.113.1", "root")  # one over: 1 s
    with pytest.raises(RateLimited, match="this user from this address") as first:
        guard.attempt("203.0.113.1", "ROOT")  # usernames fold to lowercase
    assert first.value.retry_after == 1
    clock.now += 1
    guard.attempt("203.0.113.1", "root")
    guard.failed("203.0.113.1", "root")  # two over: 2 s
    with pytest.raises(RateLimited) as second:
        guard.attempt("203.0.113.1", "root")
    assert second.value.retry_after == 2
    # Elsewhere, the same user is not slowed down; here, another user is not either.
    guard.attempt("198.51.100.5", "root")
    guard.attempt("203.0.113.1", "ann")


def test_backoff_is_capped_and_a_success_clears_it() -> None:
    clock = Clock()
    guard = LoginGuard(10_000, clock=clock)
    for _ in range(60):
        guard.failed("203.0.113.1", "root")
    with pytest.raises(RateLimited) as capped:
        guard.attempt("203.0.113.1", "root")
    assert capped.value.retry_after == BACKOFF_MAX_S
    guard.succeeded("203.0.113.1", "root")
    guard.attempt("203.0.113.1", "root")


def test_the_address_window_still_counts_every_attempt() -> None:
    guard = LoginGuard(2, clock=Clock())
    guard.attempt("203.0.113.1", "a")
    guard.attempt("203.0.113.1", "b")
    with pytest.raises(RateLimited, match="too many login attempts"):
        guard.attempt("203.0.113.1", "c")
    guard.attempt("203.0.113.2", "a")


# -- the protection scope --------------------------------------------------------------------
def test_policy_changes_need_a_login_or_the_protection_scope() -> None:
    assert is_allowed("manager", "token", None, "policy:write")
    assert not is_allowed("manager", "api_key", None, "policy:write")
    scoped = frozenset({PROTECTION_SCOPE})
    assert is_allowed("manager", "api_key", None, "policy:write", key_scopes=scoped)
    assert not is_allowed("member", "api_key", None, "policy:write", key_scopes=scoped)
    # Credentials stay a login's only, whatever the key's scopes.
    for permission in ("users:admin", "keys:admin", "keys:write", "dlp:reveal"):
        assert not is_allowed("admin", "api_key", None, permission, key_scopes=scoped)
    assert is_protected_caller("token", frozenset())
    assert not is_protected_caller("api_key", frozenset())
    assert is_protected_caller("api_key", scoped)
