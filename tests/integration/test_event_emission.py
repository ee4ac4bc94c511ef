"""Each emission point writes its event with its change, through the real operation:
documents processed, failed and deleted (uploads and the pipeline), answers saved,
users and workspaces created, changed and deleted, approvals requested, the audit's
events (DLP). OCR reviews, syntheses and backups are checked in their own modules'
tests (test_ocr_jobs, test_synth_service, test_backup_service). Data is ids, names and
counts: never a document's or a chat's text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from tests.workspaces import new_workspace

from autorag.auth.service import create_user, delete_user
from autorag.chat import store as chats
from autorag.context import AppContext, open_context, open_policy
from autorag.dlp.service import DlpContext, DlpService
from autorag.errors import Conflict
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.uploads import ReceivedFile, process_upload, set_status, store_upload
from autorag.llm.base import Usage
from autorag.ops.workspaces import create_workspace, delete_workspace, rename_workspace
from autorag.p2p.approvals import PendingSource, approvals_of
from autorag.store.catalog import outbox
from autorag.store.catalog.outbox import Event
from autorag.workspace_settings import update_settings

LIMITS = IngestLimits(max_file_bytes=10**7, max_unzipped_bytes=10**8)
SECRET_TEXT = "The harbour master's rota: Ines takes the night watch on Tuesdays."


class HashEmbedder:
    """Vectors from a hash of the text: the embedder is not what these tests test."""

    provider, model, dim = "fake", "hash", 384  # the size the default model's store holds

    @property
    def model_id(self) -> str:
        return "fake:hash"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [self.embed_query(text) for text in texts]
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        row = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return row / np.linalg.norm(row)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppContext]:
    workspace = new_workspace(tmp_path_factory.mktemp("emission") / "kb")
    context = open_context(workspace)
    context.__dict__["embedder"] = HashEmbedder()
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def since(app: AppContext) -> int:
    """The newest event's id before the test: what it emits comes after."""
    return outbox.latest_id(app.catalog.engine)


def emitted(app: AppContext, after: int) -> list[Event]:
    return outbox.list_events(app.catalog.engine, after_id=after, newest_first=False)


def _upload(app: AppContext, name: str, content: bytes, by: str = "alice") -> int:
    incoming = app.workspace.incoming_uploads_dir
    incoming.mkdir(parents=True, exist_ok=True)
    path = incoming / f"part-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    path.write_bytes(content)
    received = ReceivedFile(path, name, len(content), hashlib.sha256(content).hexdigest())
    stored = store_upload(
        app.catalog.engine, app.info, app.workspace.data_dir, received, LIMITS, uploaded_by=by
    )
    process_upload(app.indexer, app.workspace.data_dir, stored.document_id)
    return stored.document_id


def _no_content(events: Sequence[Event]) -> None:
    for event in events:
        assert SECRET_TEXT[:20] not in json.dumps(dict(event.data))


def test_an_upload_processed_then_deleted(app: AppContext, since: int) -> None:
    document_id = _upload(app, "rota.txt", SECRET_TEXT.encode())
    app.indexer.remove([document_id])
    events = emitted(app, since)
    assert [e.name for e in events] == ["document.processed", "document.deleted"]
    processed, deleted = events
    assert (processed.workspace, processed.actor) == ("default", "alice")
    assert processed.data["document"] == document_id and processed.data["chunks"] >= 1
    assert processed.data["origin"] == "upload" and processed.data["type"] == "txt"
    assert deleted.data["document"] == document_id
    _no_content(events)


def test_a_source_is_named_only_when_its_policy_lets_it_leave(app: AppContext) -> None:
    # Events leave the server (webhooks, notifications): a private file's name does not.
    since = outbox.latest_id(app.catalog.engine)
    _upload(app, "salaries-2026.txt", b"Quarterly figures for the board.")
    (private,) = emitted(app, since)
    assert private.data["source"] is None and private.data["sourceWithheld"] == "private"
    assert "salaries" not in json.dumps(dict(private.data))

    open_policy(app).set_rule("/uploads/**", "share")
    since = outbox.latest_id(app.catalog.engine)
    _upload(app, "menu.txt", b"Soup of the day: lentils.")
    (shared,) = emitted(app, since)
    assert "menu.txt" in str(shared.data["source"]) and "sourceWithheld" not in shared.data
    open_policy(app).remove_rule("/uploads/**")


def test_a_document_that_fails(app: AppContext, since: int) -> None:
    document_id = _upload(app, "broken.pdf", b"%PDF-1.4\n" + b"\x00not a pdf" * 20, by="bob")
    (failed,) = emitted(app, since)
    assert (failed.name, failed.actor) == ("document.failed", "bob")
    assert failed.data["document"] == document_id and failed.data["code"]
    # A job that crashed marks its document failed the other way: an event too.
    set_status(app.catalog.engine, document_id, "failed", code="processing_error")
    assert [e.name for e in emitted(app, failed.id)] == ["document.failed"]


def test_an_answer_saved(app: AppContext, since: int) -> None:
    user = create_user(app.catalog, "carol", "a long enough password", "member")
    chat = chats.create_chat(app.catalog.engine, app.info.id, user.id, "rota")
    chats.add_user_message(app.catalog.engine, chat.id, SECRET_TEXT)
    answer = chats.AssistantMessage(
        SECRET_TEXT, [], None, "extractive", "extractive", "", Usage(12, 34)
    )
    message_id = chats.add_assistant_message(app.catalog.engine, chat.id, answer)
    completed = emitted(app, since)[-1]
    assert (completed.name, completed.workspace, completed.actor) == (
        "chat.completed",
        "default",
        "carol",
    )
    assert completed.data == {
        "chat": chat.id,
        "message": message_id,
        "model": "extractive",
        "provider": "extractive",
        "aborted": None,
        "citations": 0,
        "promptTokens": 12,
        "completionTokens": 34,
    }
    _no_content([completed])


def test_users_created_and_deleted_and_a_refused_one_leaves_none(
    app: AppContext, since: int
) -> None:
    created = create_user(app.catalog, "dave", "a long enough password", "manager")
    with pytest.raises(Conflict):
        create_user(app.catalog, "dave", "another long password", "member")
    delete_user(app.catalog, "dave")
    events = emitted(app, since)
    assert [(e.name, e.data) for e in events] == [
        ("user.created", {"user": created.id, "username": "dave", "role": "manager"}),
        ("user.deleted", {"user": created.id, "username": "dave", "role": "manager"}),
    ]


def test_workspaces_created_changed_renamed_and_deleted(app: AppContext, since: int) -> None:
    info = create_workspace(app.catalog, "harbour")
    update_settings(app.catalog, info, {"redact_on_ingest": True})
    scoped = app.for_workspace(info)
    renamed = rename_workspace(scoped, "port", protected="default")
    delete_workspace(app.for_workspace(renamed), protected="default")
    events = emitted(app, since)
    assert [(e.name, e.workspace, e.data) for e in events] == [
        ("workspace.created", "harbour", {"workspace": info.id}),
        (
            "workspace.updated",
            "harbour",
            {"workspace": info.id, "settings": ["redact_on_ingest"]},
        ),
        ("workspace.updated", "port", {"workspace": info.id, "renamedFrom": "harbour"}),
        ("workspace.deleted", "port", {"workspace": info.id}),
    ]


def test_an_approval_requested(app: AppContext, since: int) -> None:
    source = PendingSource("/docs/rota.txt", "Rota", SECRET_TEXT, 0.9)
    request = approvals_of(app).create(
        peer="lisbon", contact_id=3, query_id="q1", query=SECRET_TEXT, sources=[source]
    )
    (event,) = emitted(app, since)
    assert (event.name, event.workspace, event.actor) == (
        "p2p.approval_requested",
        "default",
        "peer:lisbon",
    )
    assert event.data == {
        "request": request.id,
        "peer": "lisbon",
        "sources": 1,
        "expiresAt": request.expires_at.isoformat(),
    }
    _no_content([event])


def test_the_audit_joins_the_event_log(app: AppContext, since: int) -> None:
    user = create_user(app.catalog, "erin", "a long enough password", "member")
    context = DlpContext("chat", "chat_input", user.id, user.role, app.info.id)
    DlpService(app.catalog).session(context).scan_many(["card 4111 1111 1111 1111"])
    redacted = emitted(app, since)[-1]
    assert (redacted.name, redacted.actor, redacted.workspace) == (
        "dlp.redacted",
        "erin",
        "default",
    )
    assert redacted.data == {"channel": "chat_input", "types": ["credit_card"], "count": 1}
