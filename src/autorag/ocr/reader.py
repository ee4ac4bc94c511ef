"""How one page is read: blank pages skipped, the local engine first (the page turned
upright when the read is poor), the vision engine where the mode calls for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from PIL import Image

from autorag.errors import AutoragError
from autorag.ocr.base import OcrEngine, OcrResult
from autorag.ocr.quality import credibility
from autorag.ocr.render import is_blank

PageStatus = Literal["queued", "done", "low", "blank", "failed", "skipped"]
OcrMode = Literal["auto", "vision"]
_TURNS = {
    90: Image.Transpose.ROTATE_90,
    180: Image.Transpose.ROTATE_180,
    270: Image.Transpose.ROTATE_270,
}


@runtime_checkable
class Orients(Protocol):
    """An engine that can tell how a page is turned (Tesseract's OSD)."""

    def orientation(self, image: Image.Image) -> int | None: ...


@dataclass(frozen=True)
class Bar:
    """The scores a read must reach to be indexed without a review."""

    quality: float
    credibility: float


@dataclass(frozen=True)
class Read:
    """An engine's result with its credibility, and how far the page was turned."""

    result: OcrResult
    credibility: float
    engine: str
    rotation: int = 0

    @property
    def score(self) -> float:
        return (self.result.confidence + self.credibility) / 2

    def passes(self, bar: Bar) -> bool:
        return (
            bool(self.result.text.strip())
            and self.result.confidence >= bar.quality
            and self.credibility >= bar.credibility
        )


@dataclass(frozen=True)
class PageRead:
    status: PageStatus
    text: str = ""
    engine: str | None = None
    confidence: float | None = None
    credibility: float | None = None
    rotation: int = 0
    reason: str | None = None


@dataclass
class Readers:
    """The engines of one job and what is left of its vision page budget."""

    mode: OcrMode
    bar: Bar
    local: OcrEngine | None
    vision: OcrEngine | None
    vision_pages_left: int

    def read(self, image: Image.Image) -> PageRead:
        if is_blank(image):
            return PageRead("blank", reason="no ink on the page")
        try:
            best = self._best(image)
        except AutoragError as exc:
            return PageRead("failed", reason=exc.message)
        if best is None:
            return PageRead("skipped", reason="over the vision page cap (ocr.vision_max_pages)")
        return PageRead(
            "done" if best.passes(self.bar) else "low",
            best.result.text,
            best.engine,
            best.result.confidence,
            best.credibility,
            best.rotation,
        )

    def _best(self, image: Image.Image) -> Read | None:
        local = None
        if self.mode == "auto" and self.local is not None:
            try:
                local = upright(self.local, image, self.bar)
            except AutoragError:
                if self.vision is None:
                    raise
            if local is not None and local.passes(self.bar):
                return local
        vision = self._vision(image)
        if local is None or vision is None:
            return local or vision
        return vision if vision.score > local.score else local

    def _vision(self, image: Image.Image) -> Read | None:
        if self.vision is None or self.vision_pages_left <= 0:
            return None
        self.vision_pages_left -= 1
        return _read(self.vision, image)


def upright(engine: OcrEngine, image: Image.Image, bar: Bar) -> Read:
    """The engine's read of ``image``; when poor, of the page turned as the engine's
    orientation check says, or else each other way, keeping the best read."""
    best = _read(engine, image)
    if best.passes(bar):
        return best
    for angle in _angles(engine, image):
        turned = _read(engine, image.transpose(_TURNS[angle]), angle)
        if turned.score > best.score:
            best = turned
        if turned.passes(bar):
            break
    return best


def _angles(engine: OcrEngine, image: Image.Image) -> list[int]:
    hint = engine.orientation(image) if isinstance(engine, Orients) else None
    if hint is not None:
        return [hint] if hint else []  # upright says the page is just hard to read
    return [180, 90, 270]


def _read(engine: OcrEngine, image: Image.Image, rotation: int = 0) -> Read:
    result = engine.recognize(image)
    return Read(result, credibility(result.text), engine.name, rotation)
