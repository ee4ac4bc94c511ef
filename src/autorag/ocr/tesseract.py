"""Tesseract through pytesseract: Debian's ``tesseract-ocr`` plus a language pack each.

Tesseract runs as a child process per page, so a crash or a hang there (bounded by the
page timeout) never takes the worker down with it.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from functools import lru_cache
from typing import Any, Self

from PIL import Image

from autorag.errors import Unavailable
from autorag.ocr.base import EngineConfig, OcrResult

# Automatic page segmentation without orientation detection: turning a page costs a
# second pass, so the caller asks for it (``orientation``) only when a read is poor.
_CONFIG = "--psm 3"
_ROTATE = re.compile(r"Rotate:\s*(\d+)")


class TesseractEngine:
    name = "tesseract"

    def __init__(self, languages: list[str], timeout_s: float) -> None:
        self.languages = "+".join(languages)
        self.timeout_s = timeout_s

    @classmethod
    def build(cls, config: EngineConfig) -> Self:
        _check_installed(tuple(config.ocr.languages))
        return cls(config.ocr.languages, config.ocr.page_timeout_s)

    def recognize(self, image: Image.Image) -> OcrResult:
        import pytesseract

        try:
            data = pytesseract.image_to_data(
                image,
                lang=self.languages,
                config=_CONFIG,
                output_type=pytesseract.Output.DICT,
                timeout=self.timeout_s,
            )
        except (RuntimeError, pytesseract.TesseractError) as exc:
            raise Unavailable(f"tesseract failed on the page: {exc}", code="ocr_failed") from exc
        return OcrResult(_text(data), _confidence(data))

    def orientation(self, image: Image.Image) -> int | None:
        """Degrees to turn ``image`` counter-clockwise to stand it up (Tesseract's OSD);
        None when OSD cannot tell (too little text) or its data is not installed."""
        import pytesseract

        try:
            report = pytesseract.image_to_osd(image, timeout=self.timeout_s)
        except (RuntimeError, pytesseract.TesseractError):
            return None
        match = _ROTATE.search(report)
        # OSD says how far to turn clockwise; Pillow turns counter-clockwise.
        return None if match is None else (360 - int(match.group(1))) % 360


@lru_cache(maxsize=8)
def _check_installed(languages: tuple[str, ...]) -> None:
    import pytesseract

    if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
        raise Unavailable(
            "tesseract is not installed: apt-get install tesseract-ocr tesseract-ocr-eng",
            code="ocr_unavailable",
        )
    installed = set(pytesseract.get_languages(config=""))
    missing = [code for code in languages if code not in installed]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code.replace('_', '-')}" for code in missing)
        raise Unavailable(
            f"tesseract has no data for {', '.join(missing)}: apt-get install {packages}",
            code="ocr_unavailable",
        )


def _text(data: dict[str, list[Any]]) -> str:
    """Words joined into lines and lines into paragraphs, in Tesseract's reading order."""
    lines: dict[tuple[int, int, int], list[str]] = defaultdict(list)
    for index, word in enumerate(data["text"]):
        if str(word).strip():
            key = (data["block_num"][index], data["par_num"][index], data["line_num"][index])
            lines[key].append(str(word).strip())
    paragraphs: dict[tuple[int, int], list[str]] = defaultdict(list)
    for (block, paragraph, _line), words in lines.items():
        paragraphs[(block, paragraph)].append(" ".join(words))
    return "\n\n".join("\n".join(text) for text in paragraphs.values())


def _confidence(data: dict[str, list[Any]]) -> float:
    """Word confidences weighted by word length: a misread long word costs more."""
    total = weight = 0.0
    for word, conf in zip(data["text"], data["conf"], strict=True):
        score = float(conf)
        if score < 0 or not str(word).strip():
            continue  # -1: a layout box, not a word
        total += score * len(str(word).strip())
        weight += len(str(word).strip())
    return round(total / weight / 100, 4) if weight else 0.0
