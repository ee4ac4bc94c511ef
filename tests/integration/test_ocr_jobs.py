"""OCR jobs end to end: uploads stored as the API stores them, processed by a real
worker pool (Tesseract, the real embedding model), then searched.

Covers scanned, mixed and turned PDFs, images, the review workflow, the vision engine
against an Ollama and an OpenAI-compatible double on loopback, and every kind of bad
input.
"""

from __future__ import annotations

import base64
import hashlib
import io
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfWriter
from tests.doubles import ScriptedOllama, ScriptedOpenAI, ScriptedServer, Text
from tests.ocr_samples import (
    char_accuracy,
    image_bytes,
    mixed_pdf,
    needs_tesseract,
    page_image,
    sentences,
)

from autorag.context import AppContext, open_context
from autorag.ingest.uploads import ReceivedFile, store_upload
from autorag.jobs.worker import WorkerPool
from autorag.ocr import service, store
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog import outbox, queue
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.workspace import init_workspace
from autorag.workspace_settings import update_settings

pytestmark = needs_tesseract

WAIT_S = 240.0
SETTLED = ("indexed", "review", "rejected", "failed", "no_text")
GARBLE = [
    "Xkcd qwrtz bnmvx hjklp zzgt wrpl",
    "Ptkrs vbnm qwxz trpls gdfk mnbv",
    "Hrjk wqpt zxcv lkjh gfds qrst",
]
VISION_TEXT = "Quarterly tariff sheet: freight to Quillhaven costs 42 credits per crate."


@dataclass
class Env:
    context: AppContext
    pool: WorkerPool
    vision: ScriptedServer  # the model server of the vision provider
    root: Path

    def upload(self, name: str, content: bytes, ocr_mode: str = "auto") -> int:
        incoming = self.context.workspace.incoming_uploads_dir
        incoming.mkdir(parents=True, exist_ok=True)
        path = incoming / secrets.token_hex(8)
        path.write_bytes(content)
        received = ReceivedFile(path, name, len(content), hashlib.sha256(content).hexdigest())
        stored = store_upload(
            self.context.catalog.engine,
            self.context.info,
            self.context.workspace.data_dir,
            received,
            self.context.indexer.limits,
            ocr_mode=ocr_mode,
        )
        self.pool.notify()
        return stored.document_id

    def settle(self, document_id: int) -> DocumentRow:
        """The document once no job of its own is queued or running."""
        engine = self.context.catalog.engine
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            document = self.document(document_id)
            busy = queue.count_jobs(engine, workspace_id=self.context.info.id, status="queued")
            busy += queue.count_jobs(engine, workspace_id=self.context.info.id, status="running")
            if not busy and document.status not in ("pending", "indexing"):
                return document
            time.sleep(0.2)
        raise AssertionError(f"document {document_id} did not settle: {self.document(document_id)}")

    def document(self, document_id: int) -> DocumentRow:
        from sqlalchemy.orm import Session

        with Session(self.context.catalog.engine, expire_on_commit=False) as session:
            document = session.get(DocumentRow, document_id)
        assert document is not None
        return document

    def job(self, document_id: int) -> store.OcrJob:
        jobs, _ = store.list_jobs(
            self.context.catalog.engine, self.context.info.id, document_id=document_id
        )
        assert jobs, f"no OCR job for document {document_id}"
        return jobs[0]

    def chunks(self, document_id: int) -> list[tuple[int | None, str]]:
        from sqlalchemy import select
        from sqlalchemy.orm import Session

        query = select(ChunkRow.page, ChunkRow.text).where(ChunkRow.document_id == document_id)
        with Session(self.context.catalog.engine) as session:
            return [(p, t) for p, t in session.execute(query.order_by(ChunkRow.chunk_index))]

    def search(self, query: str) -> list[int]:
        hits = self.context.searcher.search(SearchRequest(query, k=5, mode="fts")).hits
        return [hit.document_id for hit in hits]


@contextmanager
def _running(root: Path, vision: ScriptedServer, kind: str) -> Iterator[Env]:
    """A workspace whose vision provider, of ``kind``, is the ``vision`` double."""
    workspace = init_workspace(root)
    with vision:
        context = open_context(
            workspace,
            llm={"providers": [{"name": "box", "kind": kind, "base_url": vision.base_url}]},
            ocr={
                "max_pages": 4,
                "vision_provider": "box",
                "vision_model": "ocr-vision",
                "vision_max_pages": 1,
            },
        )
        pool = WorkerPool(context, workers=2, poll_interval=0.1)
        pool.start()
        try:
            yield Env(context, pool, vision, root)
        finally:
            pool.stop()
            context.close()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    ollama = ScriptedOllama(default=Text(""), models=["ocr-vision"])
    with _running(tmp_path_factory.mktemp("ocr-jobs") / "kb", ollama, "ollama") as env:
        yield env


@pytest.fixture(scope="module")
def openai_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    server = ScriptedOpenAI(default=Text(""), models=["ocr-vision"])
    with _running(tmp_path_factory.mktemp("ocr-openai") / "kb", server, "openai") as env:
        yield env


@pytest.fixture(autouse=True)
def _quiet_vision(env: Env) -> None:
    env.vision.reset([])  # answers nothing (empty text) unless a test scripts it


def _pdf_bytes(pages: list[Image.Image]) -> bytes:
    buffer = io.BytesIO()
    first, *rest = pages
    first.save(buffer, "PDF", resolution=300, save_all=True, append_images=rest)
    return buffer.getvalue()


# -- scans, mixed, turned, images ----------------------------------------------------------
def test_a_scanned_pdf_is_read_page_by_page_and_indexed(env: Env) -> None:
    pages = [sentences(12, seed=11), sentences(12, seed=12)]
    pages[1][3] = "The Quillfeather depot in Marlowe reopens on 14 March."
    document_id = env.upload("scan.pdf", _pdf_bytes([page_image(p) for p in pages]))
    document = env.settle(document_id)
    assert document.status == "ready", document.error
    job = env.job(document_id)
    assert (job.status, job.pages_done, job.pages_total) == ("indexed", 2, 2)
    assert job.engine == "tesseract" and (job.quality or 0) > 0.85
    results = store.pages(env.context.catalog.engine, job.id)
    assert [p.status for p in results] == ["done", "done"]
    for page, lines in zip(results, pages, strict=True):
        assert char_accuracy("\n".join(lines), page.text) >= 0.98
    chunk_pages = {page for page, _ in env.chunks(document_id)}
    assert chunk_pages == {1, 2}
    assert document_id in env.search("Quillfeather depot Marlowe")


def test_a_mixed_pdf_is_searchable_at_once_and_gains_its_scanned_page(
    env: Env, tmp_path: Path
) -> None:
    text_page = (
        "Shipping takes three to five working days inside the country. Orders placed "
        "before noon leave the warehouse the same day, and tracking codes arrive by email."
    )
    scan = page_image(["Returns go to the Brackwater depot, dock 7, within 30 days."])
    path = mixed_pdf(tmp_path / "mixed.pdf", [text_page, scan, text_page])
    document_id = env.upload("mixed.pdf", path.read_bytes())
    document = env.settle(document_id)
    assert document.status == "ready"
    job = env.job(document_id)
    assert job.status == "indexed" and job.pages_total == 1
    chunks = env.chunks(document_id)
    assert any(page == 2 and "Brackwater depot" in text for page, text in chunks)
    assert any(page == 1 and "working days" in text for page, text in chunks)
    assert document_id in env.search("Brackwater depot dock")


def test_a_page_scanned_upside_down_is_turned_and_read(env: Env) -> None:
    lines = sentences(10, seed=21)
    lines[0] = "Inverted ledger of the Harrowgate cooperative."
    turned = page_image(lines).transpose(Image.Transpose.ROTATE_180)
    document_id = env.upload("upside-down.pdf", _pdf_bytes([turned]))
    assert env.settle(document_id).status == "ready"
    [page] = store.pages(env.context.catalog.engine, env.job(document_id).id)
    assert page.rotation == 180
    assert char_accuracy("\n".join(lines), page.text) >= 0.98
    assert document_id in env.search("Harrowgate cooperative")


@pytest.mark.parametrize(("name", "fmt"), [("memo.png", "PNG"), ("memo.jpg", "JPEG")])
def test_images_are_read_and_indexed(env: Env, name: str, fmt: str) -> None:
    word = f"Zephyrine{fmt.lower()}"
    image = page_image([f"Memo about the {word} account.", *sentences(4, seed=31)])
    document_id = env.upload(name, image_bytes(image, fmt))
    document = env.settle(document_id)
    assert document.status == "ready", document.error
    assert document.doc_type == ("png" if fmt == "PNG" else "jpeg")
    assert document_id in env.search(word)


def test_every_page_of_a_tiff_is_read(env: Env) -> None:
    frames = [page_image([f"Fax page {n} for the Oakhollow office."]).convert("1") for n in (1, 2)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "TIFF", save_all=True, append_images=frames[1:], dpi=(300, 300))
    document_id = env.upload("fax.tiff", buffer.getvalue())
    assert env.settle(document_id).status == "ready"
    assert {page for page, _ in env.chunks(document_id)} == {1, 2}


def test_skip_leaves_a_scan_unread(env: Env) -> None:
    document_id = env.upload("skipped.pdf", _pdf_bytes([page_image(sentences(3, 41))]), "skip")
    document = env.settle(document_id)
    assert (document.status, document.error_code) == ("needs_ocr", "needs_ocr")
    assert (
        store.list_jobs(env.context.catalog.engine, env.context.info.id, document_id=document_id)[1]
        == 0
    )


# -- review ---------------------------------------------------------------------------
def test_a_poor_read_waits_for_review_then_approval_indexes_it(env: Env) -> None:
    document_id = env.upload("garbled.png", image_bytes(page_image(GARBLE), "PNG"))
    document = env.settle(document_id)
    assert (document.status, document.error_code) == ("needs_ocr", "ocr_review")
    job = env.job(document_id)
    assert job.status == "review" and "below the review bar" in (job.reason or "")
    assert (job.credibility or 1) < 0.6
    assert document_id not in env.search("Xkcd qwrtz")
    approved = service.approve(
        env.context,
        job.id,
        reviewer="tester",
        user_id=None,
        indexer=env.context.indexer,
        guard=env.pool.locks(env.context.info.id).exclusive,
    )
    assert (approved.status, approved.reviewed_by) == ("indexed", "tester")
    assert env.document(document_id).status == "ready"
    events = outbox.list_events(env.context.catalog.engine, newest_first=False)
    waiting = [e.data for e in events if e.name == "ocr.review_needed"]
    assert {"job": job.id, "document": document_id}.items() <= waiting[-1].items()
    assert [e.data for e in events if e.name == "ocr.approved"][-1]["job"] == job.id
    assert document_id in env.search("Xkcd qwrtz")
    with pytest.raises(Exception, match="not waiting for review"):
        service.reject(env.context, job.id, reviewer="tester", user_id=None)


def test_a_rejected_read_is_never_indexed(env: Env) -> None:
    lines = [line.replace("X", "V") for line in GARBLE]
    document_id = env.upload("garbled2.png", image_bytes(page_image(lines), "PNG"))
    env.settle(document_id)
    job = env.job(document_id)
    assert job.status == "review"
    rejected = service.reject(env.context, job.id, reviewer="tester", user_id=None)
    assert rejected.status == "rejected"
    document = env.document(document_id)
    assert (document.status, document.error_code) == ("needs_ocr", "ocr_rejected")
    assert env.chunks(document_id) == []
    assert document_id not in env.search("Vkcd qwrtz")


# -- the vision engine against the model server doubles --------------------------------
def test_vision_mode_reads_pages_through_ollama(env: Env) -> None:
    update_settings(
        env.context.catalog, env.context.info, {"ocr_instructions": "Keep tariff tables."}
    )
    grounded = (
        "<|ref|>title<|/ref|><|det|>[[40, 30, 900, 80]]<|/det|>\n"
        f"{VISION_TEXT}\n<|ref|>text<|/ref|><|det|>[[40, 90, 900, 120]]<|/det|>"
    )
    env.vision.reset([Text(grounded)])
    pages = [page_image(["A tariff sheet"]), page_image(["A second sheet"])]
    document_id = env.upload("tariffs.pdf", _pdf_bytes(pages), "vision")
    assert env.settle(document_id).status == "ready"
    job = env.job(document_id)
    results = store.pages(env.context.catalog.engine, job.id)
    assert [(p.status, p.engine) for p in results] == [("done", "vision"), ("skipped", None)]
    assert results[0].text == VISION_TEXT
    assert "vision page cap" in (results[1].reason or "")
    [request] = env.vision.requests
    assert request["model"] == "ocr-vision"
    system, user = request["messages"]
    assert system["role"] == "system" and system["content"].endswith("Keep tariff tables.")
    image = Image.open(io.BytesIO(base64.b64decode(user["images"][0])))
    assert image.format == "PNG" and max(image.size) == 2048
    assert document_id in env.search("Quillhaven freight crate")


def test_vision_mode_reads_pages_through_an_openai_compatible_model(openai_env: Env) -> None:
    env = openai_env
    env.vision.reset([Text(VISION_TEXT.replace("Quillhaven", "Ashcombe"))])
    document_id = env.upload("tariffs.png", image_bytes(page_image(["A tariff"]), "PNG"), "vision")
    assert env.settle(document_id).status == "ready"
    [page] = store.pages(env.context.catalog.engine, env.job(document_id).id)
    assert (page.status, page.engine) == ("done", "vision")
    assert "Ashcombe costs 42 credits" in (page.text or "")
    [request] = env.vision.requests
    assert request["model"] == "ocr-vision" and request["temperature"] == 0
    system, user = request["messages"]
    assert system["role"] == "system" and system["content"].startswith("You are an OCR engine")
    assert [part["type"] for part in user["content"]] == ["text", "image_url"]
    [png] = env.vision.images(request)
    assert Image.open(io.BytesIO(png)).format == "PNG"
    assert document_id in env.search("Ashcombe freight crate")


def test_auto_turns_to_vision_when_the_local_read_is_poor(env: Env) -> None:
    env.vision.reset([Text(VISION_TEXT.replace("Quillhaven", "Brightmoor"))])
    lines = [line.replace("X", "Q") for line in GARBLE]
    document_id = env.upload("poor.png", image_bytes(page_image(lines), "PNG"))
    assert env.settle(document_id).status == "ready"
    [page] = store.pages(env.context.catalog.engine, env.job(document_id).id)
    assert page.engine == "vision"
    assert document_id in env.search("Brightmoor")


# -- bad input --------------------------------------------------------------------------
def _blank_pdf(pages: int, password: str | None = None) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    if password:
        writer.encrypt(password, algorithm="AES-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("1", (width, height), 1).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "content", "code", "words"),
    [
        ("locked.pdf", _blank_pdf(1, password="secret"), "encrypted", "password"),
        ("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 16, "corrupt", "damaged"),
        ("empty.pdf", _blank_pdf(0), "empty", "no pages"),
        ("bomb.png", _png(15_000, 15_000), "too_large", "decompression bomb"),
    ],
    ids=["password", "corrupt", "zero-pages", "decompression-bomb"],
)
def test_unreadable_files_fail_with_their_reason(
    env: Env, name: str, content: bytes, code: str, words: str
) -> None:
    document = env.settle(env.upload(name, content))
    # A PDF without pages is empty: skipped with its reason, not a failure of the workspace.
    status = "skipped" if code == "empty" else "failed"
    assert (document.status, document.error_code) == (status, code)
    assert words in (document.error or "").lower()


def test_a_huge_image_fails_ocr_with_the_limit_named(env: Env) -> None:
    document_id = env.upload("huge.png", _png(8000, 8000))
    document = env.settle(document_id)
    assert (document.status, document.error_code) == ("needs_ocr", "ocr_failed")
    assert "over the 40 MP limit" in (document.error or "")
    assert env.job(document_id).status == "failed"


def test_a_ten_thousand_page_scan_is_capped_with_a_reason(env: Env) -> None:
    document_id = env.upload("ten-thousand.pdf", _blank_pdf(10_000))
    document = env.settle(document_id)
    job = env.job(document_id)
    assert (job.pages_total, job.pages_done, job.status) == (10_000, 10_000, "no_text")
    results = store.pages(env.context.catalog.engine, job.id)
    assert [p.status for p in results[:4]] == ["blank"] * 4
    assert {p.status for p in results[4:]} == {"skipped"}
    assert "over the OCR page cap of 4" in (results[4].reason or "")
    assert (document.status, document.error_code) == ("needs_ocr", "ocr_empty")


def test_the_worker_stays_healthy_after_bad_input(env: Env) -> None:
    image = page_image(["The Ravenscar annex keeps the spare keys."])
    document_id = env.upload("after.png", image_bytes(image, "PNG"))
    assert env.settle(document_id).status == "ready"
    assert document_id in env.search("Ravenscar annex")
    assert all(thread.is_alive() for thread in env.pool._threads)
