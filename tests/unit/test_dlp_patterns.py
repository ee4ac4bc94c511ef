"""The built-in patterns on a labelled corpus, their validators, custom patterns, and
hostile inputs."""

from __future__ import annotations

import pytest
from tests.dlp_corpus import POSITIVES, Sample, samples

from autorag.dlp import BUILTINS, DEFAULT_PATTERNS, REDACTED, compile_custom, scan_content
from autorag.dlp.nodes import render, repeat, seq, text
from autorag.dlp.patterns import builtin
from autorag.dlp.validators import card_number, codice_fiscale, iban, luhn_ok, mod97_ok
from autorag.errors import InvalidInput

BUILTIN_NAMES = [
    "email",
    "credit_card",
    "ssn",
    "api_key",
    "aws_key",
    "private_key",
    "it_vat_iva",
    "it_codice_fiscale",
    "iban",
    "eu_phone",
]


def _found(sample: Sample) -> set[tuple[str, int, int]]:
    return {(m.type, m.start, m.end) for m in scan_content(sample.text, patterns=BUILTINS).matches}


def _stray(sample: Sample, found: set[tuple[str, int, int]]) -> set[tuple[str, int, int]]:
    """Matches outside every labelled secret (one inside a secret redacts secret text)."""
    return {
        f
        for f in found - sample.expected
        if not any(f[1] < end and start < f[2] for _, start, end in sample.expected)
    }


def test_the_ten_builtins_and_their_defaults() -> None:
    assert [p.name for p in BUILTINS] == BUILTIN_NAMES
    assert all(p.builtin and p.tree is not None for p in BUILTINS)
    assert [p.name for p in DEFAULT_PATTERNS] == BUILTIN_NAMES[:-1]  # eu_phone is off


def test_recall_and_precision_on_the_labelled_corpus() -> None:
    expected = found_right = stray = 0
    misses: list[str] = []
    for sample in samples():
        found = _found(sample)
        expected += len(sample.expected)
        found_right += len(found & sample.expected)
        extra = _stray(sample, found)
        stray += len(extra)
        if sample.expected - found or extra:
            misses.append(
                f"{sample.text!r}: expected {sorted(sample.expected)}, got {sorted(found)}"
            )
    recall = found_right / expected
    precision = found_right / (found_right + stray)
    assert recall >= 0.99, "\n".join(misses)
    assert precision >= 0.98, "\n".join(misses)


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_builtin_has_positives_that_redact_completely(name: str) -> None:
    pattern = builtin(name)
    secrets = POSITIVES.get(name, ["Partita IVA 01234567890"])
    for secret in secrets:
        result = scan_content(f"before {secret} after", patterns=[pattern])
        assert result.has_match, secret
        assert secret.split()[-1] not in result.redacted_text  # no piece left in clear


def test_the_vat_label_stays_and_only_the_number_goes() -> None:
    result = scan_content("Fattura: Partita IVA: 01234567890, grazie")
    assert result.redacted_text == f"Fattura: Partita IVA: {REDACTED}, grazie"
    assert [(m.type, m.start, m.end) for m in result.matches] == [("it_vat_iva", 22, 33)]


def test_overlapping_matches_merge_into_one_redaction() -> None:
    custom = compile_custom("ticket", r"TICKET-[0-9]+ by [a-z.]+@")
    text = "see TICKET-42 by mario.rossi@example.com today"
    result = scan_content(text, patterns=[*DEFAULT_PATTERNS, custom])
    assert {m.type for m in result.matches} == {"ticket", "email"}
    assert result.redacted_text == f"see {REDACTED} today"


def test_an_iban_followed_by_capitals_keeps_them() -> None:
    result = scan_content("IBAN IT60 X054 2811 1010 0000 0123 456 AND MORE")
    assert result.redacted_text == f"IBAN {REDACTED} AND MORE"


def test_a_pem_block_cut_short_is_redacted_to_the_end() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHC\n-----EN"
    assert scan_content(text).redacted_text == f"key:\n{REDACTED}"


def test_validators() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert card_number("4111-1111-1111-1111") == 19
    assert card_number("0000 0000 0000 0000") is None  # no card network starts with 0
    assert mod97_ok("GB82WEST12345698765432") and not mod97_ok("GB82WEST12345698765431")
    assert iban("IT60 X054 2811 1010 0000 0123 456 AB") == 33  # the country's length
    assert iban("IT60X05428111010000001234") is None  # too short for Italy
    assert codice_fiscale("RSSMRA80A01H501U") == 16
    assert codice_fiscale("RSSMRA80A01H501X") is None


def test_custom_patterns_compile_with_re2() -> None:
    pattern = compile_custom("employee_id", r"EMP-(?P<value>[0-9]{6})")
    result = scan_content("badge EMP-123456 ok", patterns=[pattern])
    assert result.redacted_text == f"badge EMP-{REDACTED} ok"


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        (r"(?=secret)\w+", "invalid perl operator: (?="),
        (r"(?<=id:)\d+", "invalid perl operator: (?<"),
        (r"(a)\1", r"invalid escape sequence: \1"),
        (r"[unclosed", "missing ]"),
        (r"a{5000}", "invalid repetition size"),
    ],
)
def test_what_re2_cannot_compile_is_refused_with_its_reason(regex: str, reason: str) -> None:
    with pytest.raises(InvalidInput, match="RE2") as caught:
        compile_custom("bad", regex)
    assert reason in caught.value.message
    assert caught.value.code == "invalid_pattern"


def test_custom_pattern_names_and_empty_matches_are_checked() -> None:
    with pytest.raises(InvalidInput, match="invalid pattern name"):
        compile_custom("Bad Name", "x")
    with pytest.raises(InvalidInput, match="matches empty text"):
        compile_custom("empty", "a*")


def test_catastrophic_backtracking_attempts_run_in_linear_time() -> None:
    """Classic ReDoS patterns compile with RE2 and finish at once on their worst input
    (a backtracking engine would take longer than the universe's age)."""
    hostile = "a" * 100_000 + "!"
    for regex in (r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"(.*a){20}"):
        pattern = compile_custom("redos", regex)
        scan_content(hostile, patterns=[pattern])


HOSTILE_INPUTS = [
    "a" * 100_000,
    "1 " * 50_000,
    "1" * 100_000,
    "1-" * 50_000,
    "-" * 100_000,
    "-----BEGIN PRIVATE KEY-----" + "-" * 100_000,
    "-----BEGIN PRIVATE KEY-----\n" + "----a" * 20_000,
    "A" * 100_000,
    "AB12 " * 20_000,
    "a@" * 50_000,
    "a@b" + ".b" * 50_000,
    "sk-" + "a" * 100_000,
    "partita " * 12_500,
    "P.IVA " * 16_000,
    "+39 " * 25_000,
]


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_builtin_survives_hostile_100kb_inputs(name: str) -> None:
    """Just runs them (the timing is asserted in tests/bench/test_dlp_bench.py)."""
    for hostile in HOSTILE_INPUTS:
        scan_content(hostile, patterns=[builtin(name)])


def test_rendering_groups_what_a_quantifier_follows() -> None:
    assert render(seq(text("ab"), repeat(text("cd"), 2, 3))) == "ab(?:cd){2,3}"
    assert render(text("a.b", ignore_case=True)) == r"[Aa]\.[Bb]"
