"""Which pages need OCR: per page in PDFs, every frame of an image; images accepted as
uploads by what their bytes are; OCR text merged with a text layer, page by page."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from tests.ocr_samples import image_bytes, mixed_pdf, page_image, scanned_pdf

from autorag.errors import UnsupportedMediaType
from autorag.ingest.parsers import ParseError, parse_file
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.uploads import sniff, upload_type
from autorag.ocr.merge import merged_document
from autorag.ocr.store import OcrPage

LIMITS = IngestLimits()
TEXT = (
    "Shipping takes three to five working days inside the country. Orders placed "
    "before noon leave the warehouse the same day, and tracking codes arrive by email."
)


def test_a_mixed_pdf_lists_its_scanned_pages(tmp_path: Path) -> None:
    scan = page_image(["Scanned page"])
    path = mixed_pdf(tmp_path / "mixed.pdf", [TEXT, scan, TEXT, scan, "Page 5 of 5"])
    document = parse_file(path, limits=LIMITS)
    assert not document.needs_ocr  # enough text overall to index the text pages now
    assert document.ocr_pages == (2, 4, 5)  # page 5's short text layer is under the bar


def test_a_scanned_pdf_needs_ocr_on_every_page(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "scan.pdf", [page_image(["One"]), page_image(["Two"])])
    document = parse_file(path, limits=LIMITS)
    assert document.needs_ocr
    assert document.ocr_pages == (1, 2)


def test_a_text_pdf_needs_none(tmp_path: Path) -> None:
    path = mixed_pdf(tmp_path / "text.pdf", [TEXT, TEXT])
    assert parse_file(path, limits=LIMITS).ocr_pages == ()


@pytest.mark.parametrize(
    ("name", "fmt", "doc_type"),
    [("a.png", "PNG", "png"), ("a.jpg", "JPEG", "jpeg"), ("a.tiff", "TIFF", "tiff")],
)
def test_images_are_documents_for_ocr(tmp_path: Path, name: str, fmt: str, doc_type: str) -> None:
    path = tmp_path / name
    path.write_bytes(image_bytes(page_image(["Hello"]), fmt))
    document = parse_file(path, limits=LIMITS)
    assert (document.doc_type, document.pages, document.needs_ocr) == (doc_type, 1, True)
    assert document.ocr_pages == (1,)
    assert upload_type(name) == doc_type
    sniff(path, doc_type, LIMITS)


def test_every_tiff_frame_is_a_page(tmp_path: Path) -> None:
    path = tmp_path / "fax.tif"
    frames = [Image.new("1", (800, 1000), 1) for _ in range(4)]
    frames[0].save(path, save_all=True, append_images=frames[1:])
    assert parse_file(path, limits=LIMITS).ocr_pages == (1, 2, 3, 4)


def test_a_broken_image_fails_to_parse(tmp_path: Path) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(image_bytes(page_image(["x"]), "PNG")[:200])
    with pytest.raises(ParseError) as caught:
        parse_file(path, limits=LIMITS)
    assert caught.value.reason == "corrupt"


@pytest.mark.parametrize(
    ("content", "claimed"),
    [
        (b"%PDF-1.7\n" + bytes(300), "png"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "jpeg"),
        (b"\xff\xd8\xff\xe0" + bytes(64), "tiff"),
        (b"just some text, honestly " * 10, "png"),
    ],
)
def test_an_image_extension_must_match_the_bytes(
    tmp_path: Path, content: bytes, claimed: str
) -> None:
    path = tmp_path / f"upload.{claimed}"
    path.write_bytes(content)
    with pytest.raises(UnsupportedMediaType):
        sniff(path, claimed, LIMITS)


def _page(page: int, text: str, status: str = "done") -> OcrPage:
    return OcrPage(page, status, "tesseract", 0.9, 0.9, len(text), 0, text, None)


def test_ocr_text_fills_the_scanned_pages_in_order(tmp_path: Path) -> None:
    scan = page_image(["Scanned"])
    path = mixed_pdf(tmp_path / "mixed.pdf", [TEXT, scan, "Page 3 of 3"])
    merged = merged_document(
        path,
        [
            _page(2, "Returns are accepted for thirty days."),
            _page(3, "Pg 3"),  # shorter than the text layer: the layer stays
        ],
        LIMITS,
    )
    assert [s.page for s in merged.segments] == [1, 2, 3]
    assert merged.segments[1].text == "Returns are accepted for thirty days."
    assert merged.segments[2].text == "Page 3 of 3"
    assert not merged.needs_ocr and merged.ocr_pages == ()


def test_pages_that_were_not_read_add_nothing(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "scan.pdf", [page_image(["A"]), page_image(["B"])])
    merged = merged_document(
        path, [_page(1, "Alpha page text."), _page(2, "", status="blank")], LIMITS
    )
    assert [(s.page, s.text) for s in merged.segments] == [(1, "Alpha page text.")]
