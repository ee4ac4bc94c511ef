"""Webhooks delivered to a real receiver on loopback (tests/doubles/webhook_receiver.py),
which verifies the HMAC over the raw body with the secret shown once: through the event
dispatcher from a committed transaction; retries at the configured delays (recorded by
an injected sleep, never waited for) against a receiver that fails twice; auto-disable
after 10 consecutive failures with one ``webhook.disabled`` event; no redirect followed;
every webhook of an event at once; the SSRF guard with ``allow_private`` off (the
default) at creation and before each attempt; the test event; the delivery log trimmed.

Reaching the loopback receiver needs ``webhooks.allow_private = true``: every service
and subscriber here sets it, except where the refusal is what is tested.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from tests.doubles.webhook_receiver import Receiver, running_receiver
from tests.workspaces import catalog_url, new_workspace

from autorag.config import Settings, WebhookSettings
from autorag.errors import Conflict, InvalidInput
from autorag.jobs.dispatcher import EventDispatcher
from autorag.store.catalog import outbox
from autorag.store.catalog.db import bind_data_dir, create_catalog_engine, migrate
from autorag.store.catalog.models import utcnow
from autorag.store.catalog.outbox import Event
from autorag.webhooks import store
from autorag.webhooks.delivery import TRIM_EVERY, WebhookSubscriber
from autorag.webhooks.service import WebhookService

WAIT_S = 30.0  # a bound for what the dispatcher does at once


@dataclass
class World:
    engine: Engine
    receiver: Receiver
    settings: Settings  # allow_private on

    def service(self, **webhooks: Any) -> WebhookService:
        return WebhookService(self.engine, _with(self.settings, **webhooks))

    def subscriber(self, sleeps: list[float] | None = None, **webhooks: Any) -> WebhookSubscriber:
        recorded = sleeps if sleeps is not None else []
        return WebhookSubscriber(
            self.engine, _with(self.settings, **webhooks).webhooks, sleep=recorded.append
        )

    def hook(self, name: str, events: list[str] | None = None) -> str:
        """A webhook POSTing to /<name> on the receiver, which learns its secret."""
        path = f"/{name}"
        _, secret = self.service().create(name, self.receiver.url + path, events or [])
        self.receiver.secrets[path] = secret
        return path

    def event(self, name: str = "document.processed", **data: Any) -> Event:
        """An event committed to the outbox (as the change that emits it would)."""
        payload = data or {"document_id": 7, "title": "notes.txt"}
        with self.engine.begin() as conn:
            event_id = outbox.emit(conn, name, payload, workspace="default", actor="root")
        return Event(event_id, name, utcnow(), "default", "root", payload)


def _with(settings: Settings, **webhooks: Any) -> Settings:
    changed = settings.webhooks.model_copy(update=webhooks)
    return settings.model_copy(update={"webhooks": changed})


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None
) -> Iterator[World]:
    workspace = new_workspace(tmp_path_factory.mktemp("webhooks") / "kb", module_catalog_url)
    engine = create_catalog_engine(catalog_url(workspace))
    bind_data_dir(engine, workspace.data_dir)
    migrate(engine)
    settings = Settings(webhooks=WebhookSettings(allow_private=True))
    try:
        with running_receiver() as receiver:
            yield World(engine, receiver, settings)
    finally:
        engine.dispose()


@pytest.fixture(autouse=True)
def _fresh(world: World) -> Iterator[None]:
    """Each test starts with no webhook and an empty receiver."""
    yield
    for hook in store.list_webhooks(world.engine):
        store.delete_webhook(world.engine, hook.webhook.name)
    with world.receiver.lock:
        world.receiver.received.clear()
        world.receiver.scripts.clear()
        world.receiver.redirects.clear()
        world.receiver.barrier = None


def _until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)
    return found


def test_a_committed_event_reaches_its_webhooks_signed(world: World) -> None:
    everything = world.hook("everything")
    wanted = world.hook("wanted", ["document.processed"])
    other = world.hook("other", ["backup.failed"])
    off = world.hook("off")
    world.service().disable("off")
    with world.engine.begin() as conn:  # rolled back: no event, nothing delivered
        outbox.emit(conn, "document.processed", {"document_id": 1})
        conn.rollback()
    subscriber = world.subscriber()
    dispatcher = EventDispatcher(world.engine, [subscriber], poll_interval=0.05)
    dispatcher.start()
    try:
        committed = world.event(document_id=7, title="notes.txt")
        _until(lambda: world.receiver.at(everything) and world.receiver.at(wanted), "delivery")
    finally:
        dispatcher.stop()
        subscriber.close()
    assert world.receiver.at(other) == [] and world.receiver.at(off) == []
    for path in (everything, wanted):
        (got,) = world.receiver.at(path)
        assert got.signed, "the signature did not match the raw body"
        assert got.json == {
            "id": committed.id,
            "event": "document.processed",
            "timestamp": got.json["timestamp"],
            "workspace": "default",
            "data": {"document_id": 7, "title": "notes.txt"},
        }
        assert got.headers["x-webhook-event"] == "document.processed"
        assert got.headers["x-webhook-id"].startswith("whd_")
        assert abs(int(got.headers["x-webhook-timestamp"]) - time.time()) < 3600
        assert got.headers["content-type"] == "application/json"
    ids = {world.receiver.at(path)[0].headers["x-webhook-id"] for path in (everything, wanted)}
    assert len(ids) == 2  # one id per event and webhook
    (logged,) = world.service().deliveries("everything")
    assert (logged.status, logged.response_code, logged.attempt) == ("delivered", 200, 1)
    assert logged.event_id == committed.id and logged.latency_ms is not None


def test_retries_at_1_2_4_seconds_against_a_receiver_that_fails_twice(world: World) -> None:
    path = world.hook("flaky")
    world.receiver.scripts[path] = [500, 503, 200]
    sleeps: list[float] = []
    subscriber = world.subscriber(sleeps)
    subscriber.deliver(world.event())
    assert sleeps == [1.0, 2.0]  # asked of the injected sleep, never waited
    attempts = world.receiver.at(path)
    assert len(attempts) == 3 and all(one.signed for one in attempts)
    assert len({one.headers["x-webhook-id"] for one in attempts}) == 1  # kept by retries
    log = world.service().deliveries("flaky")
    assert [(d.attempt, d.status, d.response_code) for d in reversed(log)] == [
        (1, "failed", 500),
        (2, "failed", 503),
        (3, "delivered", 200),
    ]
    assert "answered 500" in (log[-1].error or "") and "\x00" not in (log[-1].error or "")
    assert world.service().get("flaky").consecutive_failures == 0

    world.receiver.scripts[path] = [500]  # fails every time: 1, 2 and 4 s, then given up
    sleeps.clear()
    subscriber.deliver(world.event())
    subscriber.close()
    assert sleeps == [1.0, 2.0, 4.0]
    assert len(world.receiver.at(path)) == 3 + 4
    assert world.service().get("flaky").consecutive_failures == 1


def test_ten_consecutive_failures_disable_the_webhook_and_say_so(world: World) -> None:
    path = world.hook("doomed", ["document.processed"])
    world.receiver.scripts[path] = [500]
    before = outbox.latest_id(world.engine)
    subscriber = world.subscriber(retry_delays_s=[])
    for count in range(1, 10):
        subscriber.deliver(world.event())
        hook = world.service().get("doomed")
        assert (hook.enabled, hook.consecutive_failures) == (True, count)
    subscriber.deliver(world.event())
    hook = world.service().get("doomed")
    assert not hook.enabled and hook.consecutive_failures == 10
    assert hook.disabled_reason == "disabled after 10 consecutive failed deliveries"
    disabled = [
        event
        for event in outbox.list_events(world.engine, after_id=before, names=["webhook.disabled"])
    ]
    assert [event.data["webhook"] for event in disabled] == ["doomed"]
    subscriber.deliver(world.event())  # disabled: no more deliveries
    subscriber.close()
    assert len(world.receiver.at(path)) == 10
    enabled = world.service().enable("doomed")
    assert (enabled.enabled, enabled.consecutive_failures, enabled.disabled_reason) == (
        True,
        0,
        None,
    )


def test_a_success_resets_the_failure_count(world: World) -> None:
    path = world.hook("recovers")
    world.receiver.scripts[path] = [500, 500, 200]
    subscriber = world.subscriber(retry_delays_s=[])
    for expected in (1, 2, 0):
        subscriber.deliver(world.event())
        assert world.service().get("recovers").consecutive_failures == expected
    subscriber.close()


def test_a_redirect_is_a_failure_and_is_not_followed(world: World) -> None:
    path = world.hook("moved")
    world.receiver.redirects[path] = world.receiver.url + "/elsewhere"
    subscriber = world.subscriber(retry_delays_s=[])
    subscriber.deliver(world.event())
    subscriber.close()
    (logged,) = world.service().deliveries("moved")
    assert (logged.status, logged.response_code) == ("failed", 302)
    assert "redirect" in (logged.error or "")
    assert world.receiver.at("/elsewhere") == []


def test_every_webhook_of_an_event_is_posted_to_at_once(world: World) -> None:
    """The receiver holds each request until three are in at once: one after the other,
    the first would wait alone and fail (the barrier's bound)."""
    paths = [world.hook(f"parallel-{n}") for n in range(3)]
    world.receiver.barrier = threading.Barrier(3, timeout=WAIT_S)
    subscriber = world.subscriber(retry_delays_s=[])
    subscriber.deliver(world.event())
    subscriber.close()
    for n, path in enumerate(paths):
        assert len(world.receiver.at(path)) == 1
        assert world.service().deliveries(f"parallel-{n}")[0].status == "delivered"


def test_private_targets_are_refused_by_default(world: World) -> None:
    default = WebhookService(world.engine, Settings())
    assert default.settings.webhooks.allow_private is False
    for url in (
        world.receiver.url + "/hook",
        "http://127.0.0.1/hook",
        "http://10.0.0.8/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8080/hook",
        "http://localhost/hook",  # a hostname resolving to loopback
    ):
        with pytest.raises(InvalidInput) as refused:
            default.create("refused", url)
        assert refused.value.code == "webhook_url_refused", url
    assert store.load_webhook(world.engine, "refused") is None


def test_the_guard_runs_again_before_every_attempt(world: World) -> None:
    """Made while private targets were allowed, delivered once they are not: refused
    before anything is sent, not retried, counted as a failure."""
    path = world.hook("was-allowed")
    sleeps: list[float] = []
    subscriber = world.subscriber(sleeps, allow_private=False)
    subscriber.deliver(world.event())
    subscriber.close()
    assert world.receiver.at(path) == [] and sleeps == []
    (logged,) = world.service().deliveries("was-allowed")
    assert (logged.status, logged.response_code) == ("refused", None)
    assert "allow_private" in (logged.error or "")
    assert world.service().get("was-allowed").consecutive_failures == 1


def test_the_secret_is_shown_once_and_stored_sealed(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    service = world.service()
    url = world.receiver.url + "/sealed?token=in-the-query"
    webhook, secret = service.create("sealed", url, ["document.processed"])
    assert secret.startswith("whsec_") and len(secret) == 6 + 43
    assert webhook.url == url and webhook.events == ("document.processed",)
    assert "secret" not in {name.lower() for name in vars(webhook)}
    with world.engine.connect() as conn:
        stored = conn.execute(select(store.W.c.secret_sealed)).scalar_one()
    assert stored.startswith("sb1:") and secret not in stored
    world.receiver.secrets["/sealed?token=in-the-query"] = secret
    subscriber = world.subscriber()
    subscriber.deliver(world.event())
    subscriber.close()
    assert world.receiver.at("/sealed?token=in-the-query")[0].signed
    assert secret not in caplog.text and "in-the-query" not in caplog.text
    with pytest.raises(Conflict):
        service.create("sealed", url)


def test_the_test_event_is_sent_once_and_counts_toward_nothing(world: World) -> None:
    path = world.hook("tested", ["backup.failed"])
    sent = world.service().send_test("tested", actor="root")
    assert (sent.status, sent.response_code, sent.event, sent.event_id) == (
        "delivered",
        200,
        "webhook.test",
        None,
    )
    (got,) = world.receiver.at(path)
    assert got.signed and got.json["event"] == "webhook.test" and got.json["id"] is None
    assert got.json["data"]["webhook"] == "tested"
    world.receiver.scripts[path] = [500]
    failed = world.service().send_test("tested")
    assert (failed.status, failed.response_code) == ("failed", 500)
    assert world.service().get("tested").consecutive_failures == 0
    assert [d.status for d in world.service().deliveries("tested")] == ["failed", "delivered"]


def test_the_delivery_log_keeps_the_newest(world: World) -> None:
    world.hook("busy")
    subscriber = world.subscriber(retry_delays_s=[], keep_deliveries=10)
    events = [world.event() for _ in range(TRIM_EVERY + 13)]
    for event in events:
        subscriber.deliver(event)
    subscriber.close()
    service = world.service(keep_deliveries=10)
    log = service.deliveries("busy", limit=100)
    assert [d.event_id for d in log] == [event.id for event in reversed(events)][:10]
    assert service.get("busy").last_delivery == log[0]
    # Cut in batches: never more than TRIM_EVERY rows past the ten kept.
    kept = store.list_deliveries(world.engine, store.load_webhook(world.engine, "busy"), limit=99)
    assert 10 < len(kept) < 10 + TRIM_EVERY


def test_names_urls_and_events_are_checked(world: World, tmp_path: Path) -> None:
    service = world.service()
    url = world.receiver.url + "/x"
    for name in ("", "-dash", "a" * 65, "sp ace", "slash/"):
        with pytest.raises(InvalidInput):
            service.create(name, url)
    with pytest.raises(InvalidInput, match="unknown event"):
        service.create("typo", url, ["document.procesed"])
    with pytest.raises(InvalidInput, match="no user name or password"):
        service.create("creds", "https://user:pw@hooks.example/")
    service.create("editable", url)
    changed = service.update("editable", events=["user.created", "user.created"])
    assert changed.events == ("user.created",)
    assert service.update("editable", events=[]).events == ()
    with pytest.raises(InvalidInput):
        service.update("editable", url="ftp://x/")
    service.delete("editable")
    assert [hook.name for hook in service.list()] == []
