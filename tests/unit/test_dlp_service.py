"""DlpService against a real SQLite catalog: seeding, pattern rules, the cache and its
fallback, bypass and audit, originals and their reveal, ingestion-time redaction."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from autorag import audit
from autorag.audit import AuditQuery
from autorag.auth.service import create_user
from autorag.config import DlpSettings, load_settings
from autorag.dlp import DEFAULT_PATTERNS, REDACTED
from autorag.dlp.patterns import MAX_CUSTOM_PATTERNS
from autorag.dlp.service import DlpContext, DlpService, HistoryQuery, source_from_widget
from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.models import ParsedDocument, Segment
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.repository import Catalog

SECRET = "mario.rossi@example.com"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def catalog(tmp_path: Path, catalog_url: str | None) -> Iterator[Catalog]:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    catalog = Catalog(engine)
    catalog.ensure_workspace("default")
    yield catalog
    engine.dispose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(catalog: Catalog, clock: Clock) -> DlpService:
    return DlpService(catalog, DlpSettings(bypass_roles=["admin"]), clock=clock)


def _events(catalog: Catalog, event: str | None = None) -> list[audit.AuditEvent]:
    return audit.list_events(catalog, AuditQuery(events=(event,) if event else ()))


def test_builtins_are_seeded_on_first_use_eu_phone_disabled(service: DlpService) -> None:
    records = {r.name: r for r in service.list_patterns()}
    assert len(records) == 10 and all(r.builtin for r in records.values())
    assert not records["eu_phone"].enabled and records["email"].enabled
    assert [p.name for p in service.active_patterns()] == [p.name for p in DEFAULT_PATTERNS]
    service.list_patterns()  # seeding twice changes nothing
    assert len(service.list_patterns()) == 10


def test_builtins_can_be_switched_but_not_edited_or_deleted(service: DlpService) -> None:
    email = service.find_pattern("email")
    assert not service.update_pattern(email.id, enabled=False).enabled
    assert "email" not in [p.name for p in service.active_patterns()]
    with pytest.raises(Conflict, match="built-in") as edited:
        service.update_pattern(email.id, regex="x+")
    assert edited.value.code == "builtin_pattern"
    with pytest.raises(Conflict, match="disable it instead"):
        service.delete_pattern(email.id)


def test_custom_patterns_are_created_edited_and_deleted(service: DlpService) -> None:
    record = service.create_pattern("ticket", r"TCK-[0-9]{6}", "Ticket ids")
    assert (record.builtin, record.enabled) == (False, True)
    assert service.scan("see TCK-123456").redacted_text == f"see {REDACTED}"
    with pytest.raises(InvalidInput, match="RE2"):
        service.update_pattern(record.id, regex=r"(?=x)")
    renamed = service.update_pattern(record.id, name="ticket_id", regex=r"TCK-[0-9]{4}\b")
    assert renamed.name == "ticket_id"
    assert service.scan("see TCK-1234").matches[0].type == "ticket_id"
    with pytest.raises(Conflict, match="already exists"):
        service.create_pattern("ticket_id", "x")
    with pytest.raises(Conflict, match="built-in"):
        service.create_pattern("email", "x")
    service.delete_pattern(record.id)
    with pytest.raises(NotFound):
        service.find_pattern("ticket_id")


def test_at_most_fifty_custom_patterns(service: DlpService) -> None:
    for index in range(MAX_CUSTOM_PATTERNS):
        service.create_pattern(f"p{index}", f"ID{index}-[0-9]+")
    with pytest.raises(Conflict) as refused:
        service.create_pattern("one_more", "x")
    assert refused.value.code == "pattern_limit"


def test_patterns_are_cached_for_five_minutes(
    catalog: Catalog, service: DlpService, clock: Clock
) -> None:
    assert "email" in [p.name for p in service.active_patterns()]
    other = DlpService(catalog)  # e.g. the CLI, in another process
    other.update_pattern(other.find_pattern("email").id, enabled=False)
    clock.now += 299
    assert "email" in [p.name for p in service.active_patterns()]
    clock.now += 2
    assert "email" not in [p.name for p in service.active_patterns()]


def test_an_unreachable_catalog_falls_back_to_the_builtins(tmp_path: Path) -> None:
    missing = create_catalog_engine(sqlite_url(tmp_path / "no" / "such" / "dir" / "x.db"))
    service = DlpService(Catalog(missing))
    assert service.active_patterns() == DEFAULT_PATTERNS
    session = service.session(DlpContext(user_id=1, workspace_id=1))
    assert session.scan(f"mail {SECRET}").redacted_text == f"mail {REDACTED}"  # no audit, no crash


def test_a_catalog_lost_after_loading_keeps_the_last_patterns(
    tmp_path: Path, service: DlpService, clock: Clock
) -> None:
    service.create_pattern("ticket", r"TCK-[0-9]{6}")
    loaded = service.active_patterns()
    service.catalog = Catalog(create_catalog_engine(sqlite_url(tmp_path / "gone" / "x.db")))
    clock.now += 301
    assert service.active_patterns() == loaded


def test_a_session_redacts_and_audits_without_the_secret(
    catalog: Catalog, service: DlpService
) -> None:
    user = create_user(catalog, "ann", "long enough password", "member")
    context = DlpContext(
        "widget", "chat_input", user.id, user.role, catalog.ensure_workspace("default").id
    )
    results = service.session(context).scan_many([f"to {SECRET}", "card 4111 1111 1111 1111", "ok"])
    assert [r.has_match for r in results] == [True, True, False]
    (event,) = _events(catalog)
    assert (event.event, event.source, event.username, event.workspace) == (
        "dlp.redacted",
        "widget",
        "ann",
        "default",
    )
    assert event.details == {"channel": "chat_input", "types": ["credit_card", "email"], "count": 2}
    assert SECRET not in json.dumps(event.details)


def test_a_bypassing_role_is_not_scanned_and_is_audited_once(
    catalog: Catalog, service: DlpService
) -> None:
    session = service.session(DlpContext(role="admin", channel="search"))
    assert session.bypassed and not session.active
    assert session.scan(SECRET).redacted_text == SECRET
    assert session.scan(SECRET).redacted_text == SECRET
    assert session.stream().feed(SECRET) == SECRET
    (event,) = _events(catalog)
    assert event.event == "dlp.bypassed" and event.details == {"channel": "search", "role": "admin"}


def test_dlp_disabled_scans_nothing_and_audits_nothing(catalog: Catalog) -> None:
    service = DlpService(catalog, DlpSettings(enabled=False))
    session = service.session(DlpContext(role="member"))
    assert session.scan(SECRET).redacted_text == SECRET
    assert not _events(catalog)


def test_a_stream_is_audited_when_it_ends(catalog: Catalog, service: DlpService) -> None:
    stream = service.session(DlpContext(channel="chat")).stream(channel="chat_output")
    shown = stream.feed(f"write to {SECRET}") + stream.feed(f" now {SECRET} ") + stream.flush()
    assert shown == f"write to {REDACTED} now {REDACTED} " and stream.redacted
    (event,) = _events(catalog)
    assert event.details == {"channel": "chat_output", "types": ["email"], "count": 2}


def test_originals_are_revealed_with_an_audit_event(catalog: Catalog, service: DlpService) -> None:
    admin = create_user(catalog, "root", "long enough password", "admin")
    session = service.session(DlpContext(channel="chat_input", user_id=admin.id))
    result = session.scan(f"mail {SECRET}")
    assert session.record("same", "same", []) is None  # nothing redacted, nothing kept
    original_id = session.record(
        f"mail {SECRET}", result.redacted_text, result.types, ref="message:7"
    )
    assert original_id is not None
    by_ref = service.reveal(ref="message:7", user_id=admin.id)
    assert (by_ref.id, by_ref.original, by_ref.types) == (original_id, f"mail {SECRET}", ("email",))
    assert service.reveal(original_id=original_id, user_id=admin.id).ref == "message:7"
    revealed = _events(catalog, "dlp.revealed")
    assert len(revealed) == 2 and revealed[0].details["originalId"] == original_id
    assert SECRET not in json.dumps([e.details for e in revealed])
    with pytest.raises(NotFound):
        service.reveal(original_id="nope", user_id=admin.id)
    assert service.forget("message:7") == 1


def test_match_history_filters(catalog: Catalog, service: DlpService) -> None:
    ann = create_user(catalog, "ann", "long enough password", "member")
    workspace = catalog.ensure_workspace("default").id
    service.session(DlpContext("chat", "chat_input", ann.id, "member", workspace)).scan(SECRET)
    service.session(DlpContext("widget", "chat_input", None, None, workspace)).scan(
        "card 4111 1111 1111 1111"
    )
    service.session(DlpContext("chat", "search", None, "admin", workspace)).scan(SECRET)

    def events(**filters: object) -> list[str]:
        return [e.event for e in service.match_history(HistoryQuery(**filters))]  # type: ignore[arg-type]

    assert events() == ["dlp.bypassed", "dlp.redacted", "dlp.redacted"]
    assert events(type="email") == ["dlp.redacted"]
    assert events(type="credit_card", source="widget") == ["dlp.redacted"]
    assert events(type="credit_card", source="chat") == []
    assert events(user_id=ann.id) == ["dlp.redacted"]
    assert events(event="dlp.bypassed") == ["dlp.bypassed"]
    assert len(events(limit=2)) == 2


def test_documents_are_redacted_segment_by_segment(service: DlpService) -> None:
    document = ParsedDocument([Segment(f"Mail {SECRET}", page=1), Segment("Nothing", page=2)])
    redacted = service.redact_document(document)
    assert [s.text for s in redacted.segments] == [f"Mail {REDACTED}", "Nothing"]
    assert redacted.segments[0].page == 1


def test_the_widget_header_names_the_source() -> None:
    assert source_from_widget("w-123") == "widget"
    assert source_from_widget(None) == source_from_widget("  ") == "chat"


def test_seed_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLP_ENABLED", "false")
    monkeypatch.setenv("DLP_BYPASS_ROLES", '["admin", "manager"]')
    settings = load_settings(None)
    assert settings.dlp == DlpSettings(enabled=False, bypass_roles=["admin", "manager"])
    monkeypatch.setenv("AUTORAG_DLP__ENABLED", "true")  # ours win over the seed's
    assert load_settings(None).dlp.enabled
    monkeypatch.setenv("DLP_BYPASS_ROLES", "admin")
    with pytest.raises(InvalidInput, match="DLP_BYPASS_ROLES"):
        load_settings(None)
