"""Images (PNG, JPEG, TIFF): no text layer at all, so every page (frame) is for OCR.

Only the header is read here: the pixels are decoded later, by OCR, under its bounds.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from autorag.ingest.parsers.base import ParseError
from autorag.models import ParsedDocument

# The document type of each extension, as uploads name them.
IMAGE_TYPES: dict[str, str] = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".tif": "tiff",
    ".tiff": "tiff",
}


class ImageParser:
    doc_type = "image"
    extensions: tuple[str, ...] = tuple(IMAGE_TYPES)

    def parse(self, path: Path) -> ParsedDocument:
        frames = image_frames(path)
        return ParsedDocument(
            segments=[],
            doc_type=IMAGE_TYPES[path.suffix.lower()],
            pages=frames,
            needs_ocr=True,
            ocr_pages=tuple(range(1, frames + 1)),
        )


def image_frames(path: Path) -> int:
    """How many pages (frames) the image holds; ``ParseError`` when it is not one."""
    try:
        with Image.open(path) as image:
            frames = max(1, int(getattr(image, "n_frames", 1)))
        with Image.open(path) as image:
            image.verify()  # structure and checksums, without decoding the pixels
        return frames
    except Image.DecompressionBombError as exc:
        raise ParseError(f"{path.name}: {exc}", reason="too_large") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        # Pillow reports broken files as any of these, SyntaxError included.
        raise ParseError(f"{path.name} is not a readable image: {exc}", reason="corrupt") from exc
