"""Full-text terms in any language: stemming, folding, CJK pairs, language detection."""

from __future__ import annotations

import pytest

from autorag.text.analysis import index_terms, query_terms
from autorag.text.language import detect_language


@pytest.mark.parametrize(
    ("language", "indexed", "asked"),
    [
        ("es", "Reembolsamos los gastos de las canciones", "reembolsar cancion"),
        ("it", "I rimborsi delle città italiane", "rimborso citta"),
        ("de", "Die größeren Häuser", "grosseres haus"),
        ("fr", "Les remboursements effectués", "remboursement effectue"),
        ("pt", "As férias dos funcionários", "ferias funcionario"),
        ("en", "Refunds were processed", "refund processing"),
    ],
)
def test_inflected_and_unaccented_words_meet(language: str, indexed: str, asked: str) -> None:
    stored = set(index_terms(indexed, language).split())
    wanted = query_terms(asked, [language])
    assert wanted and set(wanted) <= stored, (wanted, stored)


@pytest.mark.parametrize(
    ("indexed", "asked"),
    [
        ("los días", "un día"),  # short words Snowball leaves whole lose the plural -s
        ("mis tíos", "tio"),
        ("los países", "pais"),  # singulars in -és and -ís keep theirs: their plurals
        ("el país", "paises"),  # are stemmed by Snowball itself
        ("los ingleses", "inglés"),
    ],
)
def test_spanish_singulars_and_plurals_meet(indexed: str, asked: str) -> None:
    stored = set(index_terms(indexed, "es").split())
    assert set(query_terms(asked, ["es"])) <= stored, (query_terms(asked, ["es"]), stored)


def test_the_plural_rule_is_spanish_only() -> None:
    # Tuned on a Spanish set only: other languages keep their Snowball stems as they are.
    assert index_terms("dias", "pt") == "dias"
    assert index_terms("giorni", "it") == "giorn"


def test_english_stems_as_fts5_porter_did() -> None:
    # The English index must rank as it always has: the same Porter stems.
    assert index_terms("running properties biomaterials", "en") == "run properti biomateri"


def test_cjk_runs_become_character_pairs_so_a_word_is_found_inside_a_run() -> None:
    assert index_terms("東京の天気", "ja").split() == ["東京", "京の", "の天", "天気"]
    assert "天気" in query_terms("天気", ["ja"])
    stored = index_terms("회의록을 요약했습니다", "ko").split()
    assert set(query_terms("회의록", ["ko"])) <= set(stored)
    assert index_terms("気", "ja") == "気"  # a lone character is its own term


def test_mixed_scripts_in_one_word_keep_both_parts() -> None:
    assert index_terms("iPhone用ケース", "ja").split() == ["iphone", "用ケ", "ケー", "ース"]


def test_queries_drop_the_stopwords_of_every_workspace_language() -> None:
    assert query_terms("¿Cuántos días de vacaciones tengo?", ["es"]) == ["dia", "vacacion"]
    assert query_terms("the of and", ["en"]) == []
    # A query is made terms in each of the workspace's languages.
    both = query_terms("canciones", ["en", "es"])
    assert "cancion" in both


def test_a_query_with_no_language_is_taken_as_english() -> None:
    assert query_terms("running", []) == ["run"]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Cada empleado disfruta de veintidós días laborables de vacaciones al año.", "es"),
        ("Ogni dipendente ha diritto a ventidue giorni lavorativi di ferie all'anno.", "it"),
        ("Every employee is entitled to twenty-two working days of leave a year.", "en"),
        ("Jeder Mitarbeiter hat Anspruch auf zweiundzwanzig Urlaubstage im Jahr.", "de"),
        ("東京の天気は晴れです。明日は雨が降るでしょう。", "ja"),
    ],
)
def test_detects_the_language_of_a_passage(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_too_little_text_falls_back_to_the_default() -> None:
    assert detect_language("OK 42", default="it") == "it"
    assert detect_language("", default="es") == "es"
