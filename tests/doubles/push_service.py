"""``PushServiceDouble``: a browser vendor's Web Push service on loopback, strict where
the RFCs are, and the browsers subscribed to it.

A test plays the browser: ``new_browser()`` makes what ``PushManager.subscribe`` would
(a P-256 key pair and a 16-byte auth secret, and an endpoint on this service). Every
POST to an endpoint is checked as a push service does:

* RFC 8292 (VAPID): ``Authorization: vapid t=<JWT>, k=<public key>``; the JWT's header
  says ES256, its signature (raw r‖s) verifies with ``k``, its ``aud`` is this service's
  origin, its ``exp`` is in the future and at most 24 hours ahead, its ``sub`` is a
  ``mailto:`` or ``https:`` contact; with ``expect_key`` set, ``k`` must be that key.
* RFC 8030: a ``TTL`` header.
* RFC 8291 / RFC 8188: ``Content-Encoding: aes128gcm``; the body is DECRYPTED with the
  browser's private key and auth secret, and must be JSON.

A message that passes is recorded in ``received`` (201); one that does not is answered
400/401/403 and recorded in ``rejected`` with the reason. ``answer[token] = 410`` makes
one endpoint answer that status instead (a browser that unsubscribed: 404 or 410).

    double = PushServiceDouble()
    double.url = serve_asgi(double.app)
    browser = double.new_browser()
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

MAX_EXP_AHEAD_S = 24 * 3600  # RFC 8292 §2: no more than 24 hours from the request


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Browser:
    """One browser's subscription, as ``PushSubscription.toJSON()`` gives it."""

    token: str
    endpoint: str
    private_key: ec.EllipticCurvePrivateKey = field(repr=False)
    auth_secret: bytes = field(repr=False)

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)

    @property
    def auth(self) -> str:
        return b64url(self.auth_secret)

    def subscription(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


@dataclass(frozen=True)
class Received:
    token: str
    payload: Any  # the decrypted body, parsed as JSON
    claims: dict[str, Any]  # the VAPID JWT's claims, verified
    vapid_key: str  # the k= of the Authorization header
    headers: dict[str, str]


class PushServiceDouble:
    def __init__(self, *, expect_key: str | None = None) -> None:
        self.url = ""  # set by the test once served
        self.origin = ""  # the origin browsers know it by (aud); default: url's
        self.expect_key = expect_key
        self.browsers: dict[str, Browser] = {}
        self.received: list[Received] = []
        self.rejected: list[tuple[str, str]] = []  # (token, why)
        self.answer: dict[str, int] = {}  # token → the status it answers instead
        self.app = Starlette(routes=[Route("/push/{token}", self._push, methods=["POST"])])

    def new_browser(self) -> Browser:
        token = secrets.token_urlsafe(16)
        browser = Browser(
            token,
            f"{self.origin or self.url}/push/{token}",
            ec.generate_private_key(ec.SECP256R1()),
            secrets.token_bytes(16),
        )
        self.browsers[token] = browser
        return browser

    def payloads(self, browser: Browser) -> list[Any]:
        return [r.payload for r in self.received if r.token == browser.token]

    async def _push(self, request: Request) -> Response:
        token = request.path_params["token"]
        browser = self.browsers.get(token)
        if browser is None:
            return self._reject(token, 404, "no such subscription")
        if token in self.answer:
            return Response(status_code=self.answer[token])
        body = await request.body()
        try:
            claims, key = self._check_vapid(request.headers.get("authorization", ""))
        except ValueError as error:
            return self._reject(token, 401 if "signature" in str(error) else 403, str(error))
        if "ttl" not in request.headers:
            return self._reject(token, 400, "no TTL header")
        if request.headers.get("content-encoding") != "aes128gcm":
            return self._reject(token, 400, "content-encoding is not aes128gcm")
        try:
            plain = http_ece.decrypt(
                body,
                private_key=browser.private_key,
                auth_secret=browser.auth_secret,
                version="aes128gcm",
            )
            payload = json.loads(plain)
        except Exception as error:  # any failure to decrypt or parse is the sender's
            return self._reject(token, 400, f"payload does not decrypt to JSON: {error!r}")
        self.received.append(Received(token, payload, claims, key, dict(request.headers)))
        return Response(status_code=201, headers={"Location": f"{self.url}/message/1"})

    def _reject(self, token: str, status: int, why: str) -> Response:
        self.rejected.append((token, why))
        return Response(why, status_code=status)

    def _check_vapid(self, header: str) -> tuple[dict[str, Any], str]:
        """The verified claims and key of ``vapid t=…, k=…`` (ValueError saying why)."""
        scheme, _, params = header.partition(" ")
        if scheme.lower() != "vapid":
            raise ValueError(f"authorization scheme is not vapid: {header[:20]!r}")
        fields = dict(part.strip().split("=", 1) for part in params.split(",") if "=" in part)
        jwt, key = fields.get("t", ""), fields.get("k", "")
        if self.expect_key is not None and key != self.expect_key:
            raise ValueError("k is not the expected application server key")
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
        head, claims_part, signature = jwt.split(".")
        if json.loads(unb64url(head)).get("alg") != "ES256":
            raise ValueError("JWT alg is not ES256")
        raw = unb64url(signature)
        if len(raw) != 64:
            raise ValueError("JWT signature is not a raw ES256 signature")
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            public.verify(der, f"{head}.{claims_part}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise ValueError("JWT signature does not verify with k") from None
        claims: dict[str, Any] = json.loads(unb64url(claims_part))
        parts = urlsplit(self.url)
        if claims.get("aud") != (self.origin or f"{parts.scheme}://{parts.netloc}"):
            raise ValueError(f"aud {claims.get('aud')!r} is not this service's origin")
        exp = int(claims.get("exp", 0))
        if not time.time() < exp <= time.time() + MAX_EXP_AHEAD_S:
            raise ValueError("exp is not in the next 24 hours")
        if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
            raise ValueError("sub is not a mailto: or https: contact")
        return claims, key
