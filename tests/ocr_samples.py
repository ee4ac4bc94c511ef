"""Scans made by the tests: text drawn with Pillow at 300 dpi, saved as image-only PDFs
(no text layer at all), mixed PDFs and image files; and the character accuracy of OCR.

The font is Debian's DejaVu Sans (``fonts-dejavu-core``) when present, else Pillow's
built-in scalable font at the same size.
"""

from __future__ import annotations

import importlib.util
import io
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
DPI = 300
A4_PX = (2480, 3508)  # 210 x 297 mm at 300 dpi
FONT_PT = 11
_MARGIN_PX = 200
_LINE_SPACING = 1.6

_WORDS = " ".join(
    (
        "refund policy customer order invoice shipping warranty returns within days of "
        "purchase receipt the a and for with must be sent to our office before end month "
        "product damaged replaced free charge please contact support team by email phone "
        "number account payment card bank transfer delivery address parcel tracking code "
        "manager approval signed copy contract renewal annual fee service level agreement",
    )
).split()


def font(points: float = FONT_PT) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    size = round(points * DPI / 72)
    if DEJAVU.is_file():
        return ImageFont.truetype(str(DEJAVU), size)
    return ImageFont.load_default(size=size)


def sentences(count: int, seed: int = 0) -> list[str]:
    """Lines of plausible English with numbers and punctuation, reproducibly random."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 10))]
        words[0] = words[0].capitalize()
        if rng.random() < 0.5:
            words.insert(rng.randint(1, len(words)), str(rng.randint(2, 990)))
        lines.append(" ".join(words) + ".")
    return lines


def page_image(lines: Sequence[str], *, points: float = FONT_PT) -> Image.Image:
    """An A4 page at 300 dpi, black text on white, one line per item."""
    image = Image.new("L", A4_PX, 255)
    draw = ImageDraw.Draw(image)
    face = font(points)
    step = round(points * DPI / 72 * _LINE_SPACING)
    for index, line in enumerate(lines):
        draw.text((_MARGIN_PX, _MARGIN_PX + index * step), line, font=face, fill=0)
    return image


def scanned_pdf(path: Path, pages: Sequence[Image.Image]) -> Path:
    """An image-only PDF: every page one 300-dpi picture, no text layer."""
    first, *rest = [page.convert("L") for page in pages]
    first.save(path, "PDF", resolution=DPI, save_all=True, append_images=rest)
    return path


def mixed_pdf(path: Path, pages: Sequence[str | Image.Image]) -> Path:
    """A PDF whose ``str`` pages have a text layer and whose image pages are scans."""
    pdf = canvas.Canvas(str(path), pagesize=A4)
    for page in pages:
        if isinstance(page, str):
            y = 800.0
            for line in page.split("\n"):
                pdf.drawString(60, y, line)
                y -= 16
        else:
            pdf.drawImage(ImageReader(page), 0, 0, width=A4[0], height=A4[1])
        pdf.showPage()
    pdf.save()
    return path


def image_bytes(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    options = {"quality": 95} if fmt == "JPEG" else {}
    image.save(buffer, format=fmt, dpi=(DPI, DPI), **options)
    return buffer.getvalue()


def normalize(text: str) -> str:
    return " ".join(text.split())


def char_accuracy(expected: str, got: str) -> float:
    """1 - (edit distance / expected length), on whitespace-normalised text."""
    want, have = normalize(expected), normalize(got)
    if not want:
        return 1.0 if not have else 0.0
    return max(0.0, 1 - _distance(want, have) / len(want))


def _distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        previous = current
    return previous[-1]


# Tesseract comes from Debian (.ci/run installs it): only a developer's machine may lack
# it, and there its tests skip; in CI a missing binary fails them instead.
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None and not os.environ.get("CI"),
    reason="tesseract-ocr is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)",
)
needs_rapidocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr") is None,
    reason="rapidocr is optional: pip install -e '.[rapidocr]'",
)
