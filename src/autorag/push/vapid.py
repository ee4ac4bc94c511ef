"""The installation's VAPID key pair (RFC 8292): what identifies this server to the
browsers' push services.

The keys come from ``push.vapid_private_key`` (``AUTORAG_VAPID_PRIVATE_KEY``: base64url
raw 32 bytes, or PEM) when set; otherwise a pair is made on first use and its private
key kept in ``system_config``, sealed (``autorag.secretbox``, purpose ``vapid_keys``,
bound to its key's name). Every process of the installation then signs with the same
pair, so the subscriptions browsers made with its public key keep working. Only the
public key ever leaves: base64url of the uncompressed P-256 point, as the browser's
``applicationServerKey`` wants it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import Engine

from autorag.config import PushSettings
from autorag.errors import InvalidInput
from autorag.push import store
from autorag.secretbox import catalog_box

__all__ = ["SEAL_PURPOSE", "STORED_KEY", "VapidKeys", "b64url", "unb64url", "vapid_keys"]

SEAL_PURPOSE = "vapid_keys"
STORED_KEY = "push.vapid_private_key"  # the system_config row; the seal is bound to it
_RAW_PRIVATE_BYTES = 32


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unb64url(text: str) -> bytes:
    """Base64url with or without padding; ValueError for anything else."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as error:
        raise ValueError("not base64url") from error


@dataclass(frozen=True)
class VapidKeys:
    private_key: ec.EllipticCurvePrivateKey = field(repr=False)

    @property
    def public_key(self) -> str:
        """Base64url of the uncompressed point: the browser's ``applicationServerKey``."""
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)

    @property
    def private_raw(self) -> str:
        """Base64url of the raw 32-byte scalar (what py_vapid's ``from_raw`` reads)."""
        number = self.private_key.private_numbers().private_value
        return b64url(number.to_bytes(_RAW_PRIVATE_BYTES, "big"))


def vapid_keys(engine: Engine, settings: PushSettings) -> VapidKeys:
    """The configured pair, else the stored one, else a new one stored now (two
    processes starting together keep the first stored)."""
    if settings.vapid_private_key is not None:
        keys = _parse(settings.vapid_private_key.get_secret_value())
        if settings.vapid_public_key and settings.vapid_public_key.rstrip("=") != keys.public_key:
            raise InvalidInput(
                "AUTORAG_VAPID_PUBLIC_KEY is not the public key of AUTORAG_VAPID_PRIVATE_KEY"
            )
        return keys
    box = catalog_box(engine, SEAL_PURPOSE)
    sealed = store.stored_value(engine, STORED_KEY)
    if sealed is None:
        fresh = VapidKeys(ec.generate_private_key(ec.SECP256R1()))
        store.store_value_once(engine, STORED_KEY, box.seal(fresh.private_raw, bound_to=STORED_KEY))
        sealed = store.stored_value(engine, STORED_KEY)
        assert sealed is not None  # stored just now, by this process or another
    return _parse(box.open(sealed, bound_to=STORED_KEY))


def _parse(text: str) -> VapidKeys:
    """A private key given as PEM, or as base64url of the raw 32 bytes."""
    text = text.strip()
    if text.startswith("-----BEGIN"):
        loaded = serialization.load_pem_private_key(text.encode("ascii"), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey) or not isinstance(
            loaded.curve, ec.SECP256R1
        ):
            raise InvalidInput("the VAPID private key must be a P-256 (prime256v1) key")
        return VapidKeys(loaded)
    try:
        raw = unb64url(text)
    except ValueError:
        raw = b""
    if len(raw) != _RAW_PRIVATE_BYTES:
        raise InvalidInput("the VAPID private key must be PEM or base64url of 32 raw bytes")
    return VapidKeys(ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1()))
