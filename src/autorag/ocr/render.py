"""Page images for OCR: PDF pages rendered with pypdfium2, image files decoded with
Pillow, every one grayscale and bounded in pixels.

A PDF page bigger than ``max_pixels`` at the asked dpi is rendered at a lower dpi (and
says so); an image frame bigger than that is refused, since decoding it is the cost to
avoid. Pillow's own decompression-bomb check stays on behind ours.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from PIL import Image, UnidentifiedImageError

from autorag.errors import InvalidInput

# PDFium is not thread-safe: every call into it, in any thread, goes through this.
_PDFIUM = threading.Lock()
_POINTS_PER_INCH = 72
# Darker than this is ink; a page with fewer ink pixels than _BLANK_INK is blank (specks
# and scanner dust, not one short word: that is about 0.05 % of an A4 page at 300 dpi).
_INK_LEVEL = 128
_BLANK_INK = 0.00005

InputReason = Literal["encrypted", "corrupt", "empty", "too_large"]


class OcrInputError(InvalidInput):
    """A file OCR cannot read; ``reason`` is the stable code recorded on the document."""

    def __init__(self, message: str, *, reason: InputReason) -> None:
        super().__init__(message, code=reason)
        self.reason: InputReason = reason


@dataclass(frozen=True)
class Rendered:
    image: Image.Image  # mode "L"
    dpi: int  # the resolution it was rendered at (lower than asked for huge pages)


class PageSource(Protocol):
    pages: int

    def render(self, page: int) -> Rendered:
        """Page ``page`` (1-based); ``OcrInputError`` when it cannot be had."""
        ...


@contextmanager
def open_pages(path: Path, *, dpi: int, max_pixels: int) -> Iterator[PageSource]:
    """The pages of a PDF or an image file, to render one at a time."""
    if path.suffix.lower() == ".pdf":
        pdf = _PdfPages(path, dpi, max_pixels)
        try:
            yield pdf
        finally:
            pdf.close()
        return
    images = _ImagePages(path, dpi, max_pixels)
    try:
        yield images
    finally:
        images.close()


def is_blank(image: Image.Image) -> bool:
    """Whether a grayscale page holds no ink worth reading (a blank or separator page)."""
    histogram = image.histogram()
    ink = sum(histogram[:_INK_LEVEL])
    return ink <= _BLANK_INK * image.width * image.height


class _PdfPages:
    def __init__(self, path: Path, dpi: int, max_pixels: int) -> None:
        import pypdfium2 as pdfium

        self.dpi = dpi
        self.max_pixels = max_pixels
        with _PDFIUM:
            try:
                self._document = pdfium.PdfDocument(path)
            except pdfium.PdfiumError as exc:
                raise _pdf_error(path, exc) from exc
            self.pages = len(self._document)
        if self.pages == 0:
            self.close()
            raise OcrInputError(f"{path.name} has no pages", reason="empty")

    def render(self, page: int) -> Rendered:
        with _PDFIUM:
            pdf_page = self._document[page - 1]
            try:
                width, height = pdf_page.get_size()
                dpi = _bounded_dpi(width, height, self.dpi, self.max_pixels)
                bitmap = pdf_page.render(scale=dpi / _POINTS_PER_INCH, grayscale=True)
                image = bitmap.to_pil().convert("L")
            finally:
                pdf_page.close()
        return Rendered(image, dpi)

    def close(self) -> None:
        with _PDFIUM:
            self._document.close()


def _pdf_error(path: Path, exc: Exception) -> OcrInputError:
    if "password" in str(exc).lower():
        return OcrInputError(f"{path.name} is encrypted with a password", reason="encrypted")
    if _no_pages(path):  # PDFium refuses these with no reason ("Success")
        return OcrInputError(f"{path.name} has no pages", reason="empty")
    return OcrInputError(f"{path.name} is damaged or not a PDF: {exc}", reason="corrupt")


def _no_pages(path: Path) -> bool:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        return len(PdfReader(path).pages) == 0
    except (PyPdfError, OSError, ValueError):
        return False


def _bounded_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    if width_pt <= 0 or height_pt <= 0:
        raise OcrInputError("the page has no area", reason="corrupt")
    inches = (width_pt / _POINTS_PER_INCH) * (height_pt / _POINTS_PER_INCH)
    fitting = math.floor(math.sqrt(max_pixels / inches))
    if fitting < 1:
        raise OcrInputError(f"the page is {inches:.0f} square inches: too big", reason="too_large")
    return min(dpi, fitting)


class _ImagePages:
    def __init__(self, path: Path, dpi: int, max_pixels: int) -> None:
        self.dpi = dpi
        self.max_pixels = max_pixels
        self.name = path.name
        try:
            self._image = Image.open(path)
            self.pages = max(1, int(getattr(self._image, "n_frames", 1)))
        except Image.DecompressionBombError as exc:
            raise OcrInputError(f"{path.name}: {exc}", reason="too_large") from exc
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
            message = f"{path.name} is not a readable image: {exc}"
            raise OcrInputError(message, reason="corrupt") from exc

    def render(self, page: int) -> Rendered:
        self._image.seek(page - 1)
        width, height = self._image.size
        if width * height > self.max_pixels:
            raise OcrInputError(
                f"{self.name} page {page} is {width}×{height} px ({width * height / 1e6:.0f} MP), "
                f"over the {self.max_pixels / 1e6:.0f} MP limit (ocr.max_image_pixels)",
                reason="too_large",
            )
        try:
            frame = _grayscale(self._image)
        except (OSError, SyntaxError, ValueError) as exc:
            message = f"{self.name} page {page} cannot be decoded: {exc}"
            raise OcrInputError(message, reason="corrupt") from exc
        dpi = self._image.info.get("dpi", (self.dpi, self.dpi))[0]
        return Rendered(frame, int(dpi) if dpi else self.dpi)

    def close(self) -> None:
        self._image.close()


def _grayscale(image: Image.Image) -> Image.Image:
    """``image`` as 8-bit gray; transparency becomes white paper, not black."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "F"):
        # 16-bit and float scans: scale to 8 bits instead of clipping everything to white.
        wide = image if image.mode == "F" else image.convert("I")
        low, high = (float(v) for v in wide.getextrema() if not isinstance(v, tuple))
        scale = 255 / ((high - low) or 1.0)
        offset = -low * scale
        return wide.point(lambda v: v * scale + offset).convert("L")
    if image.mode in ("RGBA", "LA", "PA", "P") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, "white")
        return Image.alpha_composite(paper, rgba).convert("L")
    return image.convert("L")
