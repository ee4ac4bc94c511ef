"""The workspace keyring: the environment's key, the previous ones, the key file."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from autorag.errors import InvalidInput
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    KEY_FILE_NAME,
    PREVIOUS_KEYS_ENV,
    Keyring,
    decode_key,
    encode_key,
    key_fingerprint,
    workspace_keyring,
)

KEY_A, KEY_B, KEY_C = (bytes([n]) * 32 for n in (1, 2, 3))


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_without_configuration_the_key_file_is_the_current_key(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    ring = workspace_keyring(data_dir, environ={})
    key_file = data_dir / KEY_FILE_NAME
    assert ring.current == key_file.read_bytes() and len(ring.current) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert ring.previous == () and ring.candidates() == (ring.current,)
    assert workspace_keyring(data_dir, environ={}) == ring  # made once


def test_the_environment_key_is_current_and_the_key_file_a_legacy_key(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    file_key = workspace_keyring(data_dir, environ={}).current
    env = {ENCRYPTION_KEY_ENV: b64(KEY_A), PREVIOUS_KEYS_ENV: f"{b64(KEY_B)}, {b64(KEY_C)},"}
    ring = workspace_keyring(data_dir, environ=env)
    assert ring.current == KEY_A
    assert ring.previous == (KEY_B, KEY_C, file_key)
    assert ring.candidates() == (KEY_A, KEY_B, KEY_C, file_key)


def test_an_environment_key_makes_no_key_file(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    ring = workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: f"  {b64(KEY_A)}\n"})
    assert ring == Keyring(KEY_A)
    assert not (data_dir / KEY_FILE_NAME).exists()


def test_a_damaged_key_file_is_left_out_when_the_environment_key_is_set(tmp_path: Path) -> None:
    data_dir = tmp_path / ".autorag"
    data_dir.mkdir()
    (data_dir / KEY_FILE_NAME).write_bytes(b"short")
    assert workspace_keyring(data_dir, environ={ENCRYPTION_KEY_ENV: b64(KEY_A)}) == Keyring(KEY_A)


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
    assert ring.current == (tmp_path / KEY_FILE_NAME).read_bytes()


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
