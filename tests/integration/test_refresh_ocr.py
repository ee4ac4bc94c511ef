"""Scans found by `refresh` under a search path go through the OCR jobs uploads go
through: queued by the refresh, read by a worker pool (Tesseract, the real embedding
model), merged with the text pages, searchable; queued once per version of the file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from tests.ocr_samples import (
    char_accuracy,
    image_bytes,
    mixed_pdf,
    needs_tesseract,
    page_image,
    scanned_pdf,
    sentences,
)

from autorag.context import AppContext, open_context
from autorag.ingest.minsync import RefreshReport, refresh
from autorag.jobs.worker import WorkerPool
from autorag.ocr import store
from autorag.ocr.service import refresh_planner, run_ocr_job
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog import queue
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.workspace import init_workspace

pytestmark = needs_tesseract

WAIT_S = 240.0
TEXT_PAGE = (
    "Shipping takes three to five working days inside the country. Orders placed "
    "before noon leave the warehouse the same day, and tracking codes arrive by email."
)


@dataclass
class Folder:
    """A workspace whose one search path holds the test's files."""

    context: AppContext
    docs: Path

    def refresh(self, *, retry_failed: bool = False) -> RefreshReport:
        context = self.context
        return refresh(
            context.catalog,
            context.info,
            context.indexer,
            context.roots,
            ignore=context.settings.ingest.ignore,
            retry_failed=retry_failed,
            ocr=refresh_planner(context),
        )

    def run_workers(self) -> None:
        """Start a worker pool and stop it once no job of the workspace is left."""
        pool = WorkerPool(self.context, workers=2, poll_interval=0.1)
        pool.start()
        try:
            deadline = time.monotonic() + WAIT_S
            while self._busy():
                assert time.monotonic() < deadline, "the OCR jobs did not finish"
                time.sleep(0.2)
        finally:
            pool.stop()

    def _busy(self) -> int:
        engine, workspace_id = self.context.catalog.engine, self.context.info.id
        return sum(
            queue.count_jobs(engine, workspace_id=workspace_id, status=status)
            for status in (queue.QUEUED, queue.RUNNING)
        )

    def document(self, name: str) -> DocumentRow:
        query = select(DocumentRow).where(DocumentRow.source_id == f"/docs/{name}")
        with Session(self.context.catalog.engine, expire_on_commit=False) as session:
            document = session.scalars(query).one()
        return document

    def jobs(self, name: str) -> list[store.OcrJob]:
        """The file's OCR jobs, newest first."""
        engine, workspace_id = self.context.catalog.engine, self.context.info.id
        return store.list_jobs(engine, workspace_id, document_id=self.document(name).id)[0]

    def chunk_pages(self, name: str) -> set[int | None]:
        query = select(ChunkRow.page).where(ChunkRow.document_id == self.document(name).id)
        with Session(self.context.catalog.engine) as session:
            return set(session.scalars(query))

    def found(self, query: str) -> list[str]:
        hits = self.context.searcher.search(SearchRequest(query, k=5, mode="fts")).hits
        return [Path(hit.source).name for hit in hits]


def _folder(root: Path, catalog_url: str | None = None, **settings: Any) -> Folder:
    docs = root / "docs"
    docs.mkdir()
    workspace = init_workspace(root / "kb")
    config: dict[str, Any] = {"search_paths": [str(docs)]}
    if catalog_url:
        config["database_url"] = catalog_url
    workspace.write_config(config)
    return Folder(open_context(workspace, **settings), docs)


@pytest.fixture()
def folder(tmp_path: Path) -> Iterator[Folder]:
    made = _folder(tmp_path)
    yield made
    made.context.close()


@pytest.fixture()
def any_catalog(tmp_path: Path, catalog_url: str | None) -> Iterator[Folder]:
    """``folder`` on each catalog backend."""
    made = _folder(tmp_path, catalog_url)
    yield made
    made.context.close()


def _scan(path: Path, *pages: list[str]) -> Path:
    return scanned_pdf(path, [page_image(lines) for lines in pages])


def _png(path: Path, *lines: str) -> Path:
    path.write_bytes(image_bytes(page_image(list(lines)), "PNG"))
    return path


def _restamp(path: Path) -> None:
    """A new mtime on the same bytes, as a copy or a backup restore gives."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


# -- the workflow ------------------------------------------------------------------------
def test_refresh_queues_scans_and_a_worker_pool_makes_them_searchable(
    any_catalog: Folder,
) -> None:
    folder = any_catalog
    scan_lines = [sentences(8, seed=51), sentences(8, seed=52)]
    scan_lines[1][2] = "The Quillfeather depot in Marlowe reopens on 14 March."
    _scan(folder.docs / "scan.pdf", *scan_lines)
    scanned_page = page_image(["Returns go to the Brackwater depot, dock 7, within 30 days."])
    mixed_pdf(folder.docs / "mixed.pdf", [TEXT_PAGE, scanned_page])
    _png(folder.docs / "memo.png", "The Wexford granary opens at dawn.")
    (folder.docs / "plain.md").write_text("# Orchard\n\nApples and pears in the orchard.\n")

    report = folder.refresh()
    assert (report.indexed, report.needs_ocr, report.failed, report.ocr_queued) == (2, 2, 0, 3)
    for name in ("scan.pdf", "memo.png"):
        document = folder.document(name)
        assert (document.status, document.error_code) == ("pending", "ocr_queued")
    assert folder.document("mixed.pdf").status == "ready"  # its text page at once
    assert folder.found("warehouse") == ["mixed.pdf"]
    assert [(j.status, j.pages_total) for j in folder.jobs("scan.pdf")] == [("queued", 2)]
    assert [(j.status, j.pages_total) for j in folder.jobs("mixed.pdf")] == [("queued", 1)]
    readiness = folder.context.readiness()
    assert readiness.state == "degraded" and "wait for background jobs" in readiness.reason
    assert readiness.last_refresh is not None
    assert (readiness.last_refresh["failed"], readiness.last_refresh["needs_ocr"]) == (0, 2)

    folder.run_workers()
    for name in ("scan.pdf", "mixed.pdf", "memo.png"):
        assert folder.document(name).status == "ready", folder.document(name).error
        [job] = folder.jobs(name)
        assert job.status == "indexed"
        assert {p.status for p in store.pages(folder.context.catalog.engine, job.id)} == {"done"}
    [scan_job] = folder.jobs("scan.pdf")
    pages = store.pages(folder.context.catalog.engine, scan_job.id)
    for page, lines in zip(pages, scan_lines, strict=True):
        assert char_accuracy("\n".join(lines), page.text) >= 0.98
    assert folder.chunk_pages("scan.pdf") == {1, 2}
    assert folder.chunk_pages("mixed.pdf") == {1, 2}  # text page kept, scanned page merged
    assert folder.found("Quillfeather Marlowe") == ["scan.pdf"]
    assert folder.found("Brackwater") == ["mixed.pdf"]
    assert folder.found("Wexford") == ["memo.png"]
    assert folder.context.readiness().state == "ready"

    again = folder.refresh()
    assert (again.unchanged, again.ocr_queued) == (4, 0)
    _restamp(folder.docs / "scan.pdf")
    touched = folder.refresh()
    assert (touched.unchanged, touched.indexed, touched.ocr_queued) == (4, 0, 0)
    assert [j.status for j in folder.jobs("scan.pdf")] == ["indexed"]
    assert folder.document("scan.pdf").status == "ready"


def test_a_changed_file_gets_a_new_job_and_its_old_one_is_superseded(
    any_catalog: Folder,
) -> None:
    folder = any_catalog
    memo = _png(folder.docs / "memo.png", "The Wexford granary opens at dawn.")
    assert folder.refresh().ocr_queued == 1
    _png(memo, "The Harrowgate mill closes at dusk.")  # changed while its job waits
    report = folder.refresh()
    assert (report.needs_ocr, report.ocr_queued) == (1, 1)
    new, old = folder.jobs("memo.png")
    assert new.status == "queued"
    assert old.status == "failed" and f"superseded by job {new.id}" in (old.reason or "")

    folder.run_workers()
    assert [j.status for j in folder.jobs("memo.png")] == ["indexed", "failed"]
    assert folder.document("memo.png").status == "ready"
    assert folder.found("Harrowgate") == ["memo.png"]
    assert folder.found("Wexford") == []

    _png(memo, "The Oakhollow ferry leaves at noon.")  # changed after it was read
    assert folder.refresh().ocr_queued == 1
    folder.run_workers()
    assert [j.status for j in folder.jobs("memo.png")] == ["indexed", "indexed", "failed"]
    assert folder.found("Oakhollow") == ["memo.png"]
    assert folder.found("Harrowgate") == []


def test_a_job_still_running_over_an_old_version_leaves_the_new_one_alone(
    folder: Folder,
) -> None:
    memo = _png(folder.docs / "memo.png", "The Wexford granary opens at dawn.")
    folder.refresh()
    [old] = folder.jobs("memo.png")
    _png(memo, "The Harrowgate mill closes at dusk.")
    folder.refresh()
    context = folder.context
    store.set_status(context.catalog.engine, old.id, "running")  # a worker had claimed it
    failure = run_ocr_job(context, old.id, indexer=context.indexer, guard=nullcontext)
    assert failure is not None and failure.startswith("ocr_superseded: the file changed")
    document = folder.document("memo.png")
    assert (document.status, document.error_code) == ("pending", "ocr_queued")
    assert [j.status for j in folder.jobs("memo.png")] == ["queued", "failed"]


# -- a file that moves under its waiting job ---------------------------------------------
def test_a_file_deleted_while_its_job_waits_fails_it_with_the_reason(folder: Folder) -> None:
    memo = _png(folder.docs / "memo.png", "The Wexford granary opens at dawn.")
    folder.refresh()
    memo.unlink()
    folder.run_workers()
    [job] = folder.jobs("memo.png")
    assert job.status == "failed" and f"{memo} is gone" in (job.reason or "")
    document = folder.document("memo.png")
    assert (document.status, document.error_code) == ("needs_ocr", "source_missing")
    assert folder.refresh().deleted == 1
    assert store.open_jobs(folder.context.catalog.engine, folder.context.info.id) == []


def test_a_file_changed_while_its_job_waits_is_queued_again_by_the_next_refresh(
    folder: Folder,
) -> None:
    memo = _png(folder.docs / "memo.png", "The Wexford granary opens at dawn.")
    folder.refresh()
    _png(memo, "The Harrowgate mill closes at dusk.")
    folder.run_workers()  # before any refresh saw the change
    [stale] = folder.jobs("memo.png")
    assert stale.status == "failed" and "changed after OCR was queued" in (stale.reason or "")
    assert folder.document("memo.png").error_code == "source_changed"
    assert folder.found("Wexford") == []  # never indexed from the new bytes

    assert folder.refresh().ocr_queued == 1
    folder.run_workers()
    assert folder.document("memo.png").status == "ready"
    assert folder.found("Harrowgate") == ["memo.png"]


# -- OCR off, and failures ---------------------------------------------------------------
def test_with_ocr_off_nothing_is_queued_and_turning_it_on_queues_the_scans(
    tmp_path: Path,
) -> None:
    off = _folder(tmp_path, ocr={"enabled": False})
    try:
        _png(off.docs / "memo.png", "The Wexford granary opens at dawn.")
        mixed_pdf(off.docs / "mixed.pdf", [TEXT_PAGE, page_image(["Brackwater depot"])])
        report = off.refresh()
        assert (report.indexed, report.needs_ocr, report.ocr_queued) == (1, 1, 0)
        document = off.document("memo.png")
        assert (document.status, document.error_code) == ("needs_ocr", "needs_ocr")
        assert store.open_jobs(off.context.catalog.engine, off.context.info.id) == []
        assert off.refresh().ocr_queued == 0
    finally:
        off.context.close()

    on = Folder(open_context(off.context.workspace), off.docs)
    try:
        report = on.refresh()
        # The scan OCR never read is queued; the mixed PDF's text is indexed already.
        assert (report.unchanged, report.ocr_queued) == (1, 1)
        assert on.document("memo.png").status == "pending"
    finally:
        on.context.close()


def test_retry_failed_queues_a_scan_whose_ocr_failed_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ocr={"max_image_pixels": 1_000_000})
    try:
        big = page_image(["The Wexford granary opens at dawn."])  # 8.7 MP: over the bound
        (folder.docs / "big.png").write_bytes(image_bytes(big, "PNG"))
        folder.refresh()
        folder.run_workers()
        assert folder.document("big.png").error_code == "ocr_failed"
        assert folder.refresh().ocr_queued == 0
        assert folder.refresh(retry_failed=True).ocr_queued == 1
        assert [j.status for j in folder.jobs("big.png")] == ["queued", "failed"]
    finally:
        folder.context.close()
