"""The OCR engine protocol, what an engine returns, and what engines are built from
(the registry that builds them by name is :mod:`autorag.ocr.engines`).

An engine reads one page image. Building one checks that it can run here (a binary, a
package, a configured model server) and raises ``Unavailable`` with the fix otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from autorag.config import LLMSettings, OcrSettings


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
