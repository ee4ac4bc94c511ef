"""What the push service hands out: subscriptions, a user's topics, a send's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Outcome = Literal["sent", "gone", "failed", "refused"]


@dataclass(frozen=True)
class Subscription:
    """A browser's Web Push subscription (its endpoint is a capability: never shown)."""

    id: int
    user_id: int
    endpoint: str = field(repr=False)
    p256dh: str = field(repr=False)  # the browser's P-256 public key, base64url
    auth: str = field(repr=False)  # its 16-byte auth secret, base64url
    user_agent: str | None
    created_at: datetime
    last_success_at: datetime | None


@dataclass(frozen=True)
class TopicChoice:
    """One topic as a user sees it in their notification settings."""

    topic: str
    label: str
    description: str
    enabled: bool
    applies: bool  # whether this user's role is ever notified of it


@dataclass(frozen=True)
class Notification:
    """The payload a browser shows: words for people, no secret, no document text."""

    title: str
    body: str
    url: str  # a page of the web UI, opened when the notification is clicked
    event: str  # the event's name ("push.test" for a test)
    topic: str | None = None

    def payload(self) -> dict[str, str | None]:
        return {
            "title": self.title,
            "body": self.body,
            "url": self.url,
            "event": self.event,
            "topic": self.topic,
        }


@dataclass(frozen=True)
class SendReport:
    """How a notification went: counts of subscriptions by outcome."""

    sent: int = 0
    removed: int = 0  # answered 404/410: the browser dropped it, so did we
    failed: int = 0  # the push service failed or could not be reached
    refused: int = 0  # the endpoint is not one this server sends to (SSRF guard)
