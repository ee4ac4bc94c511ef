"""The OCR engine protocol, what an engine returns, and the registry that builds engines
by name (``tesseract``, ``rapidocr``, ``vision``).

An engine reads one page image. Building one checks that it can run here (a binary, a
package, a configured model server) and raises ``Unavailable`` with the fix otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from autorag.config import LLMSettings, OcrSettings
from autorag.errors import InvalidInput, Unavailable


@dataclass(frozen=True)
class OcrResult:
    """The text of one page image and the engine's confidence in it (0..1)."""

    text: str
    confidence: float


class OcrEngine(Protocol):
    name: str

    def recognize(self, image: Image.Image) -> OcrResult:
        """Read ``image``; raises ``Unavailable`` when the engine fails or times out."""
        ...


@dataclass(frozen=True)
class EngineConfig:
    """What engines are built from: the ``ocr`` and ``llm`` settings, and the vision
    prompt's custom instructions of the workspace."""

    ocr: OcrSettings
    llm: LLMSettings
    instructions: str = ""


EngineFactory = Callable[[EngineConfig], OcrEngine]


def _tesseract(config: EngineConfig) -> OcrEngine:
    from autorag.ingest.ocr.tesseract import TesseractEngine

    return TesseractEngine.build(config)


def _rapidocr(config: EngineConfig) -> OcrEngine:
    from autorag.ingest.ocr.rapidocr import RapidOcrEngine

    return RapidOcrEngine.build(config)


def _vision(config: EngineConfig) -> OcrEngine:
    from autorag.ingest.ocr.vision import VisionEngine

    return VisionEngine.build(config)


# Imported on first use: each engine pulls in heavy or optional packages.
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
