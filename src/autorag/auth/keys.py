"""API keys for scripts: ``ark_<prefix8>_<secret32>``.

Only the SHA-256 of the whole key is stored (the key carries 165 random bits, so a slow
hash buys nothing); the prefix is stored in clear to find the row and to name the key
in listings and revocations.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
from dataclasses import dataclass

KEY_MARKER = "ark_"
PREFIX_CHARS = 8
SECRET_CHARS = 32
_ALPHABET = string.ascii_lowercase + string.digits
_KEY_RE = re.compile(rf"^ark_([a-z0-9]{{{PREFIX_CHARS}}})_[a-z0-9]{{{SECRET_CHARS}}}$")


@dataclass(frozen=True)
class NewKey:
    prefix: str
    key: str  # shown once, never stored

    @property
    def key_hash(self) -> str:
        return hash_key(self.key)


def generate_key() -> NewKey:
    prefix = _random(PREFIX_CHARS)
    return NewKey(prefix, f"{KEY_MARKER}{prefix}_{_random(SECRET_CHARS)}")


def looks_like_key(credential: str) -> bool:
    """Whether a bearer credential claims to be an API key (rather than a login token)."""
    return credential.startswith(KEY_MARKER)


def key_prefix(key: str) -> str | None:
    """The prefix of a well-formed key, None for anything else."""
    match = _KEY_RE.match(key)
    return match.group(1) if match else None


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_matches(key: str, key_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), key_hash)


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))
