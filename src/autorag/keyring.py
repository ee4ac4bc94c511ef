"""The keys that encrypt a workspace's secrets at rest and its backups (issue 20).

A workspace has one *current* key, which seals everything new, and the keys it used
before, which still open what they sealed (seed 003's decrypt chain):

- ``AUTORAG_ENCRYPTION_KEY`` (base64 of 32 random bytes), when set, is the current key.
  Otherwise the current key is derived: scrypt of the workspace's server secret
  (``<data dir>/secret.key``, which also signs login tokens) with a stored random salt
  (``<data dir>/encryption.salt``), both 0600 and made on first use.
- ``AUTORAG_PREVIOUS_ENCRYPTION_KEYS`` (comma-separated base64 keys) are keys rotated
  out; then, when the environment key is set, the legacy derivation (what was sealed
  before the environment key was set still opens); then the random key file
  ``<data dir>/secrets.key`` that versions before the derivation used, when there is one.
  ``autorag backup rekey`` reseals everything under the current key.

Keys never leave this process except through ``encode_key`` (for ``autorag backup key
export``); what is shown of a key is its fingerprint, which reveals nothing of it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from autorag.errors import InvalidInput, Unavailable
from autorag.private_files import make_private_dir, tighten, warn_repaired, write_private

log = logging.getLogger(__name__)

ENCRYPTION_KEY_ENV = "AUTORAG_ENCRYPTION_KEY"  # base64 of 32 bytes
PREVIOUS_KEYS_ENV = "AUTORAG_PREVIOUS_ENCRYPTION_KEYS"  # comma-separated base64 keys
KEY_FILE_NAME = "secrets.key"  # the random key of versions before the derivation
SECRET_FILE_NAME = "secret.key"  # the server secret: signs login tokens, derives the key
SALT_FILE_NAME = "encryption.salt"
KEY_BYTES = 32
SECRET_BYTES = 32
SALT_BYTES = 16
# Node's scryptSync defaults (the seed's derivation): 16 MiB and ~50 ms, once per process.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
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
    # The key file of earlier versions; the derivation once the environment replaced it
    # (only a derived key makes the salt: without one nothing was sealed with it).
    key_file = _legacy(data_dir, (KEY_FILE_NAME,), lambda: _read_key_file(data_dir))
    if not env_key:
        return Keyring(derived_key(data_dir), previous + key_file)
    current = decode_key(env_key, ENCRYPTION_KEY_ENV)
    derived = _legacy(data_dir, (SECRET_FILE_NAME, SALT_FILE_NAME), lambda: derived_key(data_dir))
    return Keyring(current, previous + derived + key_file)


def derived_key(data_dir: Path) -> bytes:
    """scrypt of the server secret with the stored salt, both made on first use."""
    secret = load_or_create_secret(data_dir)
    return _scrypt(secret, _load_or_create(data_dir / SALT_FILE_NAME, SALT_BYTES, "salt"))


def load_or_create_secret(data_dir: Path) -> bytes:
    """The workspace's server secret (login tokens' signing key), made on first use."""
    return _load_or_create(data_dir / SECRET_FILE_NAME, SECRET_BYTES, "server secret")


@lru_cache(maxsize=16)
def _scrypt(secret: bytes, salt: bytes) -> bytes:
    # Cached: a process opens many secret boxes; the inputs stay in memory either way.
    kdf = Scrypt(salt=salt, length=KEY_BYTES, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    return kdf.derive(secret)


def _load_or_create(path: Path, size: int, what: str) -> bytes:
    if not path.exists():
        make_private_dir(path.parent)
        write_private(path, secrets.token_bytes(size), replace=False)
    lost = (
        f"Deleting it signs everyone out and, unless {ENCRYPTION_KEY_ENV} is set, leaves "
        "the secrets and backups sealed with the key derived from it unreadable"
    )
    return _read_private(path, size, what, lost, exact=False)


def _read_key_file(data_dir: Path) -> bytes:
    lost = "The secrets sealed with it cannot be read"
    return _read_private(data_dir / KEY_FILE_NAME, KEY_BYTES, "secrets key", lost, exact=True)


def _read_private(path: Path, size: int, what: str, lost: str, *, exact: bool) -> bytes:
    """A key file's bytes, its mode repaired first; Unavailable, saying what ``lost``
    means, when it is damaged (shorter than ``size``; other than ``size`` if ``exact``)."""
    repaired = tighten(path)
    if repaired:
        warn_repaired([repaired], f"the {what}")
    value = path.read_bytes()
    if len(value) < size or (exact and len(value) != size):
        raise Unavailable(
            f"{path} is damaged ({len(value)} bytes, not {size}): restore it from a backup. {lost}"
        )
    return value


def _legacy(data_dir: Path, needs: tuple[str, ...], read: Callable[[], bytes]) -> tuple[bytes, ...]:
    """A legacy key for the ring: none when a file it is made from is missing, or
    damaged (logged: what it sealed is lost, the rest still works)."""
    if not all((data_dir / name).exists() for name in needs):
        return ()
    try:
        return (read(),)
    except Unavailable as exc:
        log.warning("%s", exc.message)
        return ()


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
