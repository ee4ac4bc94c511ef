"""The keys that encrypt a workspace's secrets at rest and its backups (issue 20).

A workspace has one *current* key, which seals everything new, and the keys it used
before, which still open what they sealed:

- ``AUTORAG_ENCRYPTION_KEY`` (base64 of 32 random bytes), when set, is the current key.
  Otherwise the current key is the workspace's key file, ``<data dir>/secrets.key``
  (32 random bytes, 0600, made on first use): the key a workspace has without any
  configuration.
- ``AUTORAG_PREVIOUS_ENCRYPTION_KEYS`` (comma-separated base64 keys) are keys rotated
  out; then, when the environment key is set, the key file: values sealed before the
  environment key was set still open, and ``autorag backup rekey`` reseals them under
  the current key.

Keys never leave this process except through ``encode_key`` (for ``autorag backup key
export``); what is shown of a key is its fingerprint, which reveals nothing of it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from autorag.errors import InvalidInput, Unavailable
from autorag.private_files import make_private_dir, tighten, warn_repaired, write_private

log = logging.getLogger(__name__)

ENCRYPTION_KEY_ENV = "AUTORAG_ENCRYPTION_KEY"  # base64 of 32 bytes
PREVIOUS_KEYS_ENV = "AUTORAG_PREVIOUS_ENCRYPTION_KEYS"  # comma-separated base64 keys
KEY_FILE_NAME = "secrets.key"
KEY_BYTES = 32
FINGERPRINT_BYTES = 8
_FINGERPRINT_INFO = b"autorag key fingerprint v1"
_MAKE_ONE = "make one with: openssl rand -base64 32"
_STANDARD = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_URL_SAFE = re.compile(r"[A-Za-z0-9_-]+={0,2}")


@dataclass(frozen=True)
class Keyring:
    """The current key (seals) and the previous ones (still open). The keys are kept
    out of ``repr``: a keyring logged or shown in a traceback shows fingerprints."""

    current: bytes = field(repr=False)
    previous: tuple[bytes, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        for key in (self.current, *self.previous):
            if len(key) != KEY_BYTES:
                raise ValueError(f"an encryption key has {KEY_BYTES} bytes, not {len(key)}")

    def candidates(self) -> tuple[bytes, ...]:
        """The keys to try when opening: current first, then previous, no repeats."""
        return tuple(dict.fromkeys((self.current, *self.previous)))

    def __repr__(self) -> str:
        previous = ", ".join(key_fingerprint(key) for key in self.previous)
        return f"Keyring(current={key_fingerprint(self.current)}, previous=[{previous}])"


def workspace_keyring(data_dir: Path, environ: Mapping[str, str] | None = None) -> Keyring:
    """The keyring of the workspace whose data folder is ``data_dir``, configured by
    ``environ`` (the process environment when None). InvalidInput, naming the variable
    and what is wrong with it (never its value), when a key there is malformed."""
    env = os.environ if environ is None else environ
    previous = _previous_keys(env.get(PREVIOUS_KEYS_ENV, ""))
    env_key = env.get(ENCRYPTION_KEY_ENV, "").strip()
    if not env_key:
        return Keyring(load_or_create_key(data_dir), previous)
    current = decode_key(env_key, ENCRYPTION_KEY_ENV)
    legacy = _existing_key_file(data_dir)
    return Keyring(current, previous + ((legacy,) if legacy is not None else ()))


def key_fingerprint(key: bytes) -> str:
    """16 hex characters naming ``key`` (an HKDF output: says nothing of the key)."""
    hkdf = HKDF(
        algorithm=hashes.SHA256(), length=FINGERPRINT_BYTES, salt=None, info=_FINGERPRINT_INFO
    )
    return hkdf.derive(key).hex()


def encode_key(key: bytes) -> str:
    """``key`` as ``AUTORAG_ENCRYPTION_KEY`` takes it."""
    return base64.b64encode(key).decode("ascii")


def decode_key(text: str, variable: str) -> bytes:
    """A key written in base64 (standard or URL-safe alphabet, padding optional) in the
    setting ``variable``; InvalidInput saying what is wrong, never echoing ``text``."""
    text = text.strip()
    url_safe = _URL_SAFE.fullmatch(text) is not None
    try:
        if not url_safe and _STANDARD.fullmatch(text) is None:
            raise ValueError("neither alphabet")
        padded = text + "=" * (-len(text) % 4)
        key = base64.b64decode(padded, altchars=b"-_" if url_safe else None, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(
            f"{variable} is not base64: a key is {KEY_BYTES} random bytes in base64 ({_MAKE_ONE})",
            code="encryption_key",
        ) from None
    if len(key) != KEY_BYTES:
        raise InvalidInput(
            f"{variable} decodes to {len(key)} bytes: a key is {KEY_BYTES} bytes ({_MAKE_ONE})",
            code="encryption_key",
        )
    return key


def _previous_keys(value: str) -> tuple[bytes, ...]:
    texts = [part.strip() for part in value.split(",") if part.strip()]
    return tuple(
        decode_key(text, f"{PREVIOUS_KEYS_ENV} (key {number} of {len(texts)})")
        for number, text in enumerate(texts, 1)
    )


def load_or_create_key(data_dir: Path) -> bytes:
    """The workspace's key file, made (0600, in a 0700 folder) on first use."""
    path = data_dir / KEY_FILE_NAME
    if not path.exists():
        make_private_dir(data_dir)
        write_private(path, os.urandom(KEY_BYTES), replace=False)
    return _read_key_file(path)


def _existing_key_file(data_dir: Path) -> bytes | None:
    """The key file as a legacy key: None when there is none (nothing was sealed with
    it) or it is damaged (logged: what it sealed is lost, the rest still works)."""
    path = data_dir / KEY_FILE_NAME
    if not path.exists():
        return None
    try:
        return _read_key_file(path)
    except Unavailable as exc:
        log.warning("%s", exc.message)
        return None


def _read_key_file(path: Path) -> bytes:
    warn_repaired(_repaired((tighten(path),)), "the secrets key")
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise Unavailable(
            f"{path} is damaged ({len(key)} bytes, not {KEY_BYTES}): the secrets sealed "
            "with it cannot be read; restore it from a backup"
        )
    return key


def _repaired(messages: Iterable[str | None]) -> list[str]:
    return [message for message in messages if message]
