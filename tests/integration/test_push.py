"""Web Push (issue 21) against a push-service double on loopback
(``tests.doubles.push_service``), which checks the VAPID JWT (RFC 8292) and decrypts
every payload (RFC 8291) with the keys the test made as a browser would.

Who gets what is decided by the topics and the preferences: admins for approvals,
backups and synthesis, the uploader for their failed upload, never someone who turned
the topic off. A subscription answered 404/410 is removed; an endpoint into the LAN is
refused unless ``webhooks.allow_private``. The catalog is SQLite, the crypto and HTTP
real; the event dispatcher's own tests are the events helper's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import SecretStr
from sqlalchemy import delete, select
from starlette.types import ASGIApp
from tests.doubles.push_service import Browser, PushServiceDouble
from tests.workspaces import new_workspace

from autorag.auth.service import create_user
from autorag.config import PushSettings
from autorag.context import AppContext, open_context
from autorag.errors import InvalidInput, NotFound
from autorag.jobs.dispatcher import EventDispatcher
from autorag.push import endpoints, store
from autorag.push.sender import PushSubscriber
from autorag.push.service import PushService
from autorag.push.vapid import STORED_KEY, VapidKeys, vapid_keys
from autorag.secretbox import is_sealed
from autorag.store.catalog import outbox
from autorag.store.catalog.models import SystemConfigRow
from autorag.store.catalog.outbox import Event

PASSWORD = "a long enough password"
DELIVERY_WAIT_S = 30.0


@dataclass
class World:
    context: AppContext
    double: PushServiceDouble
    users: dict[str, int]  # username → id

    @property
    def push(self) -> PushService:
        return PushService.for_context(self.context)

    def browser_of(self, username: str) -> Browser:
        browser = self.double.new_browser()
        self.push.subscribe(
            self.users[username], browser.endpoint, browser.p256dh, browser.auth, "TestBrowser/1"
        )
        return browser


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[World]:
    workspace = new_workspace(tmp_path_factory.mktemp("push"))
    context = open_context(workspace, webhooks={"allow_private": True})
    users = {
        name: create_user(context.catalog, name, PASSWORD, role).id
        for name, role in (("root", "admin"), ("ada", "admin"), ("mem", "member"))
    }
    public_key = PushService.for_context(context).public_key()
    double = PushServiceDouble(expect_key=public_key)
    double.url = serve_asgi(double.app)
    try:
        yield World(context, double, users)
    finally:
        context.close()


@pytest.fixture(autouse=True)
def clean(world: World) -> Iterator[None]:
    yield
    with world.context.catalog.engine.begin() as conn:
        conn.execute(delete(store.PushSubscriptionRow))
        conn.execute(delete(store.PushPreferenceRow))
    world.double.received.clear()
    world.double.rejected.clear()
    world.double.answer.clear()
    world.double.origin = ""


def event(name: str, *, actor: str | None = None, **data: Any) -> Event:
    return Event(1, name, datetime.now(UTC), "default", actor, data)


def test_preferences_decide_who_gets_what(world: World) -> None:
    root_phone, root_laptop = world.browser_of("root"), world.browser_of("root")
    ada = world.browser_of("ada")
    mem = world.browser_of("mem")
    world.push.set_preferences(world.users["ada"], {"backup_failed": False})
    subscriber = PushSubscriber(world.push)

    subscriber.deliver(event("backup.failed", actor="system", job="nightly"))

    expected = {
        "title": "Backup failed",
        "body": "The backup job nightly failed. Open Backups to see its log.",
        "url": "/#/backups",
        "event": "backup.failed",
        "topic": "backup_failed",
    }
    assert world.double.payloads(root_phone) == [expected]
    assert world.double.payloads(root_laptop) == [expected]
    assert world.double.payloads(ada) == []  # turned it off
    assert world.double.payloads(mem) == []  # not an admin's business of hers
    assert world.double.rejected == []

    world.double.received.clear()
    subscriber.deliver(event("document.failed", actor="mem", document=7))
    [only] = world.double.received
    assert only.token == mem.token
    assert only.payload["title"] == "Your upload failed"
    assert only.payload["url"] == "/#/documents"
    # The JWT the double verified: this server's key, the double's origin, 12 hours.
    assert only.claims["sub"] == world.context.settings.push.vapid_subject
    assert only.claims["exp"] <= time.time() + 12 * 3600 + 5
    assert only.headers["ttl"] == str(world.context.settings.push.ttl_s)


def test_events_no_topic_follows_send_nothing(world: World) -> None:
    world.browser_of("root")
    report = world.push.notify(event("document.processed", actor="root"))
    assert (report.sent, world.double.received) == (0, [])


def test_payload_carries_names_never_text_or_secrets(world: World) -> None:
    mem, root = world.browser_of("mem"), world.browser_of("root")
    secret = "the quetzal vault code is 4711, password hunter2"
    PushSubscriber(world.push).deliver(
        event("document.failed", actor="mem", filename=secret, error=secret, text=secret)
    )
    PushSubscriber(world.push).deliver(
        event("p2p.approval_requested", actor="peer:lab", peer=secret, question=secret)
    )
    [upload] = world.double.payloads(mem)
    [approval] = world.double.payloads(root)
    for payload in (upload, approval):
        assert "quetzal" not in str(payload) and "hunter2" not in str(payload)
    assert approval["body"].startswith("A peer asks to query this server in workspace default")


@pytest.mark.parametrize("status", [410, 404])
def test_a_gone_subscription_is_removed(world: World, status: int) -> None:
    kept, gone = world.browser_of("root"), world.browser_of("root")
    world.double.answer[gone.token] = status

    report = world.push.send_test([world.users["root"]])

    assert (report.sent, report.removed, report.failed) == (1, 1, 0)
    endpoints = [s.endpoint for s in world.push.subscriptions(world.users["root"])]
    assert endpoints == [kept.endpoint]
    assert world.double.payloads(kept)[0]["event"] == "push.test"


def test_a_failing_push_service_keeps_the_subscription(world: World) -> None:
    browser = world.browser_of("root")
    world.double.answer[browser.token] = 503
    report = world.push.send_test(None)
    assert (report.sent, report.removed, report.failed) == (0, 0, 1)
    assert len(world.push.subscriptions(world.users["root"])) == 1


def test_the_dispatcher_delivers_a_committed_event(world: World) -> None:
    """The outbox and the dispatcher, real: an event committed reaches the browser."""
    browser = world.browser_of("root")
    engine = world.context.catalog.engine
    dispatcher = EventDispatcher(engine, [PushSubscriber(world.push)])
    dispatcher.start()
    try:
        with engine.begin() as conn:
            outbox.emit(conn, "synthesis.preview_ready", {"archive": "handbook", "run": 3})
        deadline = time.monotonic() + DELIVERY_WAIT_S
        while not world.double.received and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        dispatcher.stop()
    [payload] = world.double.payloads(browser)
    assert payload["title"] == "Synthesis ready for review"
    assert "handbook" in payload["body"]


def test_unsubscribing_is_one_own(world: World) -> None:
    browser = world.browser_of("root")
    with pytest.raises(NotFound):
        world.push.unsubscribe(world.users["mem"], browser.endpoint)
    assert len(world.push.subscriptions(world.users["root"])) == 1
    world.push.unsubscribe(world.users["root"], browser.endpoint)
    assert world.push.subscriptions(world.users["root"]) == []


def test_the_same_browser_moves_to_who_subscribed_last(world: World) -> None:
    browser = world.browser_of("root")
    world.push.subscribe(world.users["mem"], browser.endpoint, browser.p256dh, browser.auth)
    assert world.push.subscriptions(world.users["root"]) == []
    assert len(world.push.subscriptions(world.users["mem"])) == 1


def test_preferences_list_every_topic(world: World) -> None:
    mine = world.push.set_preferences(world.users["mem"], {"upload_failed": False})
    assert [(c.topic, c.enabled, c.applies) for c in mine] == [
        ("approvals", True, False),
        ("upload_failed", False, True),
        ("backup_failed", True, False),
        ("synthesis_ready", True, False),
    ]
    with pytest.raises(InvalidInput, match="no notification topic nope"):
        world.push.set_preferences(world.users["mem"], {"nope": True})


# -- hostile endpoints and keys -----------------------------------------------------------
LAN = [
    "https://127.0.0.1/push/x",
    "https://10.1.2.3/push/x",
    "https://192.168.0.1/push/x",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/push/x",
    "https://[::ffff:127.0.0.1]/push/x",
    "https://localhost/push/x",
    "https://0.0.0.0/push/x",
]
NEVER = [
    "http://93.184.216.34/push/x",  # plain http to a public address
    "ftp://93.184.216.34/push/x",
    "https://user:pw@93.184.216.34/push/x",
    "file:///etc/passwd",
    "https:///push/x",
]


@pytest.fixture(scope="module")
def strict(world: World) -> PushService:
    """The service as installed by default: webhooks.allow_private off."""
    settings = world.context.settings.model_copy(deep=True)
    settings.webhooks.allow_private = False
    return PushService(world.context.catalog.engine, settings)


@pytest.mark.parametrize("endpoint", LAN + NEVER)
def test_endpoints_into_the_lan_or_not_https_are_refused(
    world: World, strict: PushService, endpoint: str
) -> None:
    browser = world.double.new_browser()
    with pytest.raises(InvalidInput):
        strict.subscribe(world.users["mem"], endpoint, browser.p256dh, browser.auth)


@pytest.mark.parametrize("endpoint", NEVER)
def test_allow_private_never_allows_what_is_not_a_push_endpoint(
    world: World, endpoint: str
) -> None:
    browser = world.double.new_browser()
    with pytest.raises(InvalidInput):
        world.push.subscribe(world.users["mem"], endpoint, browser.p256dh, browser.auth)


def test_a_stored_endpoint_is_checked_again_before_sending(
    world: World, strict: PushService
) -> None:
    browser = world.browser_of("root")  # stored while private addresses were allowed
    report = strict.send_test(None)
    assert (report.sent, report.refused) == (0, 1)
    assert world.double.payloads(browser) == []


@pytest.mark.parametrize(
    ("p256dh", "auth"),
    [("AAAA", "AAAAAAAAAAAAAAAAAAAAAA"), (None, "AAAA"), (None, "not base64 !")],
)
def test_keys_that_are_not_a_browsers_are_refused(
    world: World, p256dh: str | None, auth: str
) -> None:
    browser = world.double.new_browser()
    with pytest.raises(InvalidInput):
        world.push.subscribe(world.users["mem"], browser.endpoint, p256dh or browser.p256dh, auth)


# -- the VAPID keys -------------------------------------------------------------------------
def test_vapid_keys_are_made_once_and_kept_sealed(world: World) -> None:
    engine = world.context.catalog.engine
    first = vapid_keys(engine, PushSettings())
    assert vapid_keys(engine, PushSettings()).public_key == first.public_key
    with engine.connect() as conn:
        sealed = conn.execute(
            select(SystemConfigRow.value).where(SystemConfigRow.key == STORED_KEY)
        ).scalar_one()
    assert is_sealed(sealed) and first.private_raw not in sealed
    assert len(first.public_key) == 87  # 65 bytes, base64url without padding
    assert "private" not in repr(first)


def test_vapid_keys_from_the_settings(world: World) -> None:
    made = new_pair()  # as an operator would generate it
    engine = world.context.catalog.engine
    given = PushSettings(
        vapid_private_key=SecretStr(made.private_raw), vapid_public_key=made.public_key
    )
    assert vapid_keys(engine, given).public_key == made.public_key
    wrong = PushSettings(
        vapid_private_key=SecretStr(made.private_raw), vapid_public_key=new_pair().public_key
    )
    with pytest.raises(InvalidInput, match="not the public key"):
        vapid_keys(engine, wrong)
    with pytest.raises(InvalidInput):
        vapid_keys(engine, PushSettings(vapid_private_key=SecretStr("too short")))


def new_pair() -> VapidKeys:
    return VapidKeys(ec.generate_private_key(ec.SECP256R1()))


def test_the_double_refuses_another_servers_signature(world: World) -> None:
    """The double is strict: a message signed with another key than the one the browser
    subscribed with is refused (403), and counted failed, the subscription kept."""
    browser = world.browser_of("root")
    settings = world.context.settings.model_copy(deep=True)
    settings.push.vapid_private_key = SecretStr(new_pair().private_raw)
    impostor = PushService(world.context.catalog.engine, settings)

    report = impostor.send_test(None)

    assert (report.sent, report.failed) == (0, 1)
    assert world.double.rejected == [
        (browser.token, "k is not the expected application server key")
    ]
    assert len(world.push.subscriptions(world.users["root"])) == 1


def test_the_send_goes_to_the_address_checked(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding gains nothing: the name resolved for the check (here to the double's
    address, by a resolver only the check uses: the name resolves nowhere else) is the
    address the POST goes to, with the name in Host and in the JWT's aud."""
    port = urlsplit(world.double.url).port
    world.double.origin = f"http://push.example.test:{port}"
    monkeypatch.setattr(endpoints, "_resolve", lambda host, port: ["127.0.0.1"])
    browser = world.browser_of("root")

    assert world.push.send_test(None).sent == 1

    [received] = world.double.received
    assert received.token == browser.token
    assert received.headers["host"] == f"push.example.test:{port}"
    assert received.claims["aud"] == world.double.origin


def test_a_misconfigured_key_is_logged_not_raised(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.browser_of("root")
    settings = world.context.settings.model_copy(deep=True)
    settings.push.vapid_private_key = SecretStr("not a key")
    subscriber = PushSubscriber(PushService(world.context.catalog.engine, settings))

    subscriber.deliver(event("backup.failed"))

    assert world.double.received == []
    assert "VAPID private key must be PEM" in caplog.text
