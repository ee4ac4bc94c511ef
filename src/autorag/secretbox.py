"""Secrets kept encrypted at rest, with keys that are never in the database.

The workspace's keyring (``autorag.keyring``) gives the master keys: the current one
(``AUTORAG_ENCRYPTION_KEY``, else scrypt of the server secret ``.autorag/secret.key``
with the salt ``.autorag/encryption.salt``) seals, and every key of the ring opens
(current, then previous, then the derivation when the environment key replaced it, then
the key file of earlier versions), so values sealed before a rotation still open and
``reseal`` moves them to the current key. Each kind of secret is sealed with its own
subkey, derived from a master key with HKDF-SHA256 and the purpose's name
(``dlp_originals``, ``model_connections``…), using AES-256-GCM. A sealed value is text::

    sb1:<base64url of 12-byte nonce + ciphertext + 16-byte tag>

and may be bound to what it belongs to (a row id): the binding is authenticated, so a
sealed value copied onto another row does not open. Losing every key that sealed a value
makes it unreadable; keep the environment key, or the server secret and salt, safe.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from autorag.errors import Unavailable
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    KEY_BYTES,
    SALT_FILE_NAME,
    SECRET_FILE_NAME,
    Keyring,
    workspace_keyring,
)

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = [
    "KEY_BYTES",
    "PREFIX",
    "SecretBox",
    "catalog_box",
    "catalog_secrets_dir",
    "is_sealed",
]

PREFIX = "sb1:"
_NONCE_BYTES = 12
_HKDF_INFO = b"autorag secretbox v1 "


class SecretBox:
    """Seals text with one purpose's current key; opens it with any of its keys."""

    def __init__(self, key: bytes, *, previous: Sequence[bytes] = ()) -> None:
        for each in (key, *previous):
            if len(each) != KEY_BYTES:
                raise ValueError(f"a secret box key has {KEY_BYTES} bytes")
        self._aeads = [AESGCM(each) for each in dict.fromkeys((key, *previous))]

    @classmethod
    def derive(
        cls, master_key: bytes, purpose: str, *, previous: Sequence[bytes] = ()
    ) -> SecretBox:
        """The box for ``purpose``: subkeys no other purpose shares, sealing with
        ``master_key``'s and opening with it or ``previous`` ones'."""
        return cls(
            _subkey(master_key, purpose), previous=[_subkey(key, purpose) for key in previous]
        )

    @classmethod
    def for_keyring(cls, keyring: Keyring, purpose: str) -> SecretBox:
        return cls.derive(keyring.current, purpose, previous=keyring.candidates()[1:])

    @classmethod
    def for_workspace(
        cls, data_dir: Path, purpose: str, environ: Mapping[str, str] | None = None
    ) -> SecretBox:
        return cls.for_keyring(workspace_keyring(data_dir, environ), purpose)

    def seal(self, plaintext: str, *, bound_to: str = "") -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aeads[0].encrypt(nonce, plaintext.encode("utf-8"), bound_to.encode("utf-8"))
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(self, value: str, *, bound_to: str = "") -> str:
        """The plaintext of a sealed value; Unavailable if none of the keys sealed it or
        it was altered."""
        if not is_sealed(value):
            raise ValueError("not a sealed value")
        try:
            raw = base64.urlsafe_b64decode(value.removeprefix(PREFIX).encode("ascii"))
        except (binascii.Error, ValueError):
            raw = b""
        nonce, sealed = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
        for aead in self._aeads:
            try:
                return aead.decrypt(nonce, sealed, bound_to.encode("utf-8")).decode("utf-8")
            except (InvalidTag, ValueError, UnicodeError):
                continue
        raise Unavailable(
            "a sealed secret cannot be opened: it was sealed with another key "
            f"({SECRET_FILE_NAME} or {SALT_FILE_NAME} replaced or lost, or "
            f"{ENCRYPTION_KEY_ENV} changed without the old key among the previous ones) or "
            "altered"
        )

    def reseal(self, value: str, *, bound_to: str = "") -> str:
        """``value`` sealed anew with the current key (opened with any key)."""
        return self.seal(self.open(value, bound_to=bound_to), bound_to=bound_to)


def _subkey(master_key: bytes, purpose: str) -> bytes:
    hkdf = HKDF(
        algorithm=hashes.SHA256(),
        length=KEY_BYTES,
        salt=None,
        info=_HKDF_INFO + purpose.encode("utf-8"),
    )
    return hkdf.derive(master_key)


def is_sealed(value: str) -> bool:
    return value.startswith(PREFIX)


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
