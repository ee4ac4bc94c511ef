"""The registry of OCR engines: each built by name (``tesseract``, ``rapidocr``,
``vision``), its module imported on first use (each pulls in heavy or optional packages).
"""

from __future__ import annotations

from collections.abc import Callable

from autorag.errors import InvalidInput, Unavailable
from autorag.ocr.base import EngineConfig, OcrEngine

EngineFactory = Callable[[EngineConfig], OcrEngine]


def _tesseract(config: EngineConfig) -> OcrEngine:
    from autorag.ocr.tesseract import TesseractEngine

    return TesseractEngine.build(config)


def _rapidocr(config: EngineConfig) -> OcrEngine:
    from autorag.ocr.rapidocr import RapidOcrEngine

    return RapidOcrEngine.build(config)


def _vision(config: EngineConfig) -> OcrEngine:
    from autorag.ocr.vision import VisionEngine

    return VisionEngine.build(config)


ENGINES: dict[str, EngineFactory] = {
    "tesseract": _tesseract,
    "rapidocr": _rapidocr,
    "vision": _vision,
}
LOCAL_ENGINES = ("tesseract", "rapidocr")  # "auto" tries these, in this order


def build_engine(name: str, config: EngineConfig) -> OcrEngine:
    try:
        factory = ENGINES[name]
    except KeyError:
        known = ", ".join(sorted(ENGINES))
        raise InvalidInput(f"unknown OCR engine {name!r} (known: {known}, auto)") from None
    return factory(config)


def local_engine(config: EngineConfig) -> OcrEngine:
    """The configured local engine; ``auto``: the first of ``LOCAL_ENGINES`` that runs."""
    if config.ocr.engine != "auto":
        return build_engine(config.ocr.engine, config)
    reasons: list[str] = []
    for name in LOCAL_ENGINES:
        try:
            return build_engine(name, config)
        except Unavailable as exc:
            reasons.append(exc.message)
    raise Unavailable("no local OCR engine can run: " + "; ".join(reasons), code="ocr_unavailable")
