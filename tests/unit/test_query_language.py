"""Which language a question is asked in, and whether the embedding model reads it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from autorag.config import EmbeddingSettings
from autorag.embeddings.base import model_languages
from autorag.retrieval.query_language import query_language, vector_reads
from autorag.text.language import language_name


def test_a_workspace_in_one_language_is_asked_in_it() -> None:
    assert query_language("ok", ["es"]) == "es"
    assert query_language("What time does the pool open?", ["es"]) == "es"


def test_a_workspace_in_several_languages_is_asked_in_what_the_question_reads_as() -> None:
    both = ["en", "es"]
    assert query_language("¿A qué hora abre la piscina municipal los domingos?", both) == "es"
    assert query_language("What time does the swimming pool open on Sundays?", both) == "en"


def test_a_question_that_cannot_be_told_has_no_language() -> None:
    assert query_language("ok 42", ["en", "es"]) is None  # too short to tell
    # Confidently Italian, but no document is: not a language of this workspace.
    assert query_language("A che ora apre la piscina comunale la domenica?", ["en", "es"]) is None
    assert query_language("anything", []) is None


def test_the_built_in_model_reads_english_only_unless_configured() -> None:
    assert model_languages("all-MiniLM-L6-v2", None) == frozenset({"en"})
    assert model_languages("sentence-transformers/all-MiniLM-L6-v2", None) == frozenset({"en"})
    assert model_languages("bge-m3", None) is None  # not known to be English-only: any
    assert model_languages("all-MiniLM-L6-v2", ["*"]) is None
    assert model_languages("my-model", ["es", "it"]) == frozenset({"es", "it"})


def test_the_vector_leg_reads_its_languages_and_unknown_questions() -> None:
    english = frozenset({"en"})
    assert vector_reads(english, "en")
    assert not vector_reads(english, "es")
    assert vector_reads(english, None)  # unknown: the benefit of the doubt
    assert vector_reads(None, "es")  # a model of any language


def test_embedding_languages_must_be_codes() -> None:
    assert EmbeddingSettings(languages=["es", "it"]).languages == ["es", "it"]
    with pytest.raises(ValidationError, match="languages"):
        EmbeddingSettings(languages=["spanish"])


def test_languages_have_names_for_people() -> None:
    assert [language_name(c) for c in ("en", "es", "it", "ko", "xx")] == [
        "English",
        "Spanish",
        "Italian",
        "Korean",
        "xx",
    ]
