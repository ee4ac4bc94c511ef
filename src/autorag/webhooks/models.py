"""Webhooks' plain data: what the service returns to commands, routes and the web UI.

A *webhook* is a URL an admin registers, with the events it wants ([] = every one), a
secret that signs each POST, and whether it is on. Each POST to it is a *delivery*
attempt, kept in its delivery log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

# delivered: a 2xx answer; failed: no answer, or another status (a redirect included:
# none is followed); refused: the URL's host resolved to an address webhooks may not
# reach (autorag.webhooks.guard), so nothing was sent.
DeliveryStatus = Literal["delivered", "failed", "refused"]
SECRET_PREFIX = "whsec_"
# The secretbox purpose sealing webhooks' secrets, each bound to its webhook's name
# (backup/rekey.py's SEALED_COLUMNS names it too).
SECRET_PURPOSE = "webhook_secrets"
TEST_EVENT = "webhook.test"
DISABLED_EVENT = "webhook.disabled"


@dataclass(frozen=True)
class Delivery:
    id: int
    webhook: str  # the webhook's name
    event_id: int | None  # None for a test event (it is not in the event log)
    event: str  # the event's name
    delivery_id: str  # the X-Webhook-Id header: one per event and webhook, kept by retries
    attempt: int  # 1 for the first, 2… for retries
    status: DeliveryStatus
    response_code: int | None
    latency_ms: int | None
    error: str | None  # for people; never the secret, never the response's body in full
    attempted_at: datetime


@dataclass(frozen=True)
class Webhook:
    name: str
    url: str
    events: tuple[str, ...]  # () = every event
    enabled: bool
    disabled_reason: str | None  # why it was turned off (repeated failures, an admin)
    consecutive_failures: int  # events not delivered since the last one that was
    created_at: datetime
    updated_at: datetime
    last_delivery: Delivery | None = None

    def wants(self, event: str) -> bool:
        return not self.events or event in self.events
