"""A document's own date, per format, from tiny real files written with each format's
library; implausible or malformed dates are no date (the file's mtime stands)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from autorag.ingest.parsers import parse_file
from autorag.ingest.parsers.dates import front_matter_date, plausible
from autorag.ingest.parsers.guards import IngestLimits
from autorag.models import ParsedDocument

LIMITS = IngestLimits(max_file_bytes=10**8, max_unzipped_bytes=10**9)
TEXT = "Refund requests are answered within five business days by the support desk."
MARCH = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)

_XMP = """<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
<xmp:CreateDate>2024-11-05T08:00:00Z</xmp:CreateDate></rdf:Description></rdf:RDF></x:xmpmeta>
<?xpacket end="w"?>"""


def _parse(path: Path) -> ParsedDocument:
    return parse_file(path, limits=LIMITS)


def _pdf(path: Path, info: dict[str, str] | None = None, xmp: str | None = None) -> Path:
    plain = path.with_suffix(".plain.pdf")
    drawing = canvas.Canvas(str(plain), pagesize=A4, invariant=True)
    drawing.drawString(60, 800, TEXT)
    drawing.showPage()
    drawing.save()
    writer = PdfWriter(clone_from=str(plain))
    if info:
        writer.add_metadata(info)
    if xmp is not None:
        stream = DecodedStreamObject()
        stream.set_data(xmp.encode())
        stream[NameObject("/Type")] = NameObject("/Metadata")
        stream[NameObject("/Subtype")] = NameObject("/XML")
        writer.root_object[NameObject("/Metadata")] = writer._add_object(stream)
    writer.write(path)
    return path


def test_pdf_creation_date_is_the_documents_date(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "a.pdf", {"/CreationDate": "D:20250301093000+00'00'"})
    assert _parse(path).date == MARCH


def test_pdf_creation_date_with_a_zone_is_kept_as_utc(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "a.pdf", {"/CreationDate": "D:20250301113000+02'00'"})
    assert _parse(path).date == MARCH


def test_pdf_xmp_create_date_when_the_info_has_none(tmp_path: Path) -> None:
    # ReportLab's invariant mode writes 2000-01-01; a writer without /CreationDate is
    # imitated by a garbage value, which is no date, so XMP speaks.
    path = _pdf(tmp_path / "a.pdf", {"/CreationDate": "D:garbage"}, xmp=_XMP)
    assert _parse(path).date == datetime(2024, 11, 5, 8, 0, tzinfo=UTC)


def test_pdf_date_in_the_future_is_no_date(tmp_path: Path) -> None:
    path = _pdf(
        tmp_path / "a.pdf",
        {"/CreationDate": "D:20991231000000+00'00'", "/ModDate": "D:20991231000000+00'00'"},
    )
    assert _parse(path).date is None


def test_docx_core_properties_created(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph(TEXT)
    document.core_properties.created = MARCH.replace(tzinfo=None)  # Office keeps UTC, naive
    path = tmp_path / "a.docx"
    document.save(str(path))
    assert _parse(path).date == MARCH


def test_pptx_core_properties_created(tmp_path: Path) -> None:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Refunds"
    slide.placeholders[1].text = TEXT
    deck.core_properties.created = MARCH.replace(tzinfo=None)
    path = tmp_path / "a.pptx"
    deck.save(str(path))
    assert _parse(path).date == MARCH


def test_xlsx_properties_created(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["topic", "answer"])
    sheet.append(["refunds", TEXT])
    book.properties.created = MARCH.replace(tzinfo=None)
    path = tmp_path / "a.xlsx"
    book.save(str(path))
    assert _parse(path).date == MARCH


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("date: 2025-03-01", datetime(2025, 3, 1, tzinfo=UTC)),
        ('date: "2025-03-01T09:30:00Z"', MARCH),
        ("title: Refunds\nDate: '2025-03-01 09:30:00' # when it was approved", MARCH),
        ("date: next tuesday", None),
        ("date: 2999-01-01", None),
        ("updated: 2025-03-01", None),
    ],
)
def test_markdown_front_matter_date(tmp_path: Path, front: str, expected: datetime | None) -> None:
    path = tmp_path / "a.md"
    path.write_text(f"---\n{front}\n---\n# Refunds\n\n{TEXT}\n", encoding="utf-8")
    assert _parse(path).date == expected


def test_front_matter_only_at_the_start_of_the_file() -> None:
    assert front_matter_date(f"# Refunds\n\n---\ndate: 2025-03-01\n---\n{TEXT}") is None
    assert front_matter_date(f"---\ndate: 2025-03-01\n{TEXT}") is None  # never closed


def test_formats_without_metadata_have_no_date(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(f"date: 2025-03-01\n{TEXT}", encoding="utf-8")
    assert _parse(path).date is None


def test_plausible_bounds_and_zones() -> None:
    assert plausible(datetime(1899, 12, 31)) is None
    assert plausible(datetime.now(UTC) + timedelta(days=3)) is None
    assert plausible("2025-03-01") is None  # only real date values
    assert plausible(datetime(2025, 3, 1, 9, 30)) == MARCH
