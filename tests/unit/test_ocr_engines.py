"""OCR engines on pages the tests draw: text recovered, turned pages stood up, engines
picked by name, and the page reader's choices between engines."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from PIL import Image
from tests.ocr_samples import char_accuracy, needs_rapidocr, needs_tesseract, page_image, sentences

from autorag.config import LLMProviderSettings, LLMSettings, OcrSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.llm.ollama import OllamaProvider
from autorag.llm.openai_compat import OpenAICompatProvider
from autorag.ocr.base import EngineConfig, OcrResult
from autorag.ocr.engines import build_engine, local_engine
from autorag.ocr.reader import Bar, Readers, upright
from autorag.ocr.vision import VisionEngine

BAR = Bar(quality=0.75, credibility=0.6)


def _config(**ocr: object) -> EngineConfig:
    return EngineConfig(OcrSettings.model_validate(ocr), LLMSettings())


def _strip(lines: list[str]) -> Image.Image:
    """The top of a page: enough text to read, quicker than a whole A4 page."""
    return page_image(lines).crop((0, 0, 2480, 200 + 74 * len(lines) + 150))


@needs_tesseract
def test_tesseract_recovers_a_clean_300_dpi_page() -> None:
    lines = sentences(30, seed=7)
    result = build_engine("tesseract", _config()).recognize(page_image(lines))
    assert char_accuracy("\n".join(lines), result.text) >= 0.98
    assert result.confidence > 0.85


@needs_tesseract
def test_tesseract_keeps_lines_and_paragraph_order() -> None:
    lines = ["First line of the notice.", "Second line, 42 items.", "Third and last line."]
    result = build_engine("tesseract", _config()).recognize(_strip(lines))
    assert result.text.splitlines() == lines


@needs_tesseract
@pytest.mark.parametrize("turn", [Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180])
def test_a_turned_page_is_stood_up_and_read(turn: Image.Transpose) -> None:
    lines = sentences(8, seed=3)
    engine = build_engine("tesseract", _config())
    read = upright(engine, _strip(lines).transpose(turn), BAR)
    assert read.rotation in (90, 180, 270)
    assert char_accuracy("\n".join(lines), read.result.text) >= 0.98
    assert read.passes(BAR)


@needs_tesseract
def test_an_upright_page_is_read_once() -> None:
    calls: list[int] = []
    engine = build_engine("tesseract", _config())

    class Counting:
        name = "tesseract"

        def recognize(self, image: Image.Image) -> OcrResult:
            calls.append(1)
            return engine.recognize(image)

    upright(Counting(), _strip(sentences(4)), BAR)
    assert calls == [1]


@needs_tesseract
def test_auto_picks_tesseract_when_installed() -> None:
    assert local_engine(_config()).name == "tesseract"


@needs_tesseract
def test_a_language_without_data_says_which_package_to_install() -> None:
    with pytest.raises(Unavailable) as caught:
        build_engine("tesseract", _config(languages=["eng", "kat_old"]))
    assert "apt-get install tesseract-ocr-kat-old" in caught.value.message


@needs_rapidocr
def test_rapidocr_recovers_a_clean_300_dpi_page() -> None:
    lines = sentences(30, seed=7)
    result = build_engine("rapidocr", _config()).recognize(page_image(lines))
    assert char_accuracy("\n".join(lines), result.text) >= 0.98
    assert result.confidence > 0.85


@needs_rapidocr
def test_rapidocr_refuses_languages_its_bundled_models_do_not_read() -> None:
    with pytest.raises(Unavailable, match="do not read deu"):
        build_engine("rapidocr", _config(languages=["eng", "deu"]))


def test_unknown_engines_are_refused() -> None:
    with pytest.raises(InvalidInput, match="unknown OCR engine 'abbyy'"):
        build_engine("abbyy", _config())


def _vision_config(**ocr: object) -> EngineConfig:
    providers = [
        LLMProviderSettings(name="box", kind="ollama", base_url="http://127.0.0.1:9"),
        LLMProviderSettings(name="cloud", kind="ollama", base_url="https://ollama.example.com"),
        LLMProviderSettings(name="oai", kind="openai", base_url="http://127.0.0.1:9/v1"),
        LLMProviderSettings(name="gpt", kind="openai"),  # api.openai.com
        LLMProviderSettings(name="odd", kind="anthropic", base_url="http://127.0.0.1:9"),
    ]
    return EngineConfig(OcrSettings.model_validate(ocr), LLMSettings(providers=providers))


@pytest.mark.parametrize(
    ("ocr", "message"),
    [
        ({}, "vision OCR is not configured"),
        ({"vision_provider": "nope", "vision_model": "m"}, "'nope' is not one of"),
        ({"vision_provider": "odd", "vision_model": "m"}, "'odd': .* unknown kind 'anthropic'"),
        ({"vision_provider": "cloud", "vision_model": "m"}, "page images would leave"),
        ({"vision_provider": "gpt", "vision_model": "m"}, "page images would leave"),
    ],
)
def test_vision_needs_a_local_provider_of_a_known_kind(ocr: dict[str, str], message: str) -> None:
    with pytest.raises(Unavailable, match=message) as caught:
        build_engine("vision", _vision_config(**ocr))
    assert caught.value.code == "ocr_unavailable"


@pytest.mark.parametrize(
    ("name", "provider"), [("box", OllamaProvider), ("oai", OpenAICompatProvider)]
)
def test_vision_speaks_through_any_llm_provider(name: str, provider: type[object]) -> None:
    engine = build_engine("vision", _vision_config(vision_provider=name, vision_model="m"))
    assert isinstance(engine, VisionEngine) and isinstance(engine.provider, provider)
    assert (engine.name, engine.provider.name, engine.model) == ("vision", name, "m")


@pytest.mark.parametrize("name", ["cloud", "gpt"])
def test_a_hosted_vision_provider_needs_an_explicit_yes(name: str) -> None:
    config = _vision_config(vision_provider=name, vision_model="m", vision_allow_hosted=True)
    assert build_engine("vision", config).name == "vision"


# -- the page reader, with scripted engines ----------------------------------------------
@dataclass
class Scripted:
    name: str
    results: list[OcrResult]
    seen: list[Image.Image] = field(default_factory=list)

    def recognize(self, image: Image.Image) -> OcrResult:
        self.seen.append(image)
        return self.results[min(len(self.seen), len(self.results)) - 1]


GOOD = OcrResult("Refunds are accepted within thirty days of purchase.", 0.95)
POOR = OcrResult("xq zt |~ kk", 0.31)


def test_blank_pages_are_not_read() -> None:
    local = Scripted("tesseract", [GOOD])
    readers = Readers("auto", BAR, local, None, 50)
    read = readers.read(Image.new("L", (800, 1000), 255))
    assert read.status == "blank" and not local.seen


def test_auto_asks_the_vision_model_only_when_the_local_read_is_poor() -> None:
    local = Scripted("tesseract", [POOR])
    vision = Scripted("vision", [OcrResult(GOOD.text, 0.0)])
    readers = Readers("auto", BAR, local, vision, 50)
    read = readers.read(_strip(["Refunds"]))
    assert read.engine == "vision" and read.text == GOOD.text
    assert len(local.seen) == 4  # upright, then turned three ways
    good = Readers("auto", BAR, Scripted("tesseract", [GOOD]), vision, 50)
    assert good.read(_strip(["Refunds"])).engine == "tesseract"
    assert len(vision.seen) == 1


def test_a_poor_read_is_kept_as_low_when_nothing_better_exists() -> None:
    readers = Readers("auto", BAR, Scripted("tesseract", [POOR]), None, 50)
    read = readers.read(_strip(["Refunds"]))
    assert read.status == "low" and read.text == POOR.text


def test_the_vision_page_cap_skips_later_pages() -> None:
    vision = Scripted("vision", [GOOD])
    readers = Readers("vision", BAR, None, vision, 2)
    statuses = [readers.read(_strip(["Refunds"])).status for _ in range(3)]
    assert statuses == ["done", "done", "skipped"]
    assert len(vision.seen) == 2


def test_an_engine_failure_fails_the_page_not_the_reader() -> None:
    class Broken:
        name = "tesseract"

        def recognize(self, image: Image.Image) -> OcrResult:
            raise Unavailable("tesseract failed on the page: killed")

    read = Readers("auto", BAR, Broken(), None, 50).read(_strip(["Refunds"]))
    assert read.status == "failed" and "killed" in (read.reason or "")
