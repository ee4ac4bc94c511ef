"""Short-lived bearer tokens: an HMAC-SHA256-signed ``{sub, gen, iat, exp}`` payload.

``gen`` is the user's token generation when the token was issued
(``autorag.auth.service.token_generation``): a password or role change and a logout
bump it, and a token of an older generation is refused.

The form is ``<base64url payload>.<base64url signature>``. The signing secret lives in
``<workspace data dir>/secret.key`` (``autorag.keyring``, which also derives the
workspace's encryption key from it) so tokens outlive a server restart.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from autorag.errors import Unauthorized
from autorag.keyring import SECRET_BYTES, SECRET_FILE_NAME, load_or_create_secret

__all__ = ["SECRET_FILE_NAME", "TokenClaims", "TokenSigner", "load_or_create_secret"]

# Far longer than any token this module issues; refuses to parse junk of any size.
_MAX_TOKEN_CHARS = 512


@dataclass(frozen=True)
class TokenClaims:
    user_id: int
    generation: int
    issued_at: int
    expires_at: int


class TokenSigner:
    def __init__(
        self, secret: bytes, ttl_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        if len(secret) < SECRET_BYTES:
            raise ValueError(f"the signing secret needs at least {SECRET_BYTES} bytes")
        self._secret = secret
        self.ttl_seconds = ttl_seconds
        self._clock = clock

    def issue(self, user_id: int, generation: int) -> str:
        now = int(self._clock())
        claims = {"sub": user_id, "gen": generation, "iat": now, "exp": now + self.ttl_seconds}
        payload = _b64encode(json.dumps(claims, separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}"

    def verify(self, token: str) -> TokenClaims:
        """The token's claims; Unauthorized if it is malformed, forged or expired."""
        payload, sep, signature = token.partition(".")
        if len(token) > _MAX_TOKEN_CHARS or not sep or not token.isascii():
            raise Unauthorized("malformed token")
        if not hmac.compare_digest(signature, self._sign(payload)):
            raise Unauthorized("invalid token")
        claims = _decode_claims(payload)
        if claims.expires_at <= self._clock():
            raise Unauthorized("token expired")
        return claims

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self._secret, payload.encode("ascii"), hashlib.sha256)
        return _b64encode(digest.digest())


def _decode_claims(payload: str) -> TokenClaims:
    # Only ever reached with a valid signature, so a failure here is our own bug or an
    # old format (no ``gen``); either way the token is refused, not crashed on.
    try:
        data = json.loads(_b64decode(payload))
        return TokenClaims(int(data["sub"]), int(data["gen"]), int(data["iat"]), int(data["exp"]))
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise Unauthorized("malformed token") from exc


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
