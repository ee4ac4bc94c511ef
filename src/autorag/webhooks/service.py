"""``WebhookService``: webhooks as every face uses them (commands, routes, the web UI).

``create`` registers a URL (checked by ``autorag.webhooks.guard``: no private target
unless ``webhooks.allow_private``) with the events it wants ([] = every one) and makes
its secret: ``whsec_`` and 32 random bytes, returned once, stored sealed
(``autorag.secretbox``, bound to the webhook's name) and never shown again. The other
methods list, change, switch, remove webhooks, read their delivery log, and send a test
event (one attempt, at once, recorded in the log; it counts toward no failure count).
"""

from __future__ import annotations

import builtins
import logging
import re
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from autorag.config import Settings
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.secretbox import catalog_box
from autorag.store.catalog.models import utcnow
from autorag.store.catalog.outbox import EVENT_NAMES
from autorag.webhooks import store
from autorag.webhooks.delivery import WebhookSubscriber, event_body
from autorag.webhooks.guard import Resolver, display_url, resolve_target
from autorag.webhooks.models import SECRET_PURPOSE, TEST_EVENT, Delivery, Webhook
from autorag.webhooks.signing import new_secret
from autorag.webhooks.store import Attempt, StoredWebhook

if TYPE_CHECKING:
    from autorag.context import AppContext

log = logging.getLogger(__name__)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)
MAX_DELIVERIES = 500  # at most this many rows of a log in one answer


class WebhookService:
    """The webhooks of an installation (see the module docstring)."""

    def __init__(
        self, engine: Engine, settings: Settings, *, resolver: Resolver | None = None
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.resolver = resolver

    @classmethod
    def for_context(cls, context: AppContext) -> WebhookService:
        return cls(context.catalog.engine, context.settings)

    # -- registering -------------------------------------------------------------------
    def create(self, name: str, url: str, events: Sequence[str] = ()) -> tuple[Webhook, str]:
        """A new enabled webhook and its secret (shown this once). ``Conflict`` when the
        name is taken; ``InvalidInput`` for a bad name, URL, refused target or event."""
        checked_name = _checked_name(name)
        checked_url = self._checked_url(url)
        wanted = _checked_events(events)
        secret = new_secret()
        sealed = catalog_box(self.engine, SECRET_PURPOSE).seal(secret, bound_to=checked_name)
        if not store.insert_webhook(
            self.engine, name=checked_name, url=checked_url, events=wanted, secret_sealed=sealed
        ):
            raise Conflict(f"a webhook named {name!r} exists", code="webhook_exists")
        log.info("webhook %s added: %s", checked_name, display_url(checked_url))
        return self.get(checked_name), secret

    def list(self) -> list[Webhook]:
        return [stored.webhook for stored in store.list_webhooks(self.engine)]

    def get(self, name: str) -> Webhook:
        return self._stored(name).webhook

    def update(
        self, name: str, *, url: str | None = None, events: Sequence[str] | None = None
    ) -> Webhook:
        """Change what is given: the URL (checked again) or the events ([] = every one)."""
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = self._checked_url(url)
        if events is not None:
            changes["events"] = _checked_events(events)
        self._change(name, changes)
        return self.get(name)

    def rotate_secret(self, name: str) -> tuple[Webhook, str]:
        """A new secret for the webhook (shown this once); the old one signs nothing
        more from now on: deliveries still retrying are signed with the new one."""
        stored = self._stored(name)
        secret = new_secret()
        sealed = catalog_box(self.engine, SECRET_PURPOSE).seal(secret, bound_to=stored.webhook.name)
        self._change(name, {"secret_sealed": sealed})
        log.info("webhook %s: secret rotated", stored.webhook.name)
        return self.get(name), secret

    def enable(self, name: str) -> Webhook:
        """On again, its failure count and the reason it was off cleared."""
        self._change(name, {"enabled": True, "disabled_reason": None, "consecutive_failures": 0})
        return self.get(name)

    def disable(self, name: str, reason: str = "turned off by an admin") -> Webhook:
        self._change(name, {"enabled": False, "disabled_reason": reason})
        return self.get(name)

    def delete(self, name: str) -> None:
        """The webhook and its delivery log removed."""
        if not store.delete_webhook(self.engine, name):
            raise _missing(name)
        log.info("webhook %s removed", name)

    # -- the delivery log, the test event ----------------------------------------------
    def deliveries(self, name: str, limit: int = 50) -> builtins.list[Delivery]:
        """The webhook's delivery log, newest first: one row per attempt."""
        # The log keeps the newest keep_deliveries (cut in batches: there may be a few more).
        bounded = max(1, min(limit, MAX_DELIVERIES, self.settings.webhooks.keep_deliveries))
        return store.list_deliveries(self.engine, self._stored(name), limit=bounded)

    def send_test(self, name: str, *, actor: str | None = None) -> Delivery:
        """A ``webhook.test`` event POSTed once to the webhook, enabled or not, now; the
        attempt as its log records it (delivered or not: the answer says)."""
        stored = self._stored(name)
        data = {"webhook": name, "message": "A test event sent from AutoRAG."}
        if actor:
            data["actor"] = actor
        body = event_body(
            event_id=None, name=TEST_EVENT, occurred_at=utcnow(), workspace=None, data=data
        )
        delivery_id = f"whd_test_{secrets.token_hex(12)}"
        subscriber = WebhookSubscriber(self.engine, self.settings.webhooks, resolver=self.resolver)
        try:
            outcome = subscriber.attempt(stored, body, delivery_id=delivery_id, event=TEST_EVENT)
        finally:
            subscriber.close()
        row = Attempt(None, TEST_EVENT, delivery_id, 1, outcome.status, outcome.response_code,
                      outcome.latency_ms, outcome.error)  # fmt: skip
        store.record_outcome(
            self.engine, stored.id, row, keep=self.settings.webhooks.keep_deliveries,
            disable_after=None, counts=False,
        )  # fmt: skip
        return store.list_deliveries(self.engine, stored, limit=1)[0]

    # -- helpers -----------------------------------------------------------------------
    def _stored(self, name: str) -> StoredWebhook:
        stored = store.load_webhook(self.engine, name)
        if stored is None:
            raise _missing(name)
        return stored

    def _change(self, name: str, changes: dict[str, Any]) -> None:
        if not store.update_webhook(self.engine, name, changes):
            raise _missing(name)

    def _checked_url(self, url: str) -> str:
        url = url.strip()
        resolve_target(url, allow_private=self.settings.webhooks.allow_private,
                       resolver=self.resolver)  # fmt: skip
        return url


def _missing(name: str) -> NotFound:
    return NotFound(f"no webhook {name[:100]!r}", code="webhook_not_found")


def _checked_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidInput(
            f"bad webhook name {name[:80]!r}: letters, digits, '.', '_' and '-', "
            "at most 64, starting with a letter or digit"
        )
    return name


def _checked_events(events: Sequence[str]) -> list[str]:
    """The events, known ones only, without repeats; [] means every event."""
    wanted = sorted({event.strip() for event in events if event.strip()})
    unknown = [event for event in wanted if event not in EVENT_NAMES]
    if unknown:
        raise InvalidInput(
            f"unknown event {unknown[0][:64]!r}: one of {', '.join(sorted(EVENT_NAMES))}",
            code="unknown_event",
        )
    return wanted
