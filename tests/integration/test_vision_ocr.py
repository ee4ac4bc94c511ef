"""The vision OCR engine through the LLM providers, against the Ollama and the
OpenAI-compatible doubles on loopback: each sends the page its dialect's way, and the
model's transcription, grounding stripped, is the page's text."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from PIL import Image
from tests.doubles import Error, Hang, ScriptedOllama, ScriptedOpenAI, ScriptedServer, Text
from tests.doubles.script import message_text
from tests.ocr_samples import page_image

from autorag.config import LLMProviderSettings, LLMSettings, OcrSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.ocr.base import EngineConfig, OcrEngine
from autorag.ocr.engines import build_engine
from autorag.ocr.vision import MAX_SIDE_PX, USER_TEXT

MODEL = "ocr-vision"
PAGE_TEXT = "Quarterly tariff sheet: freight to Quillhaven costs 42 credits per crate."
GROUNDED = (
    "<|ref|>title<|/ref|><|det|>[[40, 30, 900, 80]]<|/det|>\n"
    f"{PAGE_TEXT}\n<|ref|>text<|/ref|><|det|>[[40, 90, 900, 120]]<|/det|>"
)


@dataclass(frozen=True)
class Dialect:
    """A model server double and the ``[[llm.providers]]`` kind that speaks to it."""

    server: Callable[..., ScriptedServer]
    kind: str

    def temperature(self, request: dict[str, Any]) -> Any:
        return (request["options"] if self.kind == "ollama" else request)["temperature"]


DIALECTS = [
    pytest.param(Dialect(ScriptedOllama, "ollama"), id="ollama"),
    pytest.param(Dialect(ScriptedOpenAI, "openai"), id="openai"),
]


def _engine(server: ScriptedServer, kind: str, **ocr: Any) -> OcrEngine:
    provider = LLMProviderSettings(name="box", kind=kind, base_url=server.base_url)
    settings = OcrSettings.model_validate({"vision_provider": "box", "vision_model": MODEL, **ocr})
    llm = LLMSettings(providers=[provider])
    return build_engine("vision", EngineConfig(settings, llm, "Keep tariff tables."))


@pytest.fixture(scope="module")
def page() -> Image.Image:
    return page_image(["A tariff sheet"])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_page_is_read_by_the_vision_model(dialect: Dialect, page: Image.Image) -> None:
    with dialect.server([Text(GROUNDED)], models=[MODEL]) as server:
        result = _engine(server, dialect.kind).recognize(page)
    assert result.text == PAGE_TEXT and 0 < result.confidence <= 1
    [request] = server.requests
    assert request["model"] == MODEL and dialect.temperature(request) == 0
    system, user = request["messages"]
    assert system["role"] == "system" and system["content"].endswith("Keep tariff tables.")
    assert user["role"] == "user" and message_text(user["content"]) == USER_TEXT
    [png] = server.images(request)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and max(image.size) == MAX_SIDE_PX


def test_openai_compatible_servers_get_the_page_as_a_data_url(page: Image.Image) -> None:
    with ScriptedOpenAI([Text(PAGE_TEXT)], models=[MODEL]) as server:
        _engine(server, "openai").recognize(page)
    text, image = server.requests[0]["messages"][1]["content"]
    assert text == {"type": "text", "text": USER_TEXT}
    assert image["type"] == "image_url"
    assert image["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_failing_model_fails_the_page(dialect: Dialect, page: Image.Image) -> None:
    with dialect.server([Error(500, "model crashed")]) as server:
        engine = _engine(server, dialect.kind)
        with pytest.raises(Unavailable, match=r"'box' at .* failed \(HTTP 500: model crashed\)"):
            engine.recognize(page)
        server.push(Text(PAGE_TEXT))
        assert engine.recognize(page).text == PAGE_TEXT  # the next page goes on


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unknown_vision_model_is_named(dialect: Dialect, page: Image.Image) -> None:
    server = dialect.server(models=["llava"], reject_unknown_models=True)
    with server, pytest.raises(InvalidInput, match=r"HTTP 404: .*ocr-vision.*Check the model"):
        _engine(server, dialect.kind).recognize(page)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_page_waits_no_longer_than_the_page_timeout(dialect: Dialect, page: Image.Image) -> None:
    with dialect.server([Hang(seconds=10)]) as server:
        engine = _engine(server, dialect.kind, page_timeout_s=0.3)
        with pytest.raises(Unavailable, match=r"did not answer within 0\.3s"):
            engine.recognize(page)
