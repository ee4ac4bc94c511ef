"""The secret box: AES-GCM with per-purpose subkeys of a workspace key kept in a file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from autorag.errors import Unavailable
from autorag.secretbox import KEY_FILE_NAME, SecretBox, is_sealed, load_or_create_key


def test_sealed_text_opens_with_the_same_key_and_binding(tmp_path: Path) -> None:
    box = SecretBox.for_workspace(tmp_path / ".autorag", "dlp_originals")
    sealed = box.seal("card 4111111111111111", bound_to="row-1")
    assert is_sealed(sealed) and "4111" not in sealed
    assert box.seal("card 4111111111111111", bound_to="row-1") != sealed  # fresh nonce
    again = SecretBox.for_workspace(tmp_path / ".autorag", "dlp_originals")
    assert again.open(sealed, bound_to="row-1") == "card 4111111111111111"
    with pytest.raises(Unavailable, match="another key"):
        again.open(sealed, bound_to="row-2")  # copied onto another row
    with pytest.raises(Unavailable):
        again.open(sealed[:-4] + "AAAA", bound_to="row-1")  # altered
    with pytest.raises(ValueError):
        again.open("plain text")


def test_purposes_and_workspaces_have_their_own_keys(tmp_path: Path) -> None:
    sealed = SecretBox.for_workspace(tmp_path / "a", "dlp_originals").seal("s")
    with pytest.raises(Unavailable):
        SecretBox.for_workspace(tmp_path / "a", "provider_keys").open(sealed)
    with pytest.raises(Unavailable):
        SecretBox.for_workspace(tmp_path / "b", "dlp_originals").open(sealed)


def test_the_key_file_is_owner_only_made_once_and_repaired(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        data_dir = tmp_path / ".autorag"
        key = load_or_create_key(data_dir)
        path = data_dir / KEY_FILE_NAME
        assert len(key) == 32 and path.read_bytes() == key
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        path.chmod(0o644)
        assert load_or_create_key(data_dir) == key
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        path.write_bytes(b"short")
        with pytest.raises(Unavailable, match="damaged"):
            load_or_create_key(data_dir)
    finally:
        os.umask(old)
