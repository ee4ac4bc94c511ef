"""Each parser on sample files written in tmp_path by the formats' own writer libraries."""

from __future__ import annotations

import csv
import subprocess
import sys
import zipfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from pptx.util import Inches
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from autorag.ingest.parsers import PARSERS, ParseError, parse_file, parser_for
from autorag.ingest.parsers.docx import DocxParser
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.parsers.html import HtmlParser
from autorag.ingest.parsers.tabular import CsvParser, XlsxParser, group_rows
from autorag.ingest.parsers.text import decode_text, markdown_title
from autorag.models import ParsedDocument

LIMITS = IngestLimits()
LONG_LINE = "Refunds are issued to the original payment method within ten business days."


def parse(path: Path) -> ParsedDocument:
    return parse_file(path, limits=LIMITS)


def reason_of(path: Path) -> str:
    with pytest.raises(ParseError) as caught:
        parse(path)
    return caught.value.reason


# --- PDF -------------------------------------------------------------------------------


def make_pdf(path: Path, pages: list[list[str]], title: str | None = None) -> Path:
    pdf = canvas.Canvas(str(path), pagesize=A4)
    if title:
        pdf.setTitle(title)
    for lines in pages:
        for n, line in enumerate(lines):
            pdf.drawString(72, 770 - 16 * n, line)
        pdf.showPage()
    pdf.save()
    return path


def encrypt_pdf(source: Path, target: Path, user_password: str) -> Path:
    writer = PdfWriter(clone_from=PdfReader(source))
    # RC4 works without the optional `cryptography` package that AES needs.
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    writer.write(target)
    return target


def test_pdf_segments_carry_page_numbers_and_skip_blank_pages(tmp_path: Path) -> None:
    path = make_pdf(
        tmp_path / "policy.pdf",
        [["Page one: refunds", LONG_LINE], [], ["Page three: exchanges", LONG_LINE]],
        title="Refund Policy",
    )
    document = parse(path)
    assert document.doc_type == "pdf"
    assert document.pages == 3
    assert document.title == "Refund Policy"
    assert [segment.page for segment in document.segments] == [1, 3]
    assert "Page one: refunds" in document.segments[0].text
    assert "Page three: exchanges" in document.segments[1].text
    assert not document.needs_ocr


def test_pdf_without_text_needs_ocr(tmp_path: Path) -> None:
    pdf = canvas.Canvas(str(tmp_path / "scan.pdf"))
    pdf.rect(72, 72, 300, 500, fill=1)  # a drawing standing in for a scanned image
    pdf.showPage()
    pdf.drawString(72, 700, "p. 2")
    pdf.showPage()
    pdf.save()
    document = parse(tmp_path / "scan.pdf")
    assert document.needs_ocr
    assert document.pages == 2


def test_pdf_with_password_is_encrypted(tmp_path: Path) -> None:
    plain = make_pdf(tmp_path / "plain.pdf", [[LONG_LINE, LONG_LINE]])
    locked = encrypt_pdf(plain, tmp_path / "locked.pdf", user_password="secret")
    assert reason_of(locked) == "encrypted"


def test_pdf_encrypted_with_empty_user_password_opens(tmp_path: Path) -> None:
    plain = make_pdf(tmp_path / "plain.pdf", [[LONG_LINE, LONG_LINE]])
    restricted = encrypt_pdf(plain, tmp_path / "restricted.pdf", user_password="")
    assert LONG_LINE in parse(restricted).text


@pytest.mark.parametrize("keep", [0.5, 0.05])
def test_truncated_pdf_is_corrupt(tmp_path: Path, keep: float) -> None:
    data = make_pdf(tmp_path / "whole.pdf", [[LONG_LINE]] * 3).read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: int(len(data) * keep)])
    assert reason_of(cut) == "corrupt"


def test_garbage_pdf_is_corrupt_with_pypdf_message(tmp_path: Path) -> None:
    path = tmp_path / "fake.pdf"
    path.write_bytes(b"this is not a PDF at all\n" * 20)
    with pytest.raises(ParseError) as caught:
        parse(path)
    assert caught.value.reason == "corrupt"
    assert "PDF is damaged or not a PDF" in caught.value.message


def test_pdf_without_pages_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "nothing.pdf"
    PdfWriter().write(path)
    assert reason_of(path) == "empty"


# --- DOCX ------------------------------------------------------------------------------


def make_docx(path: Path, *, title: str = "") -> Path:
    document = docx.Document()
    document.core_properties.title = title
    document.add_heading("Shipping Guide", level=1)
    document.add_paragraph("Orders ship from Portland within two business days.")
    table = document.add_table(rows=3, cols=3)
    for row, values in zip(
        table.rows,
        [("Service", "Carrier", "Days"), ("Standard", "UPS", "5"), ("Express", "FedEx", "2")],
        strict=True,
    ):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Tracking", level=2)
    document.add_paragraph("A tracking link is emailed when the parcel leaves.")
    document.save(str(path))
    return path


def test_docx_keeps_paragraphs_headings_and_tables_in_order(tmp_path: Path) -> None:
    document = parse(make_docx(tmp_path / "guide.docx"))
    assert document.doc_type == "docx"
    assert document.text == (
        "Shipping Guide\n\n"
        "Orders ship from Portland within two business days.\n\n"
        "Service | Carrier | Days\nStandard | UPS | 5\nExpress | FedEx | 2\n\n"
        "Tracking\n\n"
        "A tracking link is emailed when the parcel leaves."
    )


def test_docx_title_from_core_properties_else_first_heading(tmp_path: Path) -> None:
    assert parse(make_docx(tmp_path / "a.docx", title="Northwind Shipping")).title == (
        "Northwind Shipping"
    )
    assert parse(make_docx(tmp_path / "b.docx")).title == "Shipping Guide"


def test_docx_merged_cell_is_rendered_once(tmp_path: Path) -> None:
    document = docx.Document()
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 2))
    merged.text = "Delivery times"
    for cell, value in zip(table.rows[1].cells, ("A", "B", "C"), strict=True):
        cell.text = value
    document.save(str(tmp_path / "merged.docx"))
    assert parse(tmp_path / "merged.docx").text == "Delivery times\nA | B | C"


def test_docx_falls_back_to_mammoth_when_python_docx_refuses(tmp_path: Path) -> None:
    # A macro-enabled main part: Word and mammoth read it, python-docx refuses its type.
    source = make_docx(tmp_path / "source.docx")
    target = tmp_path / "macro.docx"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "[Content_Types].xml":
                data = data.replace(
                    b"wordprocessingml.document.main+xml", b"ms-word.document.macroEnabled.main+xml"
                )
            new.writestr(item, data)
    with pytest.raises(ValueError):
        docx.Document(str(target))
    document = DocxParser().parse(target)
    assert "Orders ship from Portland within two business days." in document.text
    assert document.title is None


def test_docx_that_neither_reader_understands_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "hollow.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "a zip, but not a Word document")
    with pytest.raises(ParseError) as caught:
        parse(path)
    assert caught.value.reason == "corrupt"
    assert "fallback reader failed too" in caught.value.message


# --- PPTX ------------------------------------------------------------------------------


def make_pptx(path: Path) -> Path:
    presentation = pptx.Presentation()
    layouts = presentation.slide_layouts
    first = presentation.slides.add_slide(layouts[0])
    first.shapes.title.text = "Northwind Support"
    first.placeholders[1].text = "Customer policies 2025"
    first.notes_slide.notes_text_frame.text = "Welcome everyone."

    presentation.slides.add_slide(layouts[6])  # blank: no text at all

    third = presentation.slides.add_slide(layouts[5])
    third.shapes.title.text = "Hours"
    table = third.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, col), value in {
        (0, 0): "Region",
        (0, 1): "Phone",
        (1, 0): "EU",
        (1, 1): "+44",
    }.items():
        table.cell(row, col).text = value
    group = third.shapes.add_group_shape()
    group.shapes.add_textbox(
        Inches(1), Inches(4), Inches(3), Inches(1)
    ).text_frame.text = "Grouped caption"
    third.notes_slide.notes_text_frame.text = "Mention holidays."
    presentation.save(str(path))
    return path


def test_pptx_one_segment_per_slide_with_tables_groups_and_notes(tmp_path: Path) -> None:
    document = parse(make_pptx(tmp_path / "deck.pptx"))
    assert document.doc_type == "pptx"
    assert document.pages == 3
    assert document.title == "Northwind Support"
    first, third = document.segments
    assert first.page == 1
    assert first.text == "Northwind Support\n\nCustomer policies 2025\n\nWelcome everyone."
    assert third.page == 3
    assert "Region | Phone\nEU | +44" in third.text
    assert "Grouped caption" in third.text
    assert third.text.endswith("Mention holidays.")


# --- XLSX and CSV ----------------------------------------------------------------------


def make_xlsx(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    orders = workbook.active
    orders.title = "Orders"
    orders["A3"], orders["B3"], orders["C3"] = "order_id", "region", "total"  # rows 1-2 empty
    for n in range(1, 41):
        orders.append([f"NW-{n:04d}", "Europe" if n % 2 else "North America", n * 10.5])
    returns = workbook.create_sheet("Returns")
    returns.append(["return_id", "reason"])
    for n in range(1, 21):
        returns.append([f"R-{n}", "damaged in transit" if n % 3 else "wrong size"])
    workbook.save(path)
    return path


def test_xlsx_groups_rows_per_sheet_with_header_repeated(tmp_path: Path) -> None:
    document = XlsxParser(max_chars=200).parse(make_xlsx(tmp_path / "book.xlsx"))
    assert document.doc_type == "xlsx"
    assert document.pre_chunked
    headers = {"Orders": "order_id | region | total", "Returns": "return_id | reason"}
    assert {segment.section for segment in document.segments} == set(headers)
    for segment in document.segments:
        assert segment.section is not None
        assert segment.text.split("\n")[0] == headers[segment.section]
        assert len(segment.text) <= 200
    orders = [s for s in document.segments if s.section == "Orders"]
    assert len(orders) > 1
    rows = [line for s in orders for line in s.text.split("\n")[1:]]
    assert rows[0] == "NW-0001 | Europe | 10.5"
    assert rows[-1] == "NW-0040 | North America | 420"  # Excel stores 420.0 as 420
    assert len(rows) == 40


def test_xlsx_through_the_registry(tmp_path: Path) -> None:
    document = parse(make_xlsx(tmp_path / "book.xlsx"))
    assert list(dict.fromkeys(s.section for s in document.segments)) == ["Orders", "Returns"]


def test_csv_semicolon_dialect_in_cp1252(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    rows = [["Artikel", "Preis", "Beschreibung"]] + [
        [f"Jacke {n}", f"{n},99 €", "Wasserdicht; für Größe M"] for n in range(1, 31)
    ]
    with path.open("w", encoding="cp1252", newline="") as file:
        csv.writer(file, delimiter=";").writerows(rows)
    document = CsvParser(max_chars=300).parse(path)
    assert document.doc_type == "csv"
    assert document.pre_chunked
    assert len(document.segments) > 1
    for segment in document.segments:
        assert segment.text.startswith("Artikel | Preis | Beschreibung\n")
        assert len(segment.text) <= 300
    assert "Jacke 1 | 1,99 € | Wasserdicht; für Größe M" in document.segments[0].text


def test_row_longer_than_the_limit_gets_its_own_segment() -> None:
    rows = [["h1", "h2"], ["a", "b"], ["x" * 50, "y"], ["c", "d"]]
    segments = group_rows(rows, max_chars=20, section="S")
    assert [s.text for s in segments] == [
        "h1 | h2\na | b",
        f"h1 | h2\n{'x' * 50} | y",
        "h1 | h2\nc | d",
    ]
    assert {s.section for s in segments} == {"S"}


def test_group_rows_skips_empty_rows_and_trailing_empty_cells() -> None:
    rows: list[list[object]] = [[None, None], ["id", "name", None], ["", ""], [1, None, None]]
    assert [s.text for s in group_rows(rows, max_chars=100)] == ["id | name\n1"]


# --- TXT and MD ------------------------------------------------------------------------

TEXT = "Grüße aus Zürich – café, élève, naïve.\nSecond line about the 30-day refund window.\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252", "latin-1"])
def test_text_decodes_common_encodings(tmp_path: Path, encoding: str) -> None:
    text = TEXT if encoding != "latin-1" else TEXT.replace("–", "-")  # no dash in latin-1
    path = tmp_path / "note.txt"
    path.write_bytes(text.encode(encoding))
    document = parse(path)
    assert document.text == text
    assert document.title is None
    assert document.doc_type == "txt"


def test_text_newlines_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"one\r\ntwo\rthree\n")
    assert parse(path).text == "one\ntwo\nthree\n"


@pytest.mark.parametrize(
    "data", [bytes(range(256)) * 20, b"\x89PNG\r\n\x1a\n" + bytes(300), b"abc\x00def" * 50]
)
def test_binary_content_is_not_text(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(data)
    assert reason_of(path) == "unsupported_type"


def test_empty_text_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("  \n\n")
    assert reason_of(path) == "empty"


def test_markdown_keeps_source_and_takes_first_h1_as_title(tmp_path: Path) -> None:
    source = "```bash\n# not a title\n```\n\n# Warranty Terms\n\n**Two years** of cover.\n"
    path = tmp_path / "warranty.markdown"
    path.write_text(source)
    document = parse(path)
    assert document.doc_type == "md"
    assert document.title == "Warranty Terms"
    assert document.text == source


@pytest.mark.parametrize(
    ("text", "title"),
    [("## Sub\n# Main #\n", "Main"), ("#NoSpace\n", None), ("   # Indented\n", "Indented")],
)
def test_markdown_title_rules(text: str, title: str | None) -> None:
    assert markdown_title(text) == title


def test_decode_text_handles_short_latin1() -> None:
    assert decode_text("café\r\n".encode("latin-1")) == "café\n"


# --- HTML ------------------------------------------------------------------------------

HTML = """<!DOCTYPE html>
<html><head><title>Support Hours</title><style>p { color: red }</style>
<script>var secret = "do not index";</script></head>
<body>
  <noscript>Enable JavaScript</noscript>
  <h1>Contact   us</h1>
  <p>We answer <b>email</b> within
     one business day.<br>Phone lines open at 8am.</p>
  <div>First block</div><div>Second block</div>
  <ul><li>Europe</li><li>Asia</li></ul>
  <table><tr><th>Region</th><th>Hours</th></tr><tr><td>EU</td><td>8-18</td></tr></table>
  <pre>  indented
    code</pre>
  <!-- a comment -->
  <template><p>hidden template</p></template>
</body></html>"""


def test_html_keeps_visible_text_with_block_structure(tmp_path: Path) -> None:
    path = tmp_path / "hours.html"
    path.write_text(HTML)
    document = parse(path)
    assert document.doc_type == "html"
    assert document.title == "Support Hours"
    assert document.text == (
        "Contact us\n\n"
        "We answer email within one business day.\nPhone lines open at 8am.\n\n"
        "First block\nSecond block\n\n"
        "Europe\nAsia\n\n"
        "Region | Hours\nEU | 8-18\n\n"
        "  indented\n    code"
    )


def test_html_title_falls_back_to_first_h1_and_honours_meta_charset(tmp_path: Path) -> None:
    path = tmp_path / "page.htm"
    page = '<html><head><meta charset="iso-8859-1"></head><body><h1>Café</h1><p>Olé</p></body>'
    path.write_bytes(page.encode("latin-1"))
    document = HtmlParser().parse(path)
    assert document.title == "Café"
    assert document.text == "Café\n\nOlé"


def test_html_body_survives_a_missing_head_end_tag(tmp_path: Path) -> None:
    path = tmp_path / "sloppy.html"
    path.write_text("<html><head><title>T</title><body><p>Body text</p><p>Two</body></html>")
    document = parse(path)
    assert (document.title, document.text) == ("T", "Body text\n\nTwo")


# --- registry --------------------------------------------------------------------------


def test_registry_covers_every_supported_extension() -> None:
    assert set(PARSERS) == {
        ".pdf", ".docx", ".pptx", ".xlsx", ".csv", ".txt", ".md", ".markdown", ".html", ".htm",
        ".png", ".jpg", ".jpeg", ".tif", ".tiff",  # images: every page is for OCR
    }  # fmt: skip
    assert {parser.doc_type for parser in PARSERS.values()} == {
        "pdf", "docx", "pptx", "xlsx", "csv", "txt", "md", "html", "image"
    }  # fmt: skip
    assert parser_for(Path("REPORT.PDF")).doc_type == "pdf"


def test_each_parser_is_listed_for_exactly_its_own_extensions() -> None:
    for extension, parser in PARSERS.items():
        assert extension in parser.extensions, (extension, type(parser).__name__)
    declared = {ext for parser in PARSERS.values() for ext in parser.extensions}
    assert declared == set(PARSERS)


def test_a_parser_library_is_imported_only_when_its_file_type_is_read() -> None:
    probe = (
        "import sys\n"
        "from autorag.ingest.pipeline import Indexer\n"
        "heavy = ('pypdf', 'docx', 'pptx', 'openpyxl', 'bs4', 'mammoth')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_unknown_extension_is_unsupported(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as caught:
        parse(tmp_path / "archive.xyz")  # rejected before the file is even looked at
    assert caught.value.reason == "unsupported_type"
    assert caught.value.message == "unsupported file type '.xyz'"
    assert caught.value.code == "parse_error"


@pytest.mark.parametrize("name", ["book.xlsx", "deck.pptx"])
def test_library_exceptions_become_corrupt(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("[Content_Types].xml", "<broken")
    with pytest.raises(ParseError) as caught:
        parse(path)
    assert caught.value.reason == "corrupt"
    assert name in caught.value.message
