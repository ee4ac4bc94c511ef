"""RapidOCR (PyPI ``rapidocr`` on ``onnxruntime``): PP-OCR models that ship inside the
wheel, so nothing is downloaded. They read Chinese and English; other languages would
need models fetched at run time, which this engine refuses.

Optional: ``pip install 'autorag[rapidocr]'``. The model loads once per process.
"""

from __future__ import annotations

import importlib.util
import threading
from functools import lru_cache
from typing import Any, Self

import numpy as np
from PIL import Image

from autorag.errors import Unavailable
from autorag.ocr.base import EngineConfig, OcrResult

# Tesseract's codes for what the bundled models read.
_BUNDLED_LANGUAGES = frozenset({"eng", "chi_sim", "chi_tra"})


class RapidOcrEngine:
    name = "rapidocr"

    def __init__(self, model: Any, lock: threading.Lock) -> None:
        self._model = model
        self._lock = lock

    @classmethod
    def build(cls, config: EngineConfig) -> Self:
        if importlib.util.find_spec("rapidocr") is None:
            raise Unavailable(
                "rapidocr is not installed: pip install 'autorag[rapidocr]'",
                code="ocr_unavailable",
            )
        other = sorted(set(config.ocr.languages) - _BUNDLED_LANGUAGES)
        if other:
            raise Unavailable(
                f"rapidocr's bundled models do not read {', '.join(other)}: use tesseract",
                code="ocr_unavailable",
            )
        model, lock = _load()
        return cls(model, lock)

    def recognize(self, image: Image.Image) -> OcrResult:
        pixels = np.asarray(image.convert("RGB"))
        try:
            with self._lock:  # the model keeps per-call options as state
                output = self._model(pixels)
        except Exception as exc:  # onnxruntime and OpenCV raise their own types
            raise Unavailable(f"rapidocr failed on the page: {exc}", code="ocr_failed") from exc
        lines = [str(t) for t in (getattr(output, "txts", None) or ()) if str(t).strip()]
        scores = [float(s) for s in (getattr(output, "scores", None) or ())][: len(lines)]
        return OcrResult("\n".join(lines), _confidence(lines, scores))


@lru_cache(maxsize=1)
def _load() -> tuple[Any, threading.Lock]:
    """The model, loaded once per process (about 2 s), and the lock that guards it."""
    from rapidocr import RapidOCR

    # No line-direction classifier: on clean Latin text it turns good lines upside down
    # (a 40-line page read at 89 % instead of 100 %); the reader turns whole pages.
    params = {"Global.log_level": "warning", "Global.use_cls": False}
    return RapidOCR(params=params), threading.Lock()


def _confidence(lines: list[str], scores: list[float]) -> float:
    weight = sum(len(line) for line in lines)
    if not weight or len(scores) != len(lines):
        return 0.0
    return round(sum(s * len(line) for s, line in zip(scores, lines, strict=True)) / weight, 4)
