"""Secrets kept encrypted at rest, with a key that is never in the database.

One master key per workspace lives in ``<workspace>/.autorag/secrets.key`` (32 random
bytes, 0600, made on first use). Each kind of secret is sealed with its own subkey,
derived from the master key with HKDF-SHA256 and the purpose's name (``dlp_originals``,
later stored provider keys…), using AES-256-GCM. A sealed value is text::

    sb1:<base64url of 12-byte nonce + ciphertext + 16-byte tag>

and may be bound to what it belongs to (a row id): the binding is authenticated, so a
sealed value copied onto another row does not open. Deleting the key file makes every
sealed value unreadable; keep it with the workspace's backups.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from autorag.errors import Unavailable
from autorag.private_files import make_private_dir, tighten, warn_repaired, write_private

if TYPE_CHECKING:
    from sqlalchemy import Engine

KEY_FILE_NAME = "secrets.key"
KEY_BYTES = 32
PREFIX = "sb1:"
_NONCE_BYTES = 12
_HKDF_INFO = b"autorag secretbox v1 "


class SecretBox:
    """Seals and opens text with one purpose's key."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a secret box key has {KEY_BYTES} bytes")
        self._aead = AESGCM(key)

    @classmethod
    def derive(cls, master_key: bytes, purpose: str) -> SecretBox:
        """The box for ``purpose``: a subkey no other purpose shares."""
        hkdf = HKDF(
            algorithm=hashes.SHA256(),
            length=KEY_BYTES,
            salt=None,
            info=_HKDF_INFO + purpose.encode("utf-8"),
        )
        return cls(hkdf.derive(master_key))

    @classmethod
    def for_workspace(cls, data_dir: Path, purpose: str) -> SecretBox:
        return cls.derive(load_or_create_key(data_dir), purpose)

    def seal(self, plaintext: str, *, bound_to: str = "") -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), bound_to.encode("utf-8"))
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, value: str, *, bound_to: str = "") -> str:
        """The plaintext of a sealed value; Unavailable if another key sealed it or it
        was altered."""
        if not is_sealed(value):
            raise ValueError("not a sealed value")
        try:
            raw = base64.urlsafe_b64decode(value.removeprefix(PREFIX).encode("ascii"))
            nonce, sealed = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
            return self._aead.decrypt(nonce, sealed, bound_to.encode("utf-8")).decode("utf-8")
        except (InvalidTag, binascii.Error, ValueError, UnicodeError):
            raise Unavailable(
                "a sealed secret cannot be opened: it was sealed with another key "
                f"({KEY_FILE_NAME} replaced or lost) or altered"
            ) from None


def is_sealed(value: str) -> bool:
    return value.startswith(PREFIX)


def load_or_create_key(data_dir: Path) -> bytes:
    """The workspace's master key, made (0600, in a 0700 folder) on first use."""
    path = data_dir / KEY_FILE_NAME
    if not path.exists():
        make_private_dir(data_dir)
        write_private(path, os.urandom(KEY_BYTES), replace=False)
    warn_repaired([m for m in (tighten(path),) if m], "the secrets key")
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise Unavailable(
            f"{path} is damaged ({len(key)} bytes, not {KEY_BYTES}): the secrets sealed "
            "with it cannot be read; restore it from a backup"
        )
    return key


def catalog_secrets_dir(engine: Engine) -> Path:
    """The folder holding the key for ``engine``'s catalog: the workspace data folder
    bound to it (``autorag.store.catalog.db.bind_data_dir``), else the folder of its
    SQLite file (``.autorag/``), else the data folder of the workspace this process
    opened, else the user's AutoRAG data folder (a catalog opened with no workspace)."""
    from autorag.store.catalog.db import data_dir_of
    from autorag.workspace import last_opened_workspace

    found = data_dir_of(engine)
    if found is not None:
        return found
    workspace = last_opened_workspace()
    if workspace is not None:
        return workspace.data_dir
    return Path(platformdirs.user_data_dir("autorag"))


def catalog_box(engine: Engine, purpose: str) -> SecretBox:
    """The box sealing ``purpose``'s secrets in ``engine``'s catalog."""
    return SecretBox.for_workspace(catalog_secrets_dir(engine), purpose)
