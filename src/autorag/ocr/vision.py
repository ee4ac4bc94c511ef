"""The vision engine: each page image goes, as a PNG in a chat message, to a vision model
behind one of ``[[llm.providers]]`` (named by ``ocr.vision_provider``), whose
transcription is the page's text.

The provider is built as chat builds it, so any kind works: Ollama's native API (the
image in ``images``) or any OpenAI-compatible server (an ``image_url`` part); the
transport, its timeouts and its error messages are the provider's. Models that ground
their output (DeepSeek-OCR and kin) wrap it in ``<|ref|>…<|/ref|><|det|>[[x, y, …]]<|/det|>``:
those tags and what they hold are stripped. A model reports no confidence, so the text's
credibility stands in for it.
"""

from __future__ import annotations

import base64
import io
import re
from typing import Self

from PIL import Image

from autorag.config import LLMProviderSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.llm.base import ChatImage, ChatMessage, LLMProvider
from autorag.llm.registry import build_provider
from autorag.ocr.base import EngineConfig, OcrResult
from autorag.ocr.quality import credibility

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

    def __init__(self, provider: LLMProvider, model: str, prompt: str) -> None:
        self.provider = provider
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
        settings = _provider_settings(config.llm.providers, ocr.vision_provider)
        # A page waits at most page_timeout_s, however patient the provider is with chat.
        timeout_s = min(settings.timeout_s, ocr.page_timeout_s)
        try:
            provider = build_provider(settings.model_copy(update={"timeout_s": timeout_s}))
        except InvalidInput as exc:
            message = f"ocr.vision_provider {settings.name!r}: {exc.message}"
            raise Unavailable(message, code="ocr_unavailable") from exc
        if not provider.local and not ocr.vision_allow_hosted:
            raise Unavailable(
                f"LLM provider {provider.name!r} is hosted: page images would leave this "
                "network. Set ocr.vision_allow_hosted = true to allow it",
                code="ocr_unavailable",
            )
        return cls(provider, ocr.vision_model, vision_prompt(config.instructions))

    def recognize(self, image: Image.Image) -> OcrResult:
        page = ChatImage(png_base64(image), "image/png")
        messages = [
            ChatMessage("system", self.prompt),
            ChatMessage("user", USER_TEXT, images=(page,)),
        ]
        try:
            deltas = self.provider.stream_chat(messages, model=self.model, temperature=0)
            text = strip_grounding("".join(delta.text for delta in deltas))
        finally:
            self.provider.close()  # one page a call, seconds apart: nothing to pool
        return OcrResult(text, credibility(text))


def _provider_settings(providers: list[LLMProviderSettings], name: str) -> LLMProviderSettings:
    found = next((p for p in providers if p.name == name), None)
    if found is None:
        raise Unavailable(
            f"ocr.vision_provider {name!r} is not one of [[llm.providers]]",
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
