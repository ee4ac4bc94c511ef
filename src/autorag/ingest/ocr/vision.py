"""The vision engine: each page image goes to a vision model on an Ollama server
(``POST /api/chat`` with the PNG in ``images``), whose transcription is the page's text.

The server is one of ``[[llm.providers]]`` (kind ``ollama``), named by
``ocr.vision_provider``; the transport, its timeouts and its error messages are the LLM
layer's. Models that ground their output (DeepSeek-OCR and kin) wrap it in
``<|ref|>…<|/ref|><|det|>[[x, y, …]]<|/det|>``: those tags and what they hold are
stripped. A model reports no confidence, so the text's credibility stands in for it.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterable
from typing import Any, Self

from PIL import Image

from autorag.config import LLMProviderSettings
from autorag.errors import Unavailable
from autorag.http_client import ModelServer
from autorag.ingest.ocr.base import EngineConfig, OcrResult
from autorag.ingest.ocr.quality import credibility
from autorag.llm._wire import is_local_url
from autorag.llm.ollama import OllamaProvider

PROMPT = (
    "You are an OCR engine. Transcribe all the text in the image exactly as written, in "
    "reading order, keeping its line breaks and paragraphs. Do not describe the image, "
    "translate, summarise, correct or add anything. If the image holds no text, answer "
    "with nothing."
)
USER_TEXT = "Transcribe the text of this page."
# Vision encoders work at under 2k pixels a side; sending more only costs upload time.
MAX_SIDE_PX = 2048
_GROUNDED = re.compile(r"<\|(ref|det)\|>.*?<\|/\1\|>", re.DOTALL)
_SPECIAL_TOKEN = re.compile(r"<\|/?[a-z_]{1,32}\|>")
_BLANK_LINES = re.compile(r"\n{3,}")


def strip_grounding(text: str) -> str:
    """``text`` without grounding tags (and what they hold) or stray special tokens."""
    text = _SPECIAL_TOKEN.sub("", _GROUNDED.sub("", text))
    lines = (line.rstrip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def vision_prompt(instructions: str = "") -> str:
    """The system prompt: ours, then the workspace's custom instructions, if any."""
    extra = instructions.strip()
    return f"{PROMPT}\n\nInstructions for this workspace:\n{extra}" if extra else PROMPT


class VisionEngine:
    name = "vision"

    def __init__(self, wire: ModelServer, model: str, prompt: str) -> None:
        self._wire = wire
        self.model = model
        self.prompt = prompt

    @classmethod
    def build(cls, config: EngineConfig) -> Self:
        ocr = config.ocr
        if not ocr.vision_provider or not ocr.vision_model:
            raise Unavailable(
                "vision OCR is not configured: set ocr.vision_provider (an [[llm.providers]] "
                "name) and ocr.vision_model",
                code="ocr_unavailable",
            )
        provider = _provider(config.llm.providers, ocr.vision_provider)
        base_url = provider.base_url or OllamaProvider.default_base_url
        local = provider.local if provider.local is not None else is_local_url(base_url)
        if not local and not ocr.vision_allow_hosted:
            raise Unavailable(
                f"LLM provider {provider.name!r} is hosted: page images would leave this "
                "network. Set ocr.vision_allow_hosted = true to allow it",
                code="ocr_unavailable",
            )
        wire = ModelServer(
            f"LLM provider {provider.name!r}",
            base_url,
            api_key=provider.api_key.get_secret_value() if provider.api_key else None,
            timeout_s=min(provider.timeout_s, ocr.page_timeout_s),
            not_found_hint=OllamaProvider.not_found_hint,
        )
        return cls(wire, ocr.vision_model, vision_prompt(config.instructions))

    def recognize(self, image: Image.Image) -> OcrResult:
        body = {
            "model": self.model,
            "stream": True,
            "options": {"temperature": 0},
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": USER_TEXT, "images": [png_base64(image)]},
            ],
        }
        try:
            with self._wire.stream_lines("/api/chat", body) as lines:
                text = strip_grounding(self._content(lines))
        finally:
            self._wire.close()  # one page a call, seconds apart: nothing to pool
        return OcrResult(text, credibility(text))

    def _content(self, lines: Iterable[str]) -> str:
        parts: list[str] = []
        for line in lines:
            chunk: Any = self._wire.decode(line) if line.strip() else None
            if not isinstance(chunk, dict):
                continue
            if "error" in chunk:
                raise self._wire.reported_error(chunk["error"])
            parts.append(str((chunk.get("message") or {}).get("content") or ""))
            if chunk.get("done"):
                return "".join(parts)
        raise Unavailable(f"{self._wire.where}: the stream ended before the page did")


def _provider(providers: list[LLMProviderSettings], name: str) -> LLMProviderSettings:
    found = next((p for p in providers if p.name == name), None)
    if found is None:
        raise Unavailable(
            f"ocr.vision_provider {name!r} is not one of [[llm.providers]]",
            code="ocr_unavailable",
        )
    if found.kind != "ollama":
        raise Unavailable(
            f"vision OCR speaks Ollama's native API: provider {name!r} is of kind "
            f"{found.kind!r}, not 'ollama'",
            code="ocr_unavailable",
        )
    return found


def png_base64(image: Image.Image) -> str:
    """``image`` as base64 PNG, its long side at most ``MAX_SIDE_PX``."""
    if max(image.size) > MAX_SIDE_PX:
        image = image.copy()
        image.thumbnail((MAX_SIDE_PX, MAX_SIDE_PX))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
