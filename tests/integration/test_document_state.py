"""Documents' dates and state, through the real pipeline, catalog and a real server on
loopback: the date filter on each document's own date (and the count of matches it
left out), empty files skipped without degrading the workspace, refresh counts that
agree with status, content indexed once across uploads and folders, and uploads shown
by their original name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest
from starlette.types import ASGIApp
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.auth.service import add_membership, create_api_key, create_user
from autorag.context import AppContext, open_context
from autorag.ingest.minsync import RefreshReport, refresh
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.uploads import ReceivedFile, process_upload, store_upload
from autorag.workspace import Workspace

LIMITS = IngestLimits(max_file_bytes=10**8, max_unzipped_bytes=10**9)
MINUTES = (
    b"Board minutes. The lighthouse keeper rota changes in April: Ines takes the night "
    b"watch and Tomas the morning log, as agreed by the harbour board.\n"
)


def _write_dated_docx(path: Path) -> None:
    document = docx.Document()
    document.add_paragraph(
        "The lighthouse lamp is cleaned every Sunday and its lens polished each March."
    )
    document.core_properties.created = datetime(2025, 3, 1, 9, 30)  # UTC, as Office keeps it
    document.save(str(path))


def _refresh(context: AppContext) -> RefreshReport:
    return refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])


def _upload(context: AppContext, name: str, content: bytes) -> int:
    """An upload as the API stores it, then processed as a worker would."""
    incoming = context.workspace.incoming_uploads_dir
    incoming.mkdir(parents=True, exist_ok=True)
    path = incoming / f"part-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    path.write_bytes(content)
    received = ReceivedFile(path, name, len(content), hashlib.sha256(content).hexdigest())
    stored = store_upload(
        context.catalog.engine, context.info, context.workspace.data_dir, received, LIMITS
    )
    assert not stored.duplicate
    process_upload(context.indexer, context.workspace.data_dir, stored.document_id)
    return stored.document_id


@dataclass(frozen=True)
class World:
    url: str
    key: str
    workspace: Workspace
    upload_id: int
    first: RefreshReport
    second: RefreshReport
    status: dict[str, Any]

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[World]:
    root = tmp_path_factory.mktemp("state")
    docs = root / "docs"
    docs.mkdir()
    _write_dated_docx(docs / "lamp.docx")
    (docs / "lens.md").write_text(
        "---\ntitle: Lens\ndate: 2019-05-01\n---\n# Lens\n\nThe lighthouse lens came from "
        "a foundry in Paris and was fitted in the old tower.\n",
        encoding="utf-8",
    )
    (docs / "empty.txt").write_bytes(b"")
    workspace = new_workspace(root / "kb", None, search_paths=[str(docs)])
    context = open_context(workspace)
    try:
        upload_id = _upload(context, "Board Minutes (final).txt", MINUTES)
        (docs / "minutes-copy.txt").write_bytes(MINUTES)  # the same content, in a folder
        first = _refresh(context)
        second = _refresh(context)
        readiness = context.readiness()
        status = {"state": readiness.state, "failed": readiness.failed}
        status["skipped"] = readiness.skipped
        create_user(context.catalog, "reader", "a long enough password", "admin")
        add_membership(context.catalog, "reader", "default")
        _, key = create_api_key(context.catalog, "reader", "tests", [])
    finally:
        context.close()
    yield World(serve_asgi(create_app(workspace)), key, workspace, upload_id, first, second, status)


def test_an_empty_file_is_skipped_and_the_workspace_stays_ready(world: World) -> None:
    skipped = {Path(s.source_id).name: s.error_code for s in world.first.skips}
    assert skipped["empty.txt"] == "empty"
    assert world.first.failed == 0 and not world.first.failures
    assert world.status["state"] == "ready", world.status
    assert world.status["failed"] == []
    assert {s["code"] for s in world.status["skipped"]} == {"empty", "duplicate"}


def test_refresh_counts_agree_with_status_on_every_run(world: World) -> None:
    # The second refresh reads nothing new, yet counts the files still skipped.
    for report in (world.first, world.second):
        assert report.failed == len(world.status["failed"]) == 0
        assert report.skipped == len(world.status["skipped"]) == 2


def test_folder_copy_of_an_upload_is_skipped_naming_the_kept_upload(world: World) -> None:
    reasons = {Path(s.source_id).name: s.error for s in world.first.skips}
    why = reasons["minutes-copy.txt"] or ""
    assert "uploaded as Board Minutes (final).txt" in why and "which is kept" in why
    hits = world.call(
        "POST", "/api/workspaces/default/search", json={"query": "lighthouse keeper rota"}
    ).json()["hits"]
    rota = [h for h in hits if "rota" in h["snippet"]]
    assert len(rota) == 1  # indexed once
    assert rota[0]["name"] == "Board Minutes (final).txt"
    assert "/uploads/" not in rota[0]["name"]


def test_uploading_content_a_folder_holds_answers_with_the_folder_copy(world: World) -> None:
    lamp = world.call("GET", "/api/workspaces/default/documents", params={"type": "docx"})
    folder_copy = lamp.json()["items"][0]
    content = (Path(world.workspace.root).parent / "docs" / "lamp.docx").read_bytes()
    response = world.call(
        "POST", "/api/workspaces/default/documents", files={"file": ("lamp again.docx", content)}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["duplicate"] is True and body["id"] == folder_copy["id"]
    assert body["origin"] == "file"


def test_listing_shows_original_names_statuses_and_document_dates(world: World) -> None:
    items = world.call("GET", "/api/workspaces/default/documents").json()["items"]
    by_name = {d["name"]: d for d in items}
    upload = by_name["Board Minutes (final).txt"]
    assert upload["id"] == world.upload_id and upload["origin"] == "upload"
    assert not any(d["name"].startswith("/uploads/") for d in items)
    empty = next(d for d in items if d["name"].endswith("/empty.txt"))
    assert (empty["status"], empty["reason"]) == ("skipped", "empty")
    lamp = next(d for d in items if d["name"].endswith("/lamp.docx"))
    assert lamp["documentDate"].startswith("2025-03-01T09:30:00")
    lens = next(d for d in items if d["name"].endswith("/lens.md"))
    assert lens["documentDate"].startswith("2019-05-01")


def test_date_filter_uses_the_documents_own_date(world: World) -> None:
    def names(**body: Any) -> list[str]:
        response = world.call(
            "POST", "/api/workspaces/default/search", json={"query": "lighthouse lamp lens", **body}
        )
        assert response.status_code == 200, response.text
        return [Path(h["name"]).name for h in response.json()["hits"]]

    assert names(dateFrom="2025-01-01", dateTo="2025-12-31") == ["lamp.docx"]
    assert names(dateFrom="2019-05-01", dateTo="2019-05-01") == ["lens.md"]


def test_empty_results_say_how_many_matches_the_dates_left_out(world: World) -> None:
    response = world.call(
        "POST",
        "/api/workspaces/default/search",
        json={"query": "lighthouse lamp lens", "dateFrom": "2030-01-01"},
    ).json()
    assert response["hits"] == []
    outside = [d for d in response["diagnostics"] if d["code"] == "outside_filters"]
    assert len(outside) == 1 and "outside the dates you chose" in outside[0]["message"]
    assert outside[0]["message"].split()[0].isdigit()


def test_a_failure_stays_counted_by_refresh_until_it_is_fixed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.txt").write_text("The tide tables are printed every Monday.", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (docs / "blank.txt").write_bytes(b"")
    context = open_context(new_workspace(tmp_path / "kb", None, search_paths=[str(docs)]))
    try:
        reports = [_refresh(context), _refresh(context)]
        readiness = context.readiness()
        for report in reports:  # the second run reads nothing, yet the failure stands
            assert (report.failed, report.skipped) == (1, 1)
        assert readiness.state == "degraded" and "1 file failed" in readiness.reason
        assert [f["code"] for f in readiness.failed] == ["corrupt"]
        (docs / "broken.pdf").unlink()
        fixed = _refresh(context)
        assert (fixed.failed, fixed.skipped) == (0, 1)
        assert context.readiness().state == "ready"
    finally:
        context.close()
