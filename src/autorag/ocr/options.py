"""A workspace's OCR choices over the server's ``[ocr]`` settings: the engine (or off),
Tesseract's languages and the vision model, each checked against what this server has
(the engines it knows, Tesseract's language codes, the ``[[llm.providers]]`` it is
configured with) before it is kept, so a bad choice is refused when made, not when a
scan is read hours later.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from autorag.config import LLMSettings, OcrSettings
from autorag.errors import InvalidInput
from autorag.llm.registry import build_provider
from autorag.ocr.engines import ENGINES
from autorag.workspace_settings import WorkspaceSettings

OFF = "off"
AUTO = "auto"
ENGINE_CHOICES: tuple[str, ...] = (AUTO, *sorted(ENGINES), OFF)
MAX_LANGUAGES = 20
# Tesseract's trained-data codes (tessdata), so a typo is refused with words rather than
# failing every later scan.
# fmt: off
TESSERACT_LANGUAGES = frozenset((
    "afr", "amh", "ara", "asm", "aze", "aze_cyrl", "bel", "ben", "bod", "bos", "bre", "bul",
    "cat", "ceb", "ces", "chi_sim", "chi_sim_vert", "chi_tra", "chi_tra_vert", "chr", "cos",
    "cym", "dan", "deu", "deu_latf", "div", "dzo", "ell", "eng", "enm", "epo", "equ", "est",
    "eus", "fao", "fas", "fil", "fin", "fra", "frk", "frm", "fry", "gla", "gle", "glg",
    "grc", "guj", "hat", "heb", "hin", "hrv", "hun", "hye", "iku", "ind", "isl", "ita",
    "ita_old", "jav", "jpn", "jpn_vert", "kan", "kat", "kat_old", "kaz", "khm", "kir",
    "kmr", "kor", "kor_vert", "lao", "lat", "lav", "lit", "ltz", "mal", "mar", "mkd", "mlt",
    "mon", "mri", "msa", "mya", "nep", "nld", "nor", "oci", "ori", "osd", "pan", "pol",
    "por", "pus", "que", "ron", "rus", "san", "sin", "slk", "slv", "snd", "spa", "spa_old",
    "sqi", "srp", "srp_latn", "sun", "swa", "swe", "syr", "tam", "tat", "tel", "tgk", "tha",
    "tir", "ton", "tur", "uig", "ukr", "urd", "uzb", "uzb_cyrl", "vie", "yid", "yor",
))
# fmt: on
_CODE = re.compile(r"^[a-z]{3}(_[a-z]{3,4})?$")


@dataclass(frozen=True)
class OcrChoice:
    """What a workspace chose; None: the server's setting."""

    engine: str | None
    languages: list[str] | None
    vision_model: str | None  # provider/model


def choice_of(settings: WorkspaceSettings) -> OcrChoice:
    return OcrChoice(settings.ocr_engine, settings.ocr_languages, settings.ocr_vision_model)


def effective(server: OcrSettings, choice: OcrChoice) -> OcrSettings:
    """The ``[ocr]`` settings a workspace's scans are read with."""
    changes: dict[str, object] = {}
    if choice.engine == OFF:
        changes["enabled"] = False
    elif choice.engine is not None:
        changes["engine"] = choice.engine
    if choice.languages:
        changes["languages"] = list(choice.languages)
    if choice.vision_model:
        provider, _, model = choice.vision_model.partition("/")
        changes.update(vision_provider=provider, vision_model=model)
    return server.model_copy(update=changes)


def check_choice(choice: OcrChoice, server: OcrSettings, llm: LLMSettings) -> OcrChoice:
    """``choice`` cleaned up, or ``InvalidInput`` naming what is wrong with it."""
    if choice.engine is not None and choice.engine not in ENGINE_CHOICES:
        known = ", ".join(ENGINE_CHOICES)
        raise InvalidInput(f"unknown OCR engine {choice.engine!r}: choose one of {known}")
    languages = _check_languages(choice.languages) if choice.languages is not None else None
    model = choice.vision_model.strip() if choice.vision_model else None
    if model:
        _check_vision_model(model, server, llm)
    return OcrChoice(choice.engine, languages, model or None)


def _check_languages(codes: Sequence[str]) -> list[str] | None:
    cleaned = list(dict.fromkeys(code.strip().lower() for code in codes if code.strip()))
    if len(cleaned) > MAX_LANGUAGES:
        raise InvalidInput(f"choose at most {MAX_LANGUAGES} OCR languages")
    unknown = [c for c in cleaned if not _CODE.match(c) or c not in TESSERACT_LANGUAGES]
    if unknown:
        shown = ", ".join(repr(c[:20]) for c in unknown[:5])
        raise InvalidInput(
            f"unknown OCR language code(s) {shown}: use Tesseract's codes, such as eng, "
            "deu, fra or chi_sim"
        )
    return cleaned or None


def _check_vision_model(model: str, server: OcrSettings, llm: LLMSettings) -> None:
    name, _, model_name = model.partition("/")
    settings = next((p for p in llm.providers if p.name == name), None)
    if settings is None or not model_name:
        configured = ", ".join(p.name for p in llm.providers) or "none"
        raise InvalidInput(
            f"vision model {model[:100]!r} is not served by a configured model provider "
            f"(write provider/model; configured providers: {configured})"
        )
    provider = build_provider(settings)
    try:
        hosted = not provider.local
    finally:
        provider.close()
    if hosted and not server.vision_allow_hosted:
        raise InvalidInput(
            f"provider {name!r} is hosted: page images would leave this network, and this "
            "server does not allow it (ocr.vision_allow_hosted)"
        )


@lru_cache(maxsize=1)
def installed_languages() -> tuple[str, ...]:
    """Tesseract's installed languages (none when it is not installed), for the page."""
    try:
        import pytesseract
    except ImportError:
        return ()
    if shutil.which(pytesseract.pytesseract.tesseract_cmd) is None:
        return ()
    try:
        found = pytesseract.get_languages(config="")
    except (OSError, RuntimeError, pytesseract.TesseractError):
        return ()
    return tuple(sorted(code for code in found if code != "osd"))
