"""DLP over HTTP on a real server: patterns, scanning, redacted search snippets, the
match history, bypass roles, the audited reveal, and redaction at ingestion."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from sqlalchemy import text

from autorag.auth import service
from autorag.context import AppContext
from autorag.dlp.service import DlpContext, DlpService

if TYPE_CHECKING:
    from tests.integration.conftest import ApiServer, LaunchApi

PASSWORD = "a long enough password"
EMAIL = "mario.rossi@example.com"
CARD = "4111 1111 1111 1111"
DOCUMENT = (
    f"The quetzal ledger lists the supplier contact {EMAIL} and the company card {CARD} "
    "used for the quetzal feeding programme.\n"
)


@dataclass
class Dlp:
    api: ApiServer
    admin: str  # a login token
    admin_key: str  # an API key of the same admin
    member: str  # a login token of a member of "default"
    manager: str  # a login token of a manager, whose role bypasses DLP
    original_id: str  # a redacted text recorded before the server started

    def call(self, method: str, path: str, credential: str, **kwargs: Any) -> httpx.Response:
        return self.api.call(method, path, credential, **kwargs)

    def patterns(self) -> dict[str, dict[str, Any]]:
        response = self.call("GET", "/api/dlp/patterns", self.admin)
        assert response.status_code == 200, response.text
        return {p["name"]: p for p in response.json()}

    def history(self, **params: Any) -> list[dict[str, Any]]:
        response = self.call("GET", "/api/dlp/matches", self.admin, params=params)
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items


def _login(api: ApiServer, username: str) -> str:
    response = api.call(
        "POST", "/api/auth/login", json={"username": username, "password": PASSWORD}
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


@pytest.fixture(scope="module")
def dlp(tmp_path_factory: pytest.TempPathFactory, launch_api: LaunchApi) -> Dlp:
    def prepare(context: AppContext) -> tuple[str, str]:
        catalog = context.catalog
        config = context.workspace.read_config()
        context.workspace.write_config({**config, "dlp": {"bypass_roles": ["manager"]}})
        catalog.ensure_workspace("other")
        root = service.create_user(catalog, "root", PASSWORD, "admin")
        for username, role in (("mem", "member"), ("mgr", "manager")):
            service.create_user(catalog, username, PASSWORD, role)
            service.add_membership(catalog, username, "default")
        _, key = service.create_api_key(catalog, "root", "tests", [])
        recorded = DlpService(catalog).record_redaction(
            f"my card is {CARD}",
            "my card is [REDACTED]",
            ["credit_card"],
            DlpContext(user_id=root.id, workspace_id=catalog.get_workspace("default").id),
            ref="message:1",
        )
        return key, recorded

    api = launch_api(tmp_path_factory.mktemp("dlp") / "kb", prepare, login_attempts_per_minute=1000)
    admin_key, original_id = api.prepared
    world = Dlp(
        api, _login(api, "root"), admin_key, _login(api, "mem"), _login(api, "mgr"), original_id
    )
    upload = world.call(
        "POST",
        "/api/workspaces/default/documents",
        admin_key,
        files={"file": ("ledger.txt", DOCUMENT.encode())},
    )
    assert upload.status_code == 202, upload.text
    assert api.wait_processed(admin_key, upload.json()["id"])["status"] == "ready"
    return world


def test_the_builtins_are_listed_with_eu_phone_disabled(dlp: Dlp) -> None:
    patterns = dlp.patterns()
    assert len(patterns) == 10 and all(p["builtin"] for p in patterns.values())
    assert patterns["eu_phone"]["enabled"] is False and patterns["iban"]["enabled"] is True


def test_admin_creates_tests_edits_and_deletes_a_custom_pattern(dlp: Dlp) -> None:
    body = {"name": "ticket", "regex": r"TCK-[0-9]{6}", "description": "Ticket ids"}
    created = dlp.call("POST", "/api/dlp/patterns", dlp.admin, json=body)
    assert created.status_code == 201, created.text
    pattern_id = created.json()["id"]

    preview = dlp.call(
        "POST",
        "/api/dlp/patterns/test",
        dlp.admin,
        json={"text": "see TCK-000042 or TCK-1", "regex": r"TCK-[0-9]+", "name": "draft"},
    )
    assert preview.status_code == 200, preview.text
    assert preview.json()["redactedText"] == "see [REDACTED] or [REDACTED]"
    assert {m["type"] for m in preview.json()["matches"]} == {"draft"}
    enabled = dlp.call("POST", "/api/dlp/patterns/test", dlp.admin, json={"text": "TCK-123456"})
    assert enabled.json()["matches"] == [{"type": "ticket", "start": 0, "end": 10}]

    edited = dlp.call(
        "PATCH", f"/api/dlp/patterns/{pattern_id}", dlp.admin, json={"regex": r"TCK-[0-9]{4}"}
    )
    assert edited.status_code == 200 and edited.json()["regex"] == r"TCK-[0-9]{4}"
    deleted = dlp.call("DELETE", f"/api/dlp/patterns/{pattern_id}", dlp.admin)
    assert deleted.status_code == 204
    assert "ticket" not in dlp.patterns()


def test_a_pattern_re2_cannot_compile_is_refused_with_its_reason(dlp: Dlp) -> None:
    for regex, reason in ((r"(?=a)b", "invalid perl operator"), (r"(x)\1", "invalid escape")):
        for path, body in (
            ("/api/dlp/patterns", {"name": "bad", "regex": regex}),
            ("/api/dlp/patterns/test", {"text": "xx", "regex": regex}),
        ):
            response = dlp.call("POST", path, dlp.admin, json=body)
            assert response.status_code == 400, response.text
            problem = response.json()
            assert problem["code"] == "invalid_pattern"
            assert reason in problem["detail"] and "RE2" in problem["detail"]


def test_builtins_are_switched_not_edited_or_deleted(dlp: Dlp) -> None:
    email = dlp.patterns()["email"]
    path = f"/api/dlp/patterns/{email['id']}"
    assert dlp.call("PATCH", path, dlp.admin, json={"regex": "x"}).status_code == 409
    assert dlp.call("DELETE", path, dlp.admin).status_code == 409
    try:
        assert dlp.call("PATCH", path, dlp.admin, json={"enabled": False}).status_code == 200
        scanned = dlp.call("POST", "/api/dlp/scan", dlp.member, json={"text": EMAIL}).json()
        assert scanned["hasMatch"] is False  # the server's own cache was refreshed
    finally:
        assert dlp.call("PATCH", path, dlp.admin, json={"enabled": True}).status_code == 200
    scanned = dlp.call("POST", "/api/dlp/scan", dlp.member, json={"text": EMAIL}).json()
    assert scanned == {
        "hasMatch": True,
        "matches": [{"type": "email", "start": 0, "end": len(EMAIL)}],
        "redactedText": "[REDACTED]",
    }


def test_a_member_scans_but_manages_nothing(dlp: Dlp) -> None:
    assert dlp.call("GET", "/api/dlp/patterns", dlp.member).status_code == 403
    body = {"name": "mine", "regex": "x+"}
    assert dlp.call("POST", "/api/dlp/patterns", dlp.member, json=body).status_code == 403
    assert dlp.call("GET", "/api/dlp/matches", dlp.member).status_code == 403
    assert dlp.call("POST", "/api/dlp/reveal", dlp.member, json={"id": "x"}).status_code == 403
    scanned = dlp.call("POST", "/api/dlp/scan", dlp.member, json={"text": f"card {CARD}"})
    assert scanned.status_code == 200 and scanned.json()["redactedText"] == "card [REDACTED]"


def _search(dlp: Dlp, credential: str, **headers: str) -> dict[str, Any]:
    response = httpx.post(
        f"{dlp.api.url}/api/workspaces/default/search",
        json={"query": "quetzal ledger", "k": 3},
        headers={"Authorization": f"Bearer {credential}", **headers},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    (hit,) = [h for h in response.json()["hits"] if "quetzal" in h["snippet"]]
    return dict(hit)


def test_search_snippets_are_redacted_and_audited(dlp: Dlp) -> None:
    hit = _search(dlp, dlp.member)
    assert hit["redacted"] is True
    assert EMAIL not in hit["snippet"] and CARD not in hit["snippet"]
    assert hit["snippet"].count("[REDACTED]") == 2
    _search(dlp, dlp.member, **{"X-Widget-Id": "site-widget-1"})

    mine = dlp.history(user="mem", event="dlp.redacted")
    assert [e["source"] for e in mine[:2]] == ["widget", "chat"]
    latest = mine[0]
    assert (latest["username"], latest["workspace"], latest["channel"]) == (
        "mem",
        "default",
        "search",
    )
    assert latest["types"] == ["credit_card", "email"] and latest["count"] == 2
    assert EMAIL not in str(mine)


def test_a_bypassing_role_sees_the_text_and_is_audited(dlp: Dlp) -> None:
    hit = _search(dlp, dlp.manager)
    assert hit["redacted"] is False and EMAIL in hit["snippet"]
    (bypass, *_) = dlp.history(user="mgr")
    assert bypass["event"] == "dlp.bypassed" and bypass["channel"] == "search"


def test_match_history_filters(dlp: Dlp) -> None:
    _search(dlp, dlp.member)
    _search(dlp, dlp.member, **{"X-Widget-Id": "site-widget-2"})
    assert dlp.history(type="email")
    assert all("email" in e["types"] for e in dlp.history(type="email"))
    assert dlp.history(type="iban") == []
    assert all(e["source"] == "widget" for e in dlp.history(source="widget"))
    today = datetime.now(UTC).date()
    assert dlp.history(**{"from": today.isoformat(), "to": today.isoformat()})
    assert dlp.history(**{"to": (today - timedelta(days=1)).isoformat()}) == []
    page = dlp.call("GET", "/api/dlp/matches", dlp.admin, params={"limit": 1}).json()
    older = dlp.history(limit=1, beforeId=page["nextBeforeId"])
    assert older and older[0]["id"] < page["items"][0]["id"]
    unknown = dlp.call("GET", "/api/dlp/matches", dlp.admin, params={"user": "nobody"})
    assert unknown.status_code == 404


def test_an_admin_session_reveals_an_original_and_it_is_audited(dlp: Dlp) -> None:
    response = dlp.call("POST", "/api/dlp/reveal", dlp.admin, json={"id": dlp.original_id})
    assert response.status_code == 200, response.text
    revealed = response.json()
    assert revealed["original"] == f"my card is {CARD}" and revealed["ref"] == "message:1"
    by_ref = dlp.call("POST", "/api/dlp/reveal", dlp.admin, json={"ref": "message:1"})
    assert by_ref.json()["id"] == dlp.original_id
    events = dlp.history(event="dlp.revealed")
    assert len(events) >= 2 and events[0]["username"] == "root"
    assert events[0]["types"] == ["credit_card"]
    missing = dlp.call("POST", "/api/dlp/reveal", dlp.admin, json={"id": "no-such-id"})
    assert missing.status_code == 404


def test_an_api_key_cannot_reveal(dlp: Dlp) -> None:
    before = len(dlp.history(event="dlp.revealed"))
    refused = dlp.call("POST", "/api/dlp/reveal", dlp.admin_key, json={"id": dlp.original_id})
    assert refused.status_code == 403 and dlp.original_id not in refused.text
    assert len(dlp.history(event="dlp.revealed")) == before
    # The same key manages patterns: only the reveal needs a password login.
    assert dlp.call("GET", "/api/dlp/patterns", dlp.admin_key).status_code == 200


def test_redaction_at_ingestion_stores_redacted_chunks(dlp: Dlp) -> None:
    settings = dlp.call(
        "PATCH", "/api/workspaces/other/settings", dlp.admin, json={"redactOnIngest": True}
    )
    assert settings.status_code == 200 and settings.json()["redactOnIngest"] is True
    upload = dlp.call(
        "POST",
        "/api/workspaces/other/documents",
        dlp.admin_key,
        files={"file": ("other.txt", DOCUMENT.encode())},
    )
    assert upload.status_code == 202, upload.text
    document_id = upload.json()["id"]
    assert dlp.api.wait_processed(dlp.admin_key, document_id, "other")["status"] == "ready"
    with dlp.api.sql() as conn:
        texts = (
            conn.execute(
                text("SELECT text FROM chunks WHERE document_id = :id"), {"id": document_id}
            )
            .scalars()
            .all()
        )
        default_texts = (
            conn.execute(text("SELECT text FROM chunks WHERE text LIKE '%quetzal%'"))
            .scalars()
            .all()
        )
    assert texts and all(EMAIL not in t and CARD not in t and "[REDACTED]" in t for t in texts)
    assert any(EMAIL in t for t in default_texts)  # "default" does not redact on ingest
