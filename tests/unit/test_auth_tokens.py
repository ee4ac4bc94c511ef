"""Bearer tokens: signed, expiring, refused when tampered with; the secret file."""

from __future__ import annotations

import base64
import json
import stat
import threading
from pathlib import Path

import pytest

from autorag.auth.tokens import SECRET_FILE_NAME, TokenSigner, load_or_create_secret
from autorag.errors import Unauthorized

SECRET = b"s" * 32


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_an_issued_token_verifies_to_its_claims() -> None:
    signer = TokenSigner(SECRET, ttl_seconds=600, clock=Clock(1_000))
    claims = signer.verify(signer.issue(42, 3))
    assert (claims.user_id, claims.generation, claims.issued_at, claims.expires_at) == (
        42,
        3,
        1_000,
        1_600,
    )


def test_a_token_expires_after_its_ttl() -> None:
    clock = Clock(1_000)
    signer = TokenSigner(SECRET, ttl_seconds=600, clock=clock)
    token = signer.issue(7, 3)
    clock.now = 1_599
    assert signer.verify(token).user_id == 7
    clock.now = 1_600
    with pytest.raises(Unauthorized, match="expired"):
        signer.verify(token)


def _reencode(claims: dict[str, int]) -> str:
    raw = json.dumps(claims, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_a_tampered_payload_is_refused() -> None:
    signer = TokenSigner(SECRET, ttl_seconds=600, clock=Clock(1_000))
    signature = signer.issue(7, 3).split(".")[1]
    forged = _reencode({"sub": 1, "gen": 3, "iat": 1_000, "exp": 1_600})  # become user 1
    with pytest.raises(Unauthorized, match="invalid"):
        signer.verify(f"{forged}.{signature}")
    longer = _reencode({"sub": 7, "gen": 3, "iat": 1_000, "exp": 9_999_999})
    with pytest.raises(Unauthorized, match="invalid"):
        signer.verify(f"{longer}.{signature}")


def test_a_tampered_signature_or_another_secret_is_refused() -> None:
    signer = TokenSigner(SECRET, ttl_seconds=600, clock=Clock(1_000))
    token = signer.issue(7, 3)
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    with pytest.raises(Unauthorized):
        signer.verify(flipped)
    other = TokenSigner(b"o" * 32, ttl_seconds=600, clock=Clock(1_000))
    with pytest.raises(Unauthorized):
        other.verify(token)


@pytest.mark.parametrize("junk", ["", ".", "abc", "a.b.c", "é.é", "x" * 600 + ".y"])
def test_junk_is_refused_not_crashed_on(junk: str) -> None:
    with pytest.raises(Unauthorized):
        TokenSigner(SECRET, ttl_seconds=600).verify(junk)


def test_a_short_secret_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        TokenSigner(b"short", ttl_seconds=600)


def test_the_secret_is_created_once_owner_only_and_kept(tmp_path: Path) -> None:
    first = load_or_create_secret(tmp_path)
    path = tmp_path / SECRET_FILE_NAME
    assert len(first) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_secret(tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE_NAME]  # no temp files left


def test_processes_starting_together_agree_on_one_secret(tmp_path: Path) -> None:
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def load() -> None:
        barrier.wait()
        results.append(load_or_create_secret(tmp_path))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and len(set(results)) == 1
