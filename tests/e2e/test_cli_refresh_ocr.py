"""``autorag refresh`` on a folder of scans as a user runs it: the scans are queued for
OCR, ``--ocr-now`` reads them in the command, and ``autorag search`` finds their text."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli import AUTORAG
from tests.e2e.test_cli_ocr import run, run_json
from tests.ocr_samples import image_bytes, mixed_pdf, needs_tesseract, page_image

pytestmark = needs_tesseract


def keyword_hits(kb: Path, word: str) -> list[tuple[str, int]]:
    """Full-text hits only: the vector leg would return the nearest chunk of anything."""
    hits = run_json(kb, "search", word, "--mode", "fts")["hits"]
    return [(Path(hit["source"]).name, hit["page"]) for hit in hits]


def test_refresh_queues_scans_and_ocr_now_makes_them_searchable(tmp_path: Path) -> None:
    docs = tmp_path / "scans"
    docs.mkdir()
    memo = page_image(["The Wexford granary opens at dawn."])
    (docs / "memo.png").write_bytes(image_bytes(memo, "PNG"))
    text = "Shipping takes three to five working days inside the country, by courier."
    mixed_pdf(docs / "mixed.pdf", [text * 2, page_image(["Returns go to the Brackwater depot."])])
    kb = tmp_path / "kb"
    subprocess.run([*AUTORAG, "init", str(kb)], check=True, capture_output=True)
    run(kb, "add", str(docs))

    queued = run(kb, "refresh").stdout
    assert "1 indexed" in queued and "1 need OCR" in queued
    assert "2 files queued for OCR" in queued and "autorag worker" in queued
    jobs = run_json(kb, "ocr", "jobs")
    assert sorted(job["status"] for job in jobs) == ["queued", "queued"]
    status = run_json(kb, "status")
    assert status["state"] == "degraded" and "--ocr-now" in status["reason"]
    assert keyword_hits(kb, "Wexford") == []

    report = run_json(kb, "refresh", "--ocr-now")
    assert (report["unchanged"], report["ocr_queued"], report["ocr"]) == (2, 0, {"indexed": 2})
    assert run_json(kb, "status")["state"] == "ready"
    assert keyword_hits(kb, "Wexford") == [("memo.png", 1)]
    assert keyword_hits(kb, "Brackwater") == [("mixed.pdf", 2)]

    (docs / "note.png").write_bytes(image_bytes(page_image(["The Oakhollow ferry."]), "PNG"))
    read = run(kb, "refresh", "--ocr-now").stdout
    assert "2 unchanged" in read and "OCR: 1 indexed" in read
    assert keyword_hits(kb, "Oakhollow") == [("note.png", 1)]
    assert run(kb, "refresh", "--ocr-now").stdout.endswith("OCR: no scans were waiting\n")
