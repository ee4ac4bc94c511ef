"""Webhook signatures: HMAC-SHA256 of the raw body with the whole secret, as a receiver
recomputes it (the vector below is computed with nothing but the standard library)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from autorag.backup.rekey import SEALED_COLUMNS
from autorag.webhooks.models import SECRET_PURPOSE
from autorag.webhooks.signing import (
    EVENT_HEADER,
    ID_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    new_secret,
    signature,
    signed_headers,
    verify,
)


def test_a_secret_is_whsec_and_32_random_bytes_base64url() -> None:
    secrets = {new_secret() for _ in range(50)}
    assert len(secrets) == 50
    for secret in secrets:
        assert secret.startswith("whsec_")
        raw = base64.urlsafe_b64decode(secret.removeprefix("whsec_") + "=")
        assert len(raw) == 32


def test_the_signature_is_the_hex_hmac_of_the_raw_body() -> None:
    secret, body = "whsec_test", b'{"event":"webhook.test","data":{}}'
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert signature(secret, body) == f"sha256={expected}"
    assert verify(secret, body, f"sha256={expected}")
    assert not verify(secret, body + b" ", f"sha256={expected}")  # one byte more
    assert not verify("whsec_other", body, f"sha256={expected}")
    assert not verify(secret, body, None) and not verify(secret, body, "sha256=")


def test_the_headers_name_the_delivery_its_time_and_event() -> None:
    headers = signed_headers("whsec_x", b"{}", delivery_id="whd_1", timestamp=1764872400,
                             event="document.processed")  # fmt: skip
    assert headers[SIGNATURE_HEADER] == signature("whsec_x", b"{}")
    assert (headers[ID_HEADER], headers[TIMESTAMP_HEADER]) == ("whd_1", "1764872400")
    assert headers[EVENT_HEADER] == "document.processed"
    assert headers["Content-Type"] == "application/json"
    assert "whsec_x" not in "".join(headers.values())


def test_rekey_reseals_webhook_secrets() -> None:
    purposes = {
        (column.purpose, column.table_name, column.value_column, column.bound_to_column)
        for column in SEALED_COLUMNS
    }
    assert (SECRET_PURPOSE, "webhooks", "secret_sealed", "name") in purposes
