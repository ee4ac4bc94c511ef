"""Delivering events to webhooks: ``WebhookSubscriber``, the dispatcher's subscriber.

For each event, every enabled webhook that wants it gets a POST, side by side
(``autorag.webhooks.fanout``: one after another in the dispatcher's thread while each
answers within ``HEDGE_AFTER_S``, the ones left in a pool's threads at once as soon as
the event's POSTs took longer). The body is JSON::

    {"id": 42, "event": "document.processed", "timestamp": "2026-12-04T18:20:35+00:00",
     "workspace": "default", "data": {...}}

signed as ``autorag.webhooks.signing`` says. An attempt that fails (no answer in
``webhooks.timeout_s``, or any status but 2xx: redirects are not followed) is retried
after each of ``webhooks.retry_delays_s`` (1, 2 and 4 s by default), through the
injected ``sleep``; the URL is checked again (``autorag.webhooks.guard``) before every
attempt, and a refused one is not retried. Every attempt is a row of the delivery log;
the last ones of an event's webhooks are written together, in one transaction.
A delivered event resets the webhook's count of consecutive failures, an undelivered one
adds one; at ``webhooks.disable_after_failures`` the webhook is disabled and a
``webhook.disabled`` event emitted (``store.record_outcomes``). A webhook's log is cut to
its newest ``webhooks.keep_deliveries`` rows every ``TRIM_EVERY`` rows this process
wrote to it (readers show only the newest ``keep_deliveries``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import certifi
import httpcore
from sqlalchemy import Engine

from autorag.config import WebhookSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.secretbox import SecretBox, catalog_box
from autorag.times import as_utc
from autorag.webhooks import store
from autorag.webhooks.fanout import FanOut
from autorag.webhooks.guard import Resolver, display_url, resolve_target
from autorag.webhooks.models import SECRET_PURPOSE, DeliveryStatus
from autorag.webhooks.signing import signed_headers
from autorag.webhooks.store import Attempt, StoredWebhook

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.store.catalog.outbox import Event

log = logging.getLogger(__name__)

Sleep = Callable[[float], None]
KEEP_ALIVE = 32  # idle connections to receivers kept for the next event
# Threads POSTing to the webhooks of events whose POSTs are slow; the dispatcher bounds
# how many events are delivered at once, so more only queue (a retry's wait holds one).
POST_THREADS = 32
# How long an event's POSTs run one after another before the rest start side by side: a
# receiver on loopback or a LAN answers in a millisecond or two, so five of them rarely
# reach it, and one slow receiver (or a retry's wait) holds the others back this long.
HEDGE_AFTER_S = 0.02
TRIM_EVERY = 20  # rows written to a webhook's log between two cuts to keep_deliveries
ERROR_SNIPPET = 200  # characters of a receiver's answer kept in the log
_READ_AT_MOST = 2048  # bytes of a receiver's answer read at all
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class Outcome:
    status: DeliveryStatus
    response_code: int | None
    latency_ms: int | None
    error: str | None


def event_body(
    *,
    event_id: int | None,
    name: str,
    occurred_at: datetime,
    workspace: str | None,
    data: Any,
) -> bytes:
    """The JSON body a webhook receives (compact, UTF-8): what is signed is these bytes."""
    body = {
        "id": event_id,
        "event": name,
        "timestamp": as_utc(occurred_at).isoformat(),
        "workspace": workspace,
        "data": dict(data),
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def delivery_id_for(event_id: int, occurred_at: datetime, webhook_id: int) -> str:
    """The X-Webhook-Id of an event to a webhook: the same for every retry and for a
    redelivery after a restart, so a receiver can ignore one it already handled."""
    seed = f"{event_id}|{as_utc(occurred_at).isoformat()}|{webhook_id}"
    return "whd_" + hashlib.sha256(seed.encode()).hexdigest()[:32]


class Poster:
    """One attempt: the URL checked and resolved, the body signed and POSTed to the
    address checked, the answer judged. Thread-safe (one connection pool).

    httpcore, not httpx: it follows no redirect by design, reads no proxy from the
    environment (the request goes where it was checked), and logs no URL (a hook's path
    or query often holds a token)."""

    def __init__(
        self,
        settings: WebhookSettings,
        *,
        resolver: Resolver | None = None,
        ssl_context: ssl.SSLContext | None = None,  # default: certifi's roots
    ) -> None:
        self.settings = settings
        self.resolver = resolver
        # No cap on connections: a wait for a free one would count as a failed delivery.
        self.pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or ssl.create_default_context(cafile=certifi.where()),
            max_connections=None,
            max_keepalive_connections=KEEP_ALIVE,
            keepalive_expiry=30.0,
        )

    def close(self) -> None:
        self.pool.close()

    def post(self, url: str, secret: str, body: bytes, *, delivery_id: str, event: str) -> Outcome:
        try:
            target = resolve_target(
                url, allow_private=self.settings.allow_private, resolver=self.resolver
            )
        except InvalidInput as exc:
            return Outcome("refused", None, None, exc.message)
        headers = signed_headers(
            secret, body, delivery_id=delivery_id, timestamp=int(time.time()), event=event
        )
        headers["Host"] = target.host_header
        headers["Content-Length"] = str(len(body))
        seconds = self.settings.timeout_s
        extensions: dict[str, Any] = {
            "timeout": {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}
        }
        if target.scheme == "https":
            extensions["sni_hostname"] = target.host
        started = time.perf_counter()
        try:
            with self.pool.stream(
                "POST", target.pinned_url, headers=list(headers.items()), content=body,
                extensions=extensions,
            ) as response:  # fmt: skip
                code = response.status
                # Read even after a 2xx: an answer not read to its end closes the
                # connection, and the next event pays for a new one (both ends do).
                answer = _read_some(response)
        except httpcore.TimeoutException:
            return Outcome("failed", None, _ms(started), f"no answer in {seconds:g} s")
        except (httpcore.NetworkError, httpcore.ProtocolError, OSError) as exc:
            return Outcome("failed", None, _ms(started), f"could not deliver: {_describe(exc)}")
        latency = _ms(started)
        if 200 <= code < 300:
            return Outcome("delivered", code, latency, None)
        return Outcome("failed", code, latency, _refusal(code, answer))


class WebhookSubscriber:
    """Delivers events to webhooks (see the module docstring); the dispatcher's
    ``Subscriber``. ``deliver`` returns when every webhook of the event is done, its
    retries included; it raises only on a bug."""

    name = "webhooks"

    def __init__(
        self,
        engine: Engine,
        settings: WebhookSettings,
        *,
        sleep: Sleep = time.sleep,
        resolver: Resolver | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.sleep = sleep
        self.poster = Poster(settings, resolver=resolver)
        self._box: SecretBox | None = None
        self._box_lock = threading.Lock()
        self._fan_out: FanOut | None = None
        self._lock = threading.Lock()  # the fan-out made once; the trim counts
        self._untrimmed: dict[int, int] = {}  # webhook id → log rows since its last cut

    @classmethod
    def for_context(cls, context: AppContext) -> WebhookSubscriber:
        return cls(context.catalog.engine, context.settings.webhooks)

    def close(self) -> None:
        with self._lock:
            fan_out, self._fan_out = self._fan_out, None
        if fan_out is not None:
            fan_out.close()
        self.poster.close()

    def deliver(self, event: Event) -> None:
        hooks = store.subscribed(self.engine, event.name)
        if not hooks:
            return
        body = event_body(
            event_id=event.id, name=event.name, occurred_at=event.occurred_at,
            workspace=event.workspace, data=event.data,
        )  # fmt: skip
        finals = self.fan_out().run(
            [functools.partial(self._deliver_safely, hook, event, body) for hook in hooks]
        )
        # The outcomes in one transaction: one write per event, not one per webhook.
        self._finish([final for final in finals if final is not None])

    def fan_out(self) -> FanOut:
        with self._lock:
            if self._fan_out is None:
                self._fan_out = FanOut(
                    threads=POST_THREADS, name="webhook-post", hedge_after_s=HEDGE_AFTER_S
                )
            return self._fan_out

    def _deliver_safely(
        self, hook: StoredWebhook, event: Event, body: bytes
    ) -> tuple[StoredWebhook, Attempt] | None:
        try:
            return self._deliver_one(hook, event, body)
        except Exception:  # one webhook's bug must not keep the others' deliveries
            log.exception("webhook %s: delivering event %s failed", hook.webhook.name, event.id)
            return None

    def _deliver_one(
        self, hook: StoredWebhook, event: Event, body: bytes
    ) -> tuple[StoredWebhook, Attempt] | None:
        """The attempts, with ``retry_delays_s`` between them; the last one (recorded by
        the caller), or None when the webhook went away or off between two."""
        delivery_id = delivery_id_for(event.id, event.occurred_at, hook.id)
        delays = self.settings.retry_delays_s
        for number in range(1, len(delays) + 2):
            if number > 1:
                self.sleep(delays[number - 2])
                current = store.load_webhook_by_id(self.engine, hook.id)
                if current is None or not current.webhook.enabled:
                    return None  # removed or turned off meanwhile: its retries stop
                hook = current  # its URL may have changed
            outcome = self.attempt(hook, body, delivery_id=delivery_id, event=event.name)
            row = Attempt(event.id, event.name, delivery_id, number, *_fields(outcome))
            if outcome.status != "failed" or number > len(delays):
                return hook, row
            store.record_attempt(self.engine, hook.id, row)
        return None  # pragma: no cover - the loop always returns

    def _finish(self, finals: list[tuple[StoredWebhook, Attempt]]) -> None:
        disabled = store.record_outcomes(
            self.engine, [(hook.id, row) for hook, row in finals],
            keep=self.settings.keep_deliveries,
            disable_after=self.settings.disable_after_failures,
            trim=self._due_for_trim([hook.id for hook, row in finals]),
        )  # fmt: skip
        for hook, row in finals:
            where = display_url(hook.webhook.url)
            if hook.id in disabled:
                log.warning("webhook %s (%s) disabled: %s", hook.webhook.name, where, row.error)
            elif row.status != "delivered":
                log.info("webhook %s (%s): %s not delivered: %s", hook.webhook.name, where,
                         row.event, row.error)  # fmt: skip

    def _due_for_trim(self, webhook_ids: list[int]) -> list[int]:
        """The webhooks whose logs are cut with this write: the first time this process
        writes to one, then every ``TRIM_EVERY`` rows (cutting costs a statement each)."""
        due = []
        with self._lock:
            for webhook_id in webhook_ids:
                written = self._untrimmed.get(webhook_id, TRIM_EVERY)
                if written >= TRIM_EVERY:
                    due.append(webhook_id)
                    written = 0
                self._untrimmed[webhook_id] = written + 1
        return due

    def attempt(self, hook: StoredWebhook, body: bytes, *, delivery_id: str, event: str) -> Outcome:
        """One POST of ``body`` to ``hook`` (not recorded: the caller does)."""
        try:
            secret = self.box().open(hook.secret_sealed, bound_to=hook.webhook.name)
        except (Unavailable, ValueError) as exc:
            return Outcome("failed", None, None, f"its secret cannot be opened: {exc}")
        url = hook.webhook.url
        return self.poster.post(url, secret, body, delivery_id=delivery_id, event=event)

    def box(self) -> SecretBox:
        with self._box_lock:
            if self._box is None:
                self._box = catalog_box(self.engine, SECRET_PURPOSE)
            return self._box


def _fields(outcome: Outcome) -> tuple[DeliveryStatus, int | None, int | None, str | None]:
    return outcome.status, outcome.response_code, outcome.latency_ms, outcome.error


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _read_some(response: httpcore.Response) -> bytes:
    """At most ``_READ_AT_MOST`` bytes of an answer: a receiver may send gigabytes."""
    read = b""
    try:
        for chunk in response.iter_stream():
            read += chunk
            if len(read) >= _READ_AT_MOST:
                break
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.TimeoutException, OSError):
        pass
    return read[:_READ_AT_MOST]


def _refusal(code: int, answer: bytes) -> str:
    what = "a redirect, not followed" if 300 <= code < 400 else "not a 2xx"
    text = _CONTROL.sub(" ", answer.decode("utf-8", errors="replace")).strip()
    if len(text) > ERROR_SNIPPET:
        text = text[: ERROR_SNIPPET - 1] + "…"
    return f"answered {code} ({what})" + (f": {text}" if text else "")


def _describe(exc: Exception) -> str:
    reason = str(exc) or type(exc).__name__
    return _CONTROL.sub(" ", reason)[:ERROR_SNIPPET]
