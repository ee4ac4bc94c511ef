"""The secret box: AES-GCM with per-purpose subkeys of the workspace's keys (derived from
the server secret, or the environment's key with the previous ones and the derivation
still opening)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from autorag.errors import Unavailable
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    PREVIOUS_KEYS_ENV,
    SALT_FILE_NAME,
    SECRET_FILE_NAME,
    Keyring,
    derived_key,
)
from autorag.secretbox import SecretBox, is_sealed

NO_ENV: dict[str, str] = {}
KEY_A, KEY_B = bytes([1]) * 32, bytes([2]) * 32


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_sealed_text_opens_with_the_same_key_and_binding(tmp_path: Path) -> None:
    box = SecretBox.for_workspace(tmp_path / ".autorag", "dlp_originals", NO_ENV)
    sealed = box.seal("card 4111111111111111", bound_to="row-1")
    assert is_sealed(sealed) and "4111" not in sealed
    assert box.seal("card 4111111111111111", bound_to="row-1") != sealed  # fresh nonce
    again = SecretBox.for_workspace(tmp_path / ".autorag", "dlp_originals", NO_ENV)
    assert again.open(sealed, bound_to="row-1") == "card 4111111111111111"
    with pytest.raises(Unavailable, match="another key"):
        again.open(sealed, bound_to="row-2")  # copied onto another row
    with pytest.raises(Unavailable):
        again.open(sealed[:-4] + "AAAA", bound_to="row-1")  # altered
    with pytest.raises(ValueError):
        again.open("plain text")


def test_purposes_and_workspaces_have_their_own_keys(tmp_path: Path) -> None:
    sealed = SecretBox.for_workspace(tmp_path / "a", "dlp_originals", NO_ENV).seal("s")
    with pytest.raises(Unavailable):
        SecretBox.for_workspace(tmp_path / "a", "provider_keys", NO_ENV).open(sealed)
    with pytest.raises(Unavailable):
        SecretBox.for_workspace(tmp_path / "b", "dlp_originals", NO_ENV).open(sealed)


@pytest.mark.parametrize("name", [SECRET_FILE_NAME, SALT_FILE_NAME])
def test_the_secret_and_salt_are_owner_only_made_once_and_repaired(
    tmp_path: Path, name: str
) -> None:
    old = os.umask(0o022)
    try:
        data_dir = tmp_path / ".autorag"
        key = derived_key(data_dir)
        path = data_dir / name
        assert len(key) == 32 and key not in path.read_bytes()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        path.chmod(0o644)
        assert derived_key(data_dir) == key
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        path.write_bytes(b"short")
        with pytest.raises(Unavailable, match="damaged"):
            derived_key(data_dir)
    finally:
        os.umask(old)


def test_values_sealed_with_the_derived_key_open_once_the_environment_key_is_set(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / ".autorag"
    old = SecretBox.for_workspace(data_dir, "model_connections", NO_ENV).seal("k1", bound_to="x")
    env = {ENCRYPTION_KEY_ENV: b64(KEY_A)}
    box = SecretBox.for_workspace(data_dir, "model_connections", env)
    assert box.open(old, bound_to="x") == "k1"
    new = box.seal("k2", bound_to="x")
    env_only = SecretBox.for_keyring(Keyring(KEY_A), "model_connections")
    assert env_only.open(new, bound_to="x") == "k2"
    with pytest.raises(Unavailable, match="another key"):
        env_only.open(old, bound_to="x")  # the derived key's, not the environment key's
    resealed = box.reseal(old, bound_to="x")
    assert resealed != old and env_only.open(resealed, bound_to="x") == "k1"
    with pytest.raises(Unavailable):
        box.reseal(old, bound_to="y")  # the binding still holds


def test_a_rotated_key_still_opens_what_it_sealed(tmp_path: Path) -> None:
    sealed = SecretBox.for_workspace(tmp_path, "p", {ENCRYPTION_KEY_ENV: b64(KEY_A)}).seal("s")
    rotated = {ENCRYPTION_KEY_ENV: b64(KEY_B), PREVIOUS_KEYS_ENV: b64(KEY_A)}
    assert SecretBox.for_workspace(tmp_path, "p", rotated).open(sealed) == "s"
    with pytest.raises(Unavailable):
        SecretBox.for_workspace(tmp_path, "p", {ENCRYPTION_KEY_ENV: b64(KEY_B)}).open(sealed)
