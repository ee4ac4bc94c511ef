"""What a webhook's receiver checks: the secret, the signature, the headers.

The signature is ``sha256=`` and the hex HMAC-SHA256 of the raw body, keyed with the
whole secret as UTF-8 text (``whsec_…``). A receiver recomputes it over the bytes it
received (before parsing them) and compares in constant time; it uses ``X-Webhook-Id``
(the same for every retry of one event to one webhook, and for a redelivery after a
restart) to ignore a delivery it already handled, and the body's ``timestamp`` (signed)
or ``X-Webhook-Timestamp`` (when this attempt was sent) to refuse old ones.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from autorag.webhooks.models import SECRET_PREFIX

SIGNATURE_HEADER = "X-Webhook-Signature"
ID_HEADER = "X-Webhook-Id"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
EVENT_HEADER = "X-Webhook-Event"
SECRET_BYTES = 32
_SCHEME = "sha256="


def new_secret() -> str:
    """``whsec_`` and 32 random bytes, base64url without padding."""
    raw = secrets.token_bytes(SECRET_BYTES)
    return SECRET_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def signature(secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256(secret, body)>``."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return _SCHEME + digest


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` with ``secret`` (constant time)."""
    if not header:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())


def signed_headers(
    secret: str, body: bytes, *, delivery_id: str, timestamp: int, event: str
) -> dict[str, str]:
    """The headers of one attempt (``timestamp``: unix seconds, when it is sent)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "AutoRAG-Webhooks/1",
        SIGNATURE_HEADER: signature(secret, body),
        ID_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        EVENT_HEADER: event,
    }
