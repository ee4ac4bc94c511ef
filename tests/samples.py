"""Sample documents the tests write with each format's own writer library."""

from __future__ import annotations

import csv
from pathlib import Path

import docx
import openpyxl
import pptx
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas


def write_pdf(path: Path, pages: list[str]) -> Path:
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for text in pages:
        y = 800
        for line in text.split("\n"):
            pdf.drawString(60, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return path


def write_docx(path: Path, paragraphs: list[str]) -> Path:
    document = docx.Document()
    document.add_heading("Shipping guide", level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.save(str(path))
    return path


def write_pptx(path: Path, slides: list[str]) -> Path:
    deck = pptx.Presentation()
    for text in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = text.split(".")[0]
        slide.placeholders[1].text = text
    deck.save(str(path))
    return path


def write_xlsx(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    book.save(str(path))
    return path


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_corpus(folder: Path) -> dict[str, Path]:
    """One file per supported type, each holding one distinctive fact."""
    folder.mkdir(parents=True, exist_ok=True)
    return {
        "pdf": write_pdf(
            folder / "refunds.pdf",
            [
                "Refund policy overview.\nCustomers may return goods for any reason.",
                "The refund window is thirty days from delivery.\nRefunds go to the original card.",
            ],
        ),
        "docx": write_docx(
            folder / "shipping.docx",
            ["Parcels travel with the Zephyr courier service.", "Express delivery takes two days."],
        ),
        "pptx": write_pptx(
            folder / "roadmap.pptx",
            ["Quarterly goals. Grow revenue.", "Launch plan. The Aurora headset ships in March."],
        ),
        "xlsx": write_xlsx(
            folder / "inventory.xlsx",
            ["sku", "item", "warehouse"],
            [["A1", "kayak paddle", "Tromso"], ["B2", "tent poles", "Bergen"]],
        ),
        "csv": write_csv(
            folder / "contacts.csv",
            ["region", "phone"],
            [["Nordics", "+47 555 0100"], ["Iberia", "+34 555 0199"]],
        ),
        "html": _write(
            folder / "faq.html",
            "<html><head><title>FAQ</title><script>var x='noise';</script></head>"
            "<body><h1>FAQ</h1><p>Gift cards never expire at Northwind.</p></body></html>",
        ),
        "md": _write(
            folder / "warranty.md", "# Warranty\n\nThe warranty covers hinges for five years.\n"
        ),
        "txt": _write(folder / "notes.txt", "The office cat is called Pixel.\n"),
    }


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
