"""``PushService``: Web Push as the routes and the event subscriber use it.

A user subscribes a browser (its endpoint and keys, checked: ``push.endpoints`` for the
URL, a P-256 point and a 16-byte secret for the keys), unsubscribes their own, and
chooses the topics that notify them (``push.topics``). ``notify`` sends an event's
notification to every subscription of every user it concerns who has not turned its
topic off; ``send_test`` sends a test. A subscription a push service answers 404 or 410
for is removed: the browser dropped it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import Engine

from autorag.config import Settings
from autorag.errors import InvalidInput, NotFound, Unavailable
from autorag.push import store, wire
from autorag.push.endpoints import check_endpoint
from autorag.push.models import Notification, Outcome, SendReport, Subscription, TopicChoice
from autorag.push.topics import (
    ACTOR,
    DEFAULT_ENABLED,
    TOPIC_NAMES,
    TOPICS,
    EventLike,
    Topic,
    topic_for,
)
from autorag.push.vapid import VapidKeys, unb64url, vapid_keys

if TYPE_CHECKING:
    from autorag.context import AppContext

__all__ = ["PushService", "SendFunction"]

log = logging.getLogger(__name__)

AUTH_SECRET_BYTES = 16
MAX_USER_AGENT = 300
SEND_THREADS = 8  # subscriptions sent to at once: one slow push service delays no other
SendFunction = Callable[[Subscription, Mapping[str, Any], VapidKeys, wire.WireSettings], Outcome]


class PushService:
    """Web Push for one installation (see the module docstring)."""

    def __init__(
        self, engine: Engine, settings: Settings, *, send: SendFunction = wire.send
    ) -> None:
        self.engine = engine
        self.settings = settings
        self._send = send
        self._keys: VapidKeys | None = None

    @classmethod
    def for_context(cls, context: AppContext) -> PushService:
        return cls(context.catalog.engine, context.settings)

    @property
    def allow_private(self) -> bool:
        return self.settings.webhooks.allow_private

    def keys(self) -> VapidKeys:
        """The VAPID pair, made and stored on first use when none is configured."""
        if self._keys is None:
            self._keys = vapid_keys(self.engine, self.settings.push)
        return self._keys

    def public_key(self) -> str:
        return self.keys().public_key

    # -- subscriptions ----------------------------------------------------------------------
    def subscribe(
        self, user_id: int, endpoint: str, p256dh: str, auth: str, user_agent: str | None = None
    ) -> Subscription:
        """Keep the browser's subscription for the user (InvalidInput for an endpoint
        this server will not send to, or keys that are not a browser's)."""
        self._require_enabled()
        _check_keys(p256dh, auth)  # first: checking the endpoint may ask DNS
        check_endpoint(endpoint, allow_private=self.allow_private)
        agent = (user_agent or "")[:MAX_USER_AGENT] or None
        return store.save_subscription(self.engine, user_id, endpoint, p256dh, auth, agent)

    def unsubscribe(self, user_id: int, endpoint: str) -> None:
        """Remove the user's own subscription; NotFound when they have none there (another
        user's looks exactly as missing)."""
        if not store.delete_subscription(self.engine, user_id, endpoint):
            raise NotFound("no such push subscription of yours")

    def subscriptions(self, user_id: int) -> list[Subscription]:
        return store.subscriptions_of(self.engine, [user_id])

    # -- preferences ------------------------------------------------------------------------
    def preferences(self, user_id: int) -> list[TopicChoice]:
        role = store.user_role(self.engine, user_id)
        chosen = store.preferences(self.engine, [user_id])[user_id]
        return [
            TopicChoice(
                topic.name,
                topic.label,
                topic.description,
                chosen.get(topic.name, DEFAULT_ENABLED),
                topic.applies_to(role),
            )
            for topic in TOPICS
        ]

    def set_preferences(self, user_id: int, choices: Mapping[str, bool]) -> list[TopicChoice]:
        """Turn topics on or off (only those named); InvalidInput for an unknown one."""
        unknown = sorted(set(choices) - set(TOPIC_NAMES))
        if unknown:
            raise InvalidInput(
                f"no notification topic {', '.join(unknown)}: the topics are "
                f"{', '.join(TOPIC_NAMES)}"
            )
        store.set_preferences(self.engine, user_id, choices)
        return self.preferences(user_id)

    # -- sending ----------------------------------------------------------------------------
    def notify(self, event: EventLike) -> SendReport:
        """Send ``event``'s notification to the users it concerns who follow its topic."""
        topic = topic_for(event.name)
        if topic is None or not self.settings.push.enabled:
            return SendReport()
        users = self._followers(topic, event)
        if not users:
            return SendReport()
        return self._deliver(topic.words(event), store.subscriptions_of(self.engine, users))

    def send_test(self, user_ids: Sequence[int] | None) -> SendReport:
        """A test notification to these users' browsers (None: every subscription)."""
        self._require_enabled()
        note = Notification(
            "Notifications work",
            "This is a test notification from AutoRAG.",
            "/#/settings",
            "push.test",
        )
        return self._deliver(note, store.subscriptions_of(self.engine, user_ids))

    def user_ids(self, usernames: Iterable[str]) -> list[int]:
        """The ids of these enabled users; NotFound naming the first that is not one."""
        ids: list[int] = []
        for name in dict.fromkeys(usernames):
            found = store.active_users(self.engine, username=name)
            if not found:
                raise NotFound(f"no user {name!r}")
            ids.extend(found)
        return ids

    def _followers(self, topic: Topic, event: EventLike) -> list[int]:
        if topic.audience == ACTOR:
            if not event.actor:
                return []
            candidates = list(store.active_users(self.engine, username=event.actor))
        else:
            candidates = list(store.active_users(self.engine, role="admin"))
        chosen = store.preferences(self.engine, candidates)
        return [u for u in candidates if chosen[u].get(topic.name, DEFAULT_ENABLED)]

    def _deliver(self, note: Notification, subscriptions: Iterable[Subscription]) -> SendReport:
        targets = list(subscriptions)
        if not targets:
            return SendReport()
        keys = self.keys()
        options = wire.WireSettings(
            subject=self.settings.push.vapid_subject,
            ttl_s=self.settings.push.ttl_s,
            timeout_s=self.settings.push.timeout_s,
            allow_private=self.allow_private,
        )
        payload = note.payload()
        with ThreadPoolExecutor(min(SEND_THREADS, len(targets))) as pool:
            outcomes = list(pool.map(lambda s: self._send_one(s, payload, keys, options), targets))
        return SendReport(
            sent=outcomes.count("sent"),
            removed=outcomes.count("gone"),
            failed=outcomes.count("failed"),
            refused=outcomes.count("refused"),
        )

    def _send_one(
        self,
        subscription: Subscription,
        payload: Mapping[str, str | None],
        keys: VapidKeys,
        options: wire.WireSettings,
    ) -> Outcome:
        outcome = self._send(subscription, payload, keys, options)
        if outcome == "sent":
            store.mark_success(self.engine, subscription.id)
        elif outcome == "gone":
            store.remove_subscription(self.engine, subscription.id)
            log.info("push subscription %s removed: its push service forgot it", subscription.id)
        return outcome

    def _require_enabled(self) -> None:
        if not self.settings.push.enabled:
            raise Unavailable("web push is turned off on this server (push.enabled)")


def _check_keys(p256dh: str, auth: str) -> None:
    """The browser's keys: a P-256 public point and a 16-byte auth secret, base64url."""
    try:
        point = unb64url(p256dh)
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        secret = unb64url(auth)
    except ValueError:
        raise InvalidInput(
            "the subscription's keys are not a browser's: p256dh is a P-256 public key "
            "and auth a 16-byte secret, both base64url"
        ) from None
    if len(point) != 65 or len(secret) != AUTH_SECRET_BYTES:
        raise InvalidInput("p256dh is an uncompressed P-256 point; auth has 16 bytes")
