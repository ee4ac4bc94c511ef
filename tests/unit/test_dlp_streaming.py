"""The streaming redactor: never a piece of a secret in clear, however tokens split it.

The property checked everywhere: every prefix of what the redactor has emitted is a
prefix of ``scan_content(whole text).redacted_text``, and everything emitted plus the
flush equals it. The redacted whole text holds no secret, so no emitted prefix can
hold any character of one; and the flush adds no redaction the scan would not make.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.dlp_corpus import POSITIVES, RSA_KEY, VAT_SAMPLES, Sample, samples, secrets_of

from autorag.dlp import BUILTINS, REDACTED, StreamingRedactor, scan_content
from autorag.dlp.patterns import Pattern, builtin

SECRETS = [s for values in POSITIVES.values() for s in values] + [v for v, _ in VAT_SAMPLES]
FILLER = [
    " ",
    "\n",
    ", ",
    ". ",
    "the ",
    "Contact ",
    "IBAN: ",
    "card ",
    "key=",
    '"',
    "-",
    "@",
    "+",
    "42",
    "AB",
    "sk",
    "P.",
    "IVA ",
    "-----",
    "BEGIN ",
    "é",
    "\u212a",  # the Kelvin sign: RE2 folds it to "k" when ignoring case
]


def _stream(parts: Sequence[str], patterns: Sequence[Pattern] = BUILTINS) -> str:
    """Feed ``parts`` as tokens, checking the prefix property after each; the output."""
    redactor = StreamingRedactor(patterns)
    expected = scan_content("".join(parts), patterns=patterns)
    emitted = ""
    for part in parts:
        emitted += redactor.feed(part)
        assert expected.redacted_text.startswith(emitted), (parts, emitted)
    emitted += redactor.flush()
    assert emitted == expected.redacted_text, parts
    assert redactor.redacted is expected.has_match
    return emitted


def _corpus() -> list[Sample]:
    return [s for s in samples() if s.expected][::3] + [s for s in samples() if not s.expected]


@pytest.mark.parametrize("sample", _corpus(), ids=lambda s: s.text[:30])
def test_every_split_position_of_every_corpus_text(sample: Sample) -> None:
    text = sample.text
    for cut in range(len(text) + 1):
        out = _stream([text[:cut], text[cut:]])
        for secret in secrets_of(sample):
            assert secret not in out


@pytest.mark.parametrize("secret", SECRETS)
def test_every_secret_fed_one_character_at_a_time(secret: str) -> None:
    _stream(list(f"Here it is: {secret} — done."))


@given(
    parts=st.lists(st.sampled_from(SECRETS + FILLER), min_size=1, max_size=12),
    data=st.data(),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_texts_split_at_random_token_boundaries(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=20)))
    tokens = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    _stream(tokens)


@given(st.text(alphabet=st.characters(codec="utf-8", max_codepoint=0x2FF), max_size=60), st.data())
@settings(max_examples=300, deadline=None)
@example("0039 06 9876543 2", None)
def test_arbitrary_text_keeps_the_property(text: str, data: st.DataObject | None) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=10))) if data else []
    tokens = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    _stream(tokens)


def test_plain_prose_streams_word_by_word() -> None:
    """Only the word being written is held: it could still become an e-mail address."""
    redactor = StreamingRedactor()
    assert redactor.feed("Hello there") == "Hello "
    assert redactor.feed(", friend. ") == "there, friend. "
    assert redactor.feed("Bye\n") == "Bye\n"
    assert redactor.flush() == ""
    assert not redactor.redacted


def test_a_secret_is_held_until_it_is_complete_then_redacted() -> None:
    redactor = StreamingRedactor()
    out = [redactor.feed(t) for t in ["Write to ma", "rio.rossi@exa", "mple.com", " today"]]
    assert out == ["Write to ", "", "", f"{REDACTED} "]
    assert redactor.flush() == "today"
    assert redactor.redacted and redactor.types == ["email"]


def test_a_pem_block_is_held_from_its_begin_marker() -> None:
    redactor = StreamingRedactor()
    head, body = RSA_KEY.split("\n", 1)
    assert redactor.feed("Here: ") == "Here: "
    assert redactor.feed(head + "\n") == ""
    assert redactor.feed(body[:40]) == ""
    assert redactor.feed(body[40:]) == ""  # the END marker could still grow
    assert redactor.feed("\nDone. ") == f"{REDACTED}\nDone. "


def test_an_unfinished_pem_block_is_redacted_at_the_flush() -> None:
    redactor = StreamingRedactor()
    assert redactor.feed("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq") == ""
    assert redactor.flush() == REDACTED


def test_only_builtins_can_stream() -> None:
    from autorag.dlp import compile_custom

    with pytest.raises(ValueError, match="built-in"):
        StreamingRedactor([compile_custom("ticket", "T-[0-9]+")])


def test_a_disabled_builtin_is_not_waited_for() -> None:
    """Without eu_phone a trailing "+39 …" streams; with it, it is held."""
    assert StreamingRedactor([builtin("email")]).feed("call +39 333 ") == "call +39 333 "
    assert StreamingRedactor([builtin("eu_phone")]).feed("call +39 333 ") == "call "
