"""Which language a text is written in (py3langid, its model shipped in the wheel).

Detection picks among the languages the full-text analyser handles (see
:mod:`.analysis`); below a confidence floor, or on text too short to tell, it answers the
caller's default, since a wrong stemmer costs more than a plain one.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

# ISO 639-1 code -> Snowball algorithm (PyStemmer) for the languages we stem.
SNOWBALL = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "porter",  # FTS5's own English stemmer, so English ranks as it always has
    "es": "spanish",
    "eu": "basque",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nl": "dutch",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "tr": "turkish",
}
# Written without spaces between words: indexed as overlapping character pairs.
CJK = frozenset(("zh", "ja", "ko"))
LANGUAGES = frozenset(SNOWBALL) | CJK

_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}


def language_name(code: str) -> str:
    """A language's English name for people ("es" → "Spanish"), else its code."""
    algorithm = SNOWBALL.get(code)
    return _NAMES.get(code) or (algorithm.capitalize() if algorithm else code)


MIN_CONFIDENCE = 0.6  # py3langid's normalised probability
_MIN_LETTERS = 12  # fewer letters than this cannot be told apart reliably
_SAMPLE_CHARS = 4000  # the start of a document says which language it is in


def detect_language(text: str, *, default: str = "en") -> str:
    """The ISO 639-1 code of ``text``'s language, or ``default`` when unsure."""
    sample = text[:_SAMPLE_CHARS]
    if sum(ch.isalpha() for ch in sample) < _MIN_LETTERS:
        return default
    language, confidence = _model().classify(sample)
    return str(language) if confidence >= MIN_CONFIDENCE else default


@cache
def _model() -> LanguageIdentifier:
    """Loaded on first use (0.7 s: the model is decompressed); two threads arriving
    together may both load it, and one copy is kept."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(sorted(LANGUAGES))
    return identifier
