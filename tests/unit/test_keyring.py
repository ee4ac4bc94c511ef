"""The workspace keyring: the environment's key, the previous ones, the key derived from
the server secret, the key file of earlier versions."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from autorag.errors import InvalidInput
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    KEY_FILE_NAME,
    PREVIOUS_KEYS_ENV,
    SALT_FILE_NAME,
    SECRET_FILE_NAME,
    Keyring,
    decode_key,
    encode_key,
    key_fingerprint,
    workspace_keyring,
)

KEY_A, KEY_B, KEY_C = (bytes([n]) * 32 for n in (1, 2, 3))


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def scrypt(secret: bytes, salt: bytes) -> bytes:
    """The seed's derivation, written out here: Node's scryptSync defaults."""
    return Scrypt(salt=salt, length=32, n=2**14, r=8, p=1).derive(secret)


def test_without_configuration_the_key_is_scrypt_of_the_server_secret(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    ring = workspace_keyring(data_dir, environ={})
    secret, salt = (data_dir / name for name in (SECRET_FILE_NAME, SALT_FILE_NAME))
    assert len(secret.read_bytes()) == 32 and len(salt.read_bytes()) == 16
    assert ring.current == scrypt(secret.read_bytes(), salt.read_bytes())
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in (secret, salt))
    assert ring.previous == () and ring.candidates() == (ring.current,)
    assert not (data_dir / KEY_FILE_NAME).exists()  # no random key file any more
    assert workspace_keyring(data_dir, environ={}) == ring  # made once


def test_a_new_salt_or_secret_makes_another_key(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    first = workspace_keyring(data_dir, environ={}).current
    (data_dir / SALT_FILE_NAME).write_bytes(bytes(16))
    second = workspace_keyring(data_dir, environ={}).current
    (data_dir / SECRET_FILE_NAME).write_bytes(bytes(32))
    third = workspace_keyring(data_dir, environ={}).current
    assert len({first, second, third}) == 3
    assert third == scrypt(bytes(32), bytes(16))


def test_the_environment_key_is_current_then_previous_then_the_derivation(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / ".autorag"
    derived = workspace_keyring(data_dir, environ={}).current
    env = {ENCRYPTION_KEY_ENV: b64(KEY_A), PREVIOUS_KEYS_ENV: f"{b64(KEY_B)}, {b64(KEY_C)},"}
    ring = workspace_keyring(data_dir, environ=env)
    assert ring.current == KEY_A
    assert ring.previous == (KEY_B, KEY_C, derived)
    assert ring.candidates() == (KEY_A, KEY_B, KEY_C, derived)


def test_the_key_file_of_earlier_versions_still_opens_last(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    data_dir.mkdir()
    (data_dir / KEY_FILE_NAME).write_bytes(KEY_C)  # a workspace made before the derivation
    ring = workspace_keyring(data_dir, environ={})
    assert ring.current == scrypt(
        (data_dir / SECRET_FILE_NAME).read_bytes(), (data_dir / SALT_FILE_NAME).read_bytes()
    )
    assert ring.previous == (KEY_C,)
    with_env = workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: b64(KEY_A)})
    assert with_env.candidates() == (KEY_A, ring.current, KEY_C)


def test_an_environment_key_makes_no_secret_salt_or_key_file(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    ring = workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: f"  {b64(KEY_A)}\n"})
    assert ring == Keyring(KEY_A)
    assert not data_dir.exists()


def test_a_server_secret_without_a_salt_is_no_legacy_key(tmp_path: Path) -> None:
    """Login tokens make the secret; only a derived key makes the salt, so without one
    nothing was sealed with the derivation and it is not tried."""
    data_dir = tmp_path / ".autorag"
    data_dir.mkdir()
    (data_dir / SECRET_FILE_NAME).write_bytes(bytes(32))
    assert workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: b64(KEY_A)}) == Keyring(KEY_A)
    assert not (data_dir / SALT_FILE_NAME).exists()


@pytest.mark.parametrize("name", [KEY_FILE_NAME, SALT_FILE_NAME, SECRET_FILE_NAME])
def test_damaged_legacy_keys_are_left_out_when_the_environment_key_is_set(
    tmp_path: Path, name: str
) -> None:
    data_dir = tmp_path / ".autorag"
    workspace_keyring(data_dir, environ={})
    (data_dir / name).write_bytes(b"short")
    ring = workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: b64(KEY_A)})
    assert ring.current == KEY_A and len(ring.previous) == (0 if name != KEY_FILE_NAME else 1)


def test_candidates_have_no_repeats_current_first() -> None:
    ring = Keyring(KEY_A, (KEY_B, KEY_A, KEY_B, KEY_C))
    assert ring.candidates() == (KEY_A, KEY_B, KEY_C)


def test_url_safe_and_unpadded_keys_are_read() -> None:
    key = bytes(range(200, 232))  # its base64 has '+' or '/', so the URL-safe form differs
    standard = base64.b64encode(key).decode()
    url_safe = base64.urlsafe_b64encode(key).decode()
    assert standard != url_safe
    for text in (standard, url_safe, url_safe.rstrip("=")):
        assert decode_key(text, ENCRYPTION_KEY_ENV) == key
    assert decode_key(encode_key(key), ENCRYPTION_KEY_ENV) == key


BAD = {
    "not base64": ("this is not a key!", "is not base64"),
    "two alphabets": (b64(KEY_A)[:-3] + "-+=", "is not base64"),
    "too short": (b64(bytes(16)), "decodes to 16 bytes"),
    "too long": (b64(bytes(48)), "decodes to 48 bytes"),
}


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("variable", [ENCRYPTION_KEY_ENV, PREVIOUS_KEYS_ENV])
def test_a_malformed_key_is_refused_naming_the_variable_not_the_value(
    tmp_path: Path, case: tuple[str, str], variable: str
) -> None:
    value, problem = case
    env = {ENCRYPTION_KEY_ENV: b64(KEY_A)}
    env[variable] = value if variable == ENCRYPTION_KEY_ENV else f"{b64(KEY_B)},{value}"
    with pytest.raises(InvalidInput) as caught:
        workspace_keyring(tmp_path, environ=env)
    message = caught.value.message
    assert message.startswith(variable) and problem in message
    assert value not in message and value.rstrip("=") not in message
    assert caught.value.code == "encryption_key"
    if variable == PREVIOUS_KEYS_ENV:
        assert "key 2 of 2" in message


def test_an_empty_environment_key_means_unset(tmp_path: Path) -> None:
    ring = workspace_keyring(tmp_path, environ={ENCRYPTION_KEY_ENV: "  ", PREVIOUS_KEYS_ENV: ""})
    assert ring == workspace_keyring(tmp_path, environ={})


def test_the_process_environment_is_read_when_none_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENCRYPTION_KEY_ENV, b64(KEY_C))
    assert workspace_keyring(tmp_path).current == KEY_C


def test_fingerprints_name_keys_without_showing_them() -> None:
    fingerprint = key_fingerprint(KEY_A)
    assert len(fingerprint) == 16 and int(fingerprint, 16) >= 0
    assert key_fingerprint(KEY_A) == fingerprint != key_fingerprint(KEY_B)
    assert fingerprint not in KEY_A.hex() and fingerprint not in b64(KEY_A)
    secret = os.urandom(32)
    shown = repr(Keyring(secret, (KEY_B,)))
    assert key_fingerprint(secret) in shown and key_fingerprint(KEY_B) in shown
    assert secret.hex() not in shown and repr(secret) not in shown and b64(secret) not in shown


def test_a_key_of_the_wrong_size_makes_no_keyring() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Keyring(bytes(16))
    with pytest.raises(ValueError, match="32 bytes"):
        Keyring(KEY_A, (bytes(31),))
