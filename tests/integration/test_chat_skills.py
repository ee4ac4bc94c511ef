"""Workspace memory and chat attachments on a real catalog (SQLite and PostgreSQL) and
embedding model."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, func, insert, select
from tests.samples import write_docx, write_pdf
from tests.workspaces import new_workspace

from autorag.agent.skills.base import SkillContext
from autorag.chat.attachments import (
    ATTACHMENT_JOB,
    abandon_attachment,
    attach_file,
    delete_attachment,
    get_attachment,
    list_attachments,
    read_attachment,
    receive_attachment,
    search_attachments,
)
from autorag.chat.memory import (
    MAX_KEYS,
    delete_memory,
    get_memory,
    list_memory,
    set_memory,
)
from autorag.chat.skills.attachments import NO_ATTACHMENTS, DocumentTempProcess
from autorag.chat.skills.memory import WorkspaceMemory
from autorag.context import AppContext, open_context
from autorag.errors import InvalidInput, NotFound, PayloadTooLarge, UnsupportedMediaType
from autorag.ingest.minsync import refresh
from autorag.jobs.worker import WorkerPool
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.models import (
    ChatAttachmentChunkRow,
    ChatAttachmentRow,
    ChatRow,
    JobRow,
    WorkspaceMemoryRow,
    utcnow,
)

SUBMARINE = "The Quillfeather submarine docks at Port Ellery every second Tuesday."
# Pages long enough for a text layer: under 100 characters a PDF counts as a scan.
REFUNDS = [
    "Refund policy overview.\nCustomers may return goods for any reason at all, in any shop.",
    "Refunds are paid within nine working days.\nThey go back to the card used to pay.",
]


@pytest.fixture(scope="module")
def app(
    tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None
) -> Iterator[AppContext]:
    """A workspace with one indexed file, so its own search really runs."""
    root = tmp_path_factory.mktemp("chat-skills")
    docs = root / "docs"
    docs.mkdir()
    (docs / "notes.txt").write_text("The office cat is called Pixel.\n", encoding="utf-8")
    workspace = new_workspace(root / "kb", module_catalog_url, search_paths=[str(docs)])
    context = open_context(workspace)
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[])
    yield context
    context.close()


def _chat(app: AppContext) -> int:
    now = utcnow()
    with app.catalog.engine.begin() as conn:
        return int(
            conn.execute(
                insert(ChatRow)
                .values(workspace_id=app.info.id, title="t", created_at=now, updated_at=now)
                .returning(ChatRow.id)
            ).scalar_one()
        )


def _count(app: AppContext, table: type[ChatAttachmentRow | ChatAttachmentChunkRow]) -> int:
    with app.catalog.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _context(app: AppContext, chat_id: int | None, first: int = 1) -> SkillContext:
    return SkillContext(app, chat_id, None, first_citation_number=first)


# -- workspace memory -----------------------------------------------------------------
def test_memory_set_get_list_delete(app: AppContext) -> None:
    ws = app.catalog.ensure_workspace("memory-crud")
    set_memory(app.catalog, ws.id, "deadline", "Friday")
    set_memory(app.catalog.engine, ws.id, " owner ", "Ana")  # the engine works too
    set_memory(app.catalog, ws.id, "deadline", "Monday")  # an upsert, not a second key
    entry = get_memory(app.catalog, ws.id, "deadline")
    assert entry is not None and entry.value == "Monday" and entry.updated_at.tzinfo
    assert [(e.key, e.value) for e in list_memory(app.catalog, ws.id)] == [
        ("deadline", "Monday"),
        ("owner", "Ana"),
    ]
    assert delete_memory(app.catalog, ws.id, "owner")
    assert not delete_memory(app.catalog, ws.id, "owner")
    assert get_memory(app.catalog, ws.id, "owner") is None


def test_memory_is_per_workspace(app: AppContext) -> None:
    first = app.catalog.ensure_workspace("memory-a")
    second = app.catalog.ensure_workspace("memory-b")
    set_memory(app.catalog, first.id, "colour", "blue")
    set_memory(app.catalog, second.id, "colour", "red")
    delete_memory(app.catalog, second.id, "colour")
    entry = get_memory(app.catalog, first.id, "colour")
    assert entry is not None and entry.value == "blue"
    assert list_memory(app.catalog, second.id) == []


def test_memory_limits(app: AppContext) -> None:
    ws = app.catalog.ensure_workspace("memory-limits")
    with pytest.raises(InvalidInput, match="200 characters"):
        set_memory(app.catalog, ws.id, "k" * 201, "v")
    with pytest.raises(InvalidInput, match="empty"):
        set_memory(app.catalog, ws.id, "  ", "v")
    with pytest.raises(InvalidInput, match="8192 bytes"):
        set_memory(app.catalog, ws.id, "big", "é" * 4097)  # 8194 bytes of UTF-8
    set_memory(app.catalog, ws.id, "k" * 200, "x" * 8192)  # exactly at both limits
    rows = [
        {"workspace_id": ws.id, "key": f"key-{i}", "value": "v", "updated_at": utcnow()}
        for i in range(MAX_KEYS - 1)
    ]
    with app.catalog.engine.begin() as conn:
        conn.execute(insert(WorkspaceMemoryRow), rows)
    with pytest.raises(InvalidInput, match="full") as full:
        set_memory(app.catalog, ws.id, "one-too-many", "v")
    assert full.value.code == "memory_full"
    set_memory(app.catalog, ws.id, "key-7", "updated")  # a full memory still updates
    assert len(list_memory(app.catalog, ws.id)) == MAX_KEYS


def test_memory_skill(app: AppContext) -> None:
    scoped = app.for_workspace(app.catalog.ensure_workspace("memory-skill"))
    skill, context = WorkspaceMemory(), _context(scoped, None)
    assert skill.spec.name == "workspace_memory"
    assert skill.spec.parameters["properties"]["action"]["enum"] == ["get", "set", "list", "delete"]
    assert "Stored" in skill.run({"action": "set", "key": "tz", "value": "CET"}, context).content
    skill.run({"action": "set", "key": "budget", "value": 1200}, context)
    assert skill.run({"action": "get", "key": "tz"}, context).content == "tz: CET"
    assert skill.run({"action": "get", "key": "budget"}, context).content == "budget: 1200"
    listed = skill.run({"action": "list"}, context).content
    assert listed.startswith("2 keys:") and "- tz: CET" in listed
    assert "Deleted" in skill.run({"action": "delete", "key": "tz"}, context).content
    assert "No memory" in skill.run({"action": "get", "key": "tz"}, context).content
    with pytest.raises(InvalidInput, match="action"):
        skill.run({"action": "forget"}, context)
    with pytest.raises(InvalidInput, match="key"):
        skill.run({"action": "get"}, context)
    with pytest.raises(InvalidInput, match="value"):
        skill.run({"action": "set", "key": "x"}, context)


# -- chat attachments -----------------------------------------------------------------
def test_attached_files_are_searchable_in_their_chat_with_citations(
    app: AppContext, tmp_path: Path
) -> None:
    chat = _chat(app)
    docx = write_docx(tmp_path / "fleet.docx", [SUBMARINE, "Crew changes happen in May."])
    pdf = write_pdf(tmp_path / "refunds.pdf", REFUNDS)
    infos = [
        attach_file(app, chat, "fleet.docx", docx.read_bytes()),
        attach_file(app, chat, "refunds.pdf", pdf.read_bytes()),
        attach_file(app, chat, "notes.txt", b"Parking permits renew each January.\n"),
    ]
    assert [(i.name, i.doc_type) for i in infos] == [
        ("fleet.docx", "docx"),
        ("refunds.pdf", "pdf"),
        ("notes.txt", "txt"),
    ]
    assert all(i.chunks >= 1 for i in infos)
    assert list_attachments(app, chat) == infos

    top = search_attachments(app, chat, "Where does the Quillfeather submarine dock?", 3)[0]
    assert top.source == "chat-attachment:fleet.docx" and top.title == "fleet.docx"
    assert "Port Ellery" in top.text and top.legs == "both"
    assert top.number == 1 and top.document_id == -infos[0].id and top.chunk_id > 0

    refund = search_attachments(app, chat, "how fast are refunds paid", 1, first_number=7)[0]
    assert refund.title == "refunds.pdf" and refund.page == 2 and refund.number == 7
    only_txt = search_attachments(app, chat, "submarine", 5, name="notes.txt")
    assert {c.title for c in only_txt} == {"notes.txt"}


def test_attachments_never_reach_the_workspace_index(app: AppContext, tmp_path: Path) -> None:
    chunks_before = app.catalog.chunk_count(app.info.id)
    chat = _chat(app)
    docx = write_docx(tmp_path / "fleet.docx", [SUBMARINE])
    attach_file(app, chat, "fleet.docx", docx.read_bytes())
    hits = app.searcher.search(SearchRequest("Quillfeather submarine Port Ellery", k=10)).hits
    assert all("Quillfeather" not in h.text for h in hits)
    titles = [d.title for d in app.catalog.list_documents(app.info.id)]
    assert titles == ["notes"]  # the indexed file only
    assert app.catalog.chunk_count(app.info.id) == chunks_before


def test_attachments_belong_to_one_chat(app: AppContext) -> None:
    chat, other_chat = _chat(app), _chat(app)
    attach_file(app, chat, "fleet.txt", SUBMARINE.encode())
    assert search_attachments(app, other_chat, "Quillfeather submarine", 5) == []
    elsewhere = app.for_workspace(app.catalog.ensure_workspace("attachments-other"))
    with pytest.raises(NotFound):
        search_attachments(elsewhere, chat, "Quillfeather submarine", 5)
    with pytest.raises(NotFound):
        attach_file(elsewhere, chat, "x.txt", b"text")


def test_deleting_an_attachment_or_its_chat_removes_its_chunks(app: AppContext) -> None:
    attachments, chunks = _count(app, ChatAttachmentRow), _count(app, ChatAttachmentChunkRow)
    chat = _chat(app)
    first = attach_file(app, chat, "a.txt", SUBMARINE.encode())
    attach_file(app, chat, "b.md", b"# Parking\n\nPermits renew each January.\n")
    delete_attachment(app, chat, first.id)
    assert [a.name for a in list_attachments(app, chat)] == ["b.md"]
    with pytest.raises(NotFound):
        delete_attachment(app, chat, first.id)
    with app.catalog.engine.begin() as conn:
        conn.execute(delete(ChatRow).where(ChatRow.id == chat))
    assert _count(app, ChatAttachmentRow) == attachments
    assert _count(app, ChatAttachmentChunkRow) == chunks


def test_bad_attachments_are_refused_with_reasons(app: AppContext, tmp_path: Path) -> None:
    chat = _chat(app)
    pdf_bytes = write_pdf(tmp_path / "r.pdf", REFUNDS).read_bytes()
    with pytest.raises(InvalidInput, match="empty") as empty:
        attach_file(app, chat, "empty.txt", b"")
    assert empty.value.code == "empty_file"
    with pytest.raises(UnsupportedMediaType, match="not accepted"):
        attach_file(app, chat, "tool.exe", b"MZ\x90\x00")
    with pytest.raises(UnsupportedMediaType, match="application/pdf"):
        attach_file(app, chat, "letter.docx", pdf_bytes)
    with pytest.raises(InvalidInput, match=r"broken\.pdf") as broken:
        attach_file(app, chat, "broken.pdf", b"%PDF-1.4\nthis is no pdf at all")
    assert broken.value.code == "corrupt"
    with pytest.raises(InvalidInput, match="no text") as blank:
        attach_file(app, chat, "blank.txt", b"   \n\n  ")
    assert blank.value.code == "empty"
    limit = app.settings.server.max_upload_mb
    app.settings.server.max_upload_mb = 0.001  # about 1 KiB
    try:
        with pytest.raises(PayloadTooLarge, match="upload limit"):
            attach_file(app, chat, "big.txt", b"words " * 400)
    finally:
        app.settings.server.max_upload_mb = limit
    assert list_attachments(app, chat) == []


def test_document_temp_process_skill(app: AppContext) -> None:
    skill = DocumentTempProcess()
    assert skill.spec.name == "document_temp_process"
    assert skill.spec.parameters["required"] == ["query"]
    chat = _chat(app)
    empty = skill.run({"query": "submarine"}, _context(app, chat))
    assert empty.content == NO_ATTACHMENTS and empty.citations == []
    attach_file(app, chat, "Fleet.txt", SUBMARINE.encode())
    attach_file(app, chat, "parking.txt", b"Parking permits renew each January.\n")
    result = skill.run(
        {"query": "Quillfeather submarine dock", "attachment": "fleet.TXT"},
        _context(app, chat, first=4),
    )
    assert [c.number for c in result.citations] == [4]
    assert result.content.startswith("[4] [Source: Fleet.txt (match: semantic+keyword, score: ")
    assert "Port Ellery" in result.content and result.status == "Searched attachments: 1 passages"
    with pytest.raises(InvalidInput, match="no chat"):
        skill.run({"query": "submarine"}, _context(app, None))
    with pytest.raises(InvalidInput, match=r"attached: Fleet\.txt, parking\.txt"):
        skill.run({"query": "submarine", "attachment": "other.pdf"}, _context(app, chat))
    with pytest.raises(InvalidInput, match="query"):
        skill.run({"query": " "}, _context(app, chat))


# -- attachments read by a job -------------------------------------------------------
def _received(tmp_path: Path, data: bytes) -> Path:
    """A file as the API's multipart receiver leaves it: a temporary name, no type."""
    path = tmp_path / f"incoming-{len(list(tmp_path.iterdir()))}"
    path.write_bytes(data)
    return path


def _run_jobs(app: AppContext) -> None:
    """Run the workspace's queued attachment jobs on a real worker pool, to the end."""
    pool = WorkerPool(app, workers=1)
    pool.run_queued(kinds=[ATTACHMENT_JOB], workspace_id=app.info.id, tick=lambda: None)


def _jobs(app: AppContext) -> list[tuple[str, str | None]]:
    query = select(JobRow.status, JobRow.error).where(JobRow.kind == ATTACHMENT_JOB)
    with app.catalog.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query.order_by(JobRow.id)).all()]


def test_a_received_attachment_is_kept_privately_and_read_by_its_job(
    app: AppContext, tmp_path: Path
) -> None:
    chat = _chat(app)
    skill = DocumentTempProcess()
    received = _received(tmp_path, SUBMARINE.encode())
    waiting = receive_attachment(app, chat, "fleet.txt", received)
    assert (waiting.status, waiting.chunks, waiting.name) == ("processing", 0, "fleet.txt")
    assert not received.exists()
    (kept,) = app.workspace.attachments_dir.iterdir()
    assert kept.suffix == ".txt" and kept.read_bytes() == SUBMARINE.encode()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(app.workspace.attachments_dir.stat().st_mode) == 0o700
    # Asked before the job ran: the answer can say the file is not read yet.
    early = skill.run({"query": "Quillfeather submarine"}, _context(app, chat))
    assert early.citations == []
    assert "fleet.txt: still being read" in early.content
    _run_jobs(app)
    ready = get_attachment(app, chat, waiting.id)
    assert (ready.status, ready.chunks, ready.error_code) == ("ready", 1, None)
    assert not kept.exists()  # read: only its chunks remain
    found = skill.run({"query": "Quillfeather submarine"}, _context(app, chat))
    assert "Port Ellery" in found.content and "Not searched" not in found.content
    assert _jobs(app)[-1] == ("done", None)


def test_an_attachment_that_cannot_be_read_fails_with_its_reason(
    app: AppContext, tmp_path: Path
) -> None:
    chat = _chat(app)
    broken = receive_attachment(
        app, chat, "broken.pdf", _received(tmp_path, b"%PDF-1.4\nthis is no pdf at all")
    )
    lines = "".join(f"Line {n} of a long transcript about tides.\n" for n in range(2000))
    long = receive_attachment(app, chat, "long.txt", _received(tmp_path, lines.encode()))
    pages = app.settings.ocr.max_pages
    app.settings.ocr.max_pages = 2  # at most 10 chunks
    try:
        _run_jobs(app)
    finally:
        app.settings.ocr.max_pages = pages
    failed = get_attachment(app, chat, broken.id)
    assert (failed.status, failed.error_code, failed.chunks) == ("failed", "corrupt", 0)
    assert failed.error is not None and "broken.pdf" in failed.error
    too_long = get_attachment(app, chat, long.id)
    assert (too_long.status, too_long.error_code) == ("failed", "payload_too_large")
    assert too_long.error is not None and "too much text" in too_long.error
    assert list(app.workspace.attachments_dir.iterdir()) == []
    assert [status for status, _ in _jobs(app)[-2:]] == ["failed", "failed"]
    said = DocumentTempProcess().run({"query": "tides"}, _context(app, chat))
    assert "broken.pdf: could not be read (cannot read the attachment broken.pdf" in said.content


def test_what_is_cheap_to_check_is_refused_in_the_request(app: AppContext, tmp_path: Path) -> None:
    chat = _chat(app)
    pdf_bytes = write_pdf(tmp_path / "r.pdf", REFUNDS).read_bytes()
    refusals: list[tuple[str, bytes, type[Exception]]] = [
        ("empty.txt", b"", InvalidInput),
        ("tool.exe", b"MZ\x90\x00", UnsupportedMediaType),
        ("letter.docx", pdf_bytes, UnsupportedMediaType),
    ]
    for name, data, error in refusals:
        received = _received(tmp_path, data)
        with pytest.raises(error):
            receive_attachment(app, chat, name, received)
        assert not received.exists()  # consumed either way
    with pytest.raises(NotFound):
        receive_attachment(app, 10**9, "a.txt", _received(tmp_path, b"text"))
    assert list_attachments(app, chat) == []
    assert list(app.workspace.attachments_dir.iterdir()) == []


def test_an_attachment_deleted_or_abandoned_before_its_job_leaves_nothing(
    app: AppContext, tmp_path: Path
) -> None:
    chat = _chat(app)
    doomed = receive_attachment(app, chat, "a.txt", _received(tmp_path, SUBMARINE.encode()))
    delete_attachment(app, chat, doomed.id)
    _run_jobs(app)  # the job finds its attachment gone: it only removes the kept file
    assert list(app.workspace.attachments_dir.iterdir()) == []
    assert list_attachments(app, chat) == []
    stuck = receive_attachment(app, chat, "b.txt", _received(tmp_path, SUBMARINE.encode()))
    abandon_attachment(app, {"attachment_id": stuck.id, "file": _kept_name(app)})
    crashed = get_attachment(app, chat, stuck.id)
    assert (crashed.status, crashed.error_code) == ("failed", "processing_crashed")
    assert list(app.workspace.attachments_dir.iterdir()) == []
    for bad in ({"attachment_id": stuck.id, "file": "../autorag.db"}, {"file": "x"}):
        with pytest.raises(InvalidInput, match="attachment job"):
            read_attachment(app, bad)
    _run_jobs(app)  # its queued job then finds it no longer processing
    assert get_attachment(app, chat, stuck.id).status == "failed"


def _kept_name(app: AppContext) -> str:
    (kept,) = app.workspace.attachments_dir.iterdir()
    return kept.name
