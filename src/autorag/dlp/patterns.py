"""What DLP looks for: the ten built-in patterns and admins' custom ones.

Every pattern runs on RE2 (``google-re2``), whose matching time is linear in the text:
no input makes a scan backtrack catastrophically, built-in or custom. A custom pattern
RE2 cannot compile (look-around, backreferences…) is refused with RE2's reason.

A pattern with a group named ``value`` redacts only that group (``it_vat_iva`` keeps
its "Partita IVA" label readable); otherwise the whole match. Built-ins may add a
validator (Luhn, mod-97, check characters) that turns a look-alike down.

The built-ins are written as syntax trees (``autorag.dlp.nodes``) so the streaming
redactor can tell when a growing text could still become one of them. Each is written
so that its language is *closed* once a match is complete or impossible: PEM bodies
cannot contain ``-----``, unbounded runs stop at the first character outside their set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import re2

from autorag.dlp import validators
from autorag.dlp.nodes import (
    END_OF_TEXT,
    WORD_BOUNDARY,
    Node,
    alt,
    any_number,
    capture,
    chars,
    optional,
    render,
    repeat,
    seq,
    some,
    text,
)
from autorag.dlp.validators import Validator
from autorag.errors import InvalidInput

VALUE_GROUP = "value"
MAX_CUSTOM_PATTERNS = 50
MAX_REGEX_CHARS = 2000
NAME_PATTERN = r"^[a-z][a-z0-9_]{1,39}$"
_NAME = re.compile(NAME_PATTERN)


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are raised to the caller, not logged by RE2
    return options


@dataclass(frozen=True, eq=False)
class Pattern:
    """One kind of secret: its name (the match ``type``) and its RE2 regex."""

    name: str
    regex: str
    builtin: bool = False
    description: str = ""
    validator: Validator | None = None
    tree: Node | None = None  # built-ins only: what the streaming redactor follows
    compiled: Any = field(init=False, repr=False)  # re2 has no type stubs
    value_group: int | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        compiled = re2.compile(self.regex, _options())
        object.__setattr__(self, "compiled", compiled)
        object.__setattr__(self, "value_group", compiled.groupindex.get(VALUE_GROUP))


# -- the built-ins --------------------------------------------------------------------
_DIGIT = chars("0-9")
_UPPER = chars("A-Z")
_SPACES = any_number(chars(" \t"))


def _email() -> Node:
    label = some(chars("A-Za-z0-9-"))
    return seq(
        some(chars("A-Za-z0-9._%+-")),
        text("@"),
        label,
        any_number(seq(text("."), label)),
        text("."),
        repeat(chars("A-Za-z"), 2, None),
    )


def _credit_card() -> Node:
    # 13 to 19 digits, single spaces or dashes allowed between any two of them.
    digit_run = repeat(seq(optional(chars(" -")), _DIGIT), 12, 18)
    return seq(WORD_BOUNDARY, _DIGIT, digit_run, WORD_BOUNDARY)


def _ssn() -> Node:
    return seq(
        WORD_BOUNDARY,
        repeat(_DIGIT, 3, 3),
        text("-"),
        repeat(_DIGIT, 2, 2),
        text("-"),
        repeat(_DIGIT, 4, 4),
        WORD_BOUNDARY,
    )


def _api_key() -> Node:
    return seq(WORD_BOUNDARY, text("sk-"), repeat(chars("A-Za-z0-9_-"), 20, None))


def _aws_key() -> Node:
    return seq(
        WORD_BOUNDARY,
        alt(text("AKIA"), text("ASIA")),
        repeat(chars("0-9A-Z"), 16, 16),
        WORD_BOUNDARY,
    )


def _private_key() -> Node:
    label = seq(any_number(seq(some(chars("A-Z0-9")), text(" "))), text("PRIVATE KEY"))
    marker_end = seq(optional(text(" BLOCK")), text("-----"))
    not_dash = chars("-", negated=True)
    # The body cannot contain "-----": the block ends at the first END marker, and a
    # block cut short (no END before the end of the text) is redacted to the end.
    body = any_number(alt(not_dash, seq(repeat(text("-"), 1, 4), not_dash)))
    cut_short = seq(repeat(text("-"), 0, 5), any_number(chars("A-Z ")), END_OF_TEXT)
    return seq(
        text("-----BEGIN "),
        label,
        marker_end,
        body,
        alt(seq(text("-----END "), label, marker_end), cut_short),
    )


def _it_vat_iva() -> Node:
    def word(value: str) -> Node:
        return text(value, ignore_case=True)

    gap = some(chars(" \t"))
    label = alt(
        seq(word("partita"), gap, word("iva")),
        seq(word("p"), optional(text(".")), _SPACES, word("iva")),
        seq(word("p."), _SPACES, word("i.")),
        seq(word("vat"), optional(seq(gap, alt(word("no"), word("number"), word("id"))))),
    )
    number = optional(seq(word("n"), optional(word("r")), optional(text(".")), _SPACES))
    separator = seq(optional(text(".")), _SPACES, optional(seq(chars(":#="), _SPACES)))
    value = seq(optional(seq(text("IT"), optional(text(" ")))), repeat(_DIGIT, 11, 11))
    return seq(
        WORD_BOUNDARY,
        label,
        separator,
        number,
        capture(VALUE_GROUP, value),
        WORD_BOUNDARY,
    )


def _it_codice_fiscale() -> Node:
    # Digit positions may hold letters L–V instead (omocodia: duplicates made unique).
    digit = chars("0-9LMNPQRSTUV")
    return seq(
        WORD_BOUNDARY,
        repeat(_UPPER, 6, 6),
        repeat(digit, 2, 2),
        chars("ABCDEHLMPRST"),  # month
        repeat(digit, 2, 2),
        _UPPER,
        repeat(digit, 3, 3),
        _UPPER,  # check character
        WORD_BOUNDARY,
    )


def _iban() -> Node:
    # Each repetition takes exactly one character (after at most one space): no two
    # ways to split a text, so even a backtracking engine would stay linear.
    return seq(
        WORD_BOUNDARY,
        repeat(_UPPER, 2, 2),
        repeat(_DIGIT, 2, 2),
        repeat(seq(optional(text(" ")), chars("A-Z0-9")), 11, 30),
        WORD_BOUNDARY,
    )


_EU_CALLING_CODES = (
    *("30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46", "47"),
    *("48", "49", "350", "351", "352", "353", "354", "355", "356", "357", "358", "359"),
    *("370", "371", "372", "373", "376", "377", "378", "380", "381", "382", "385", "386"),
    *("387", "389", "420", "421", "423"),
)


def _eu_phone() -> Node:
    separator = optional(chars(" .-"))
    international = seq(
        alt(text("+"), seq(WORD_BOUNDARY, text("00"))),
        alt(*(text(code) for code in sorted(_EU_CALLING_CODES, key=len, reverse=True))),
        repeat(seq(separator, _DIGIT), 6, 12),
        WORD_BOUNDARY,
    )
    italian_mobile = seq(
        WORD_BOUNDARY,
        text("3"),
        repeat(_DIGIT, 2, 2),
        separator,
        repeat(_DIGIT, 3, 3),
        separator,
        repeat(_DIGIT, 3, 4),
        WORD_BOUNDARY,
    )
    return alt(international, italian_mobile)


def _builtin(
    name: str, tree: Node, description: str, validator: Validator | None = None
) -> Pattern:
    return Pattern(name, render(tree), True, description, validator, tree)


BUILTINS: tuple[Pattern, ...] = (
    _builtin("email", _email(), "E-mail addresses"),
    _builtin(
        "credit_card",
        _credit_card(),
        "Payment card numbers (13–19 digits, spaces or dashes allowed, Luhn-checked)",
        validators.card_number,
    ),
    _builtin("ssn", _ssn(), "US Social Security numbers (123-45-6789)", validators.us_ssn),
    _builtin("api_key", _api_key(), "Secret API keys (sk-…)", validators.api_key),
    _builtin("aws_key", _aws_key(), "AWS access key ids (AKIA…, ASIA…)"),
    _builtin("private_key", _private_key(), "PEM private key blocks"),
    _builtin("it_vat_iva", _it_vat_iva(), "Italian VAT numbers after a label (Partita IVA)"),
    _builtin(
        "it_codice_fiscale",
        _it_codice_fiscale(),
        "Italian tax codes (16 characters, uppercase, check character verified)",
        validators.codice_fiscale,
    ),
    _builtin("iban", _iban(), "IBANs (country prefix, mod-97 checked)", validators.iban),
    _builtin("eu_phone", _eu_phone(), "Italian and EU phone numbers"),
)
BUILTIN_NAMES = frozenset(p.name for p in BUILTINS)
# Seeded disabled: phone numbers are too common in documents to redact without review.
DISABLED_BY_DEFAULT = frozenset({"eu_phone"})
DEFAULT_PATTERNS: tuple[Pattern, ...] = tuple(
    p for p in BUILTINS if p.name not in DISABLED_BY_DEFAULT
)


def builtin(name: str) -> Pattern:
    for pattern in BUILTINS:
        if pattern.name == name:
            return pattern
    raise KeyError(name)


# -- custom patterns ------------------------------------------------------------------
def validate_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid pattern name {name!r}: 2 to 40 characters, lowercase letters, digits "
            "and '_', starting with a letter",
            code="invalid_pattern_name",
        )
    return name


def compile_custom(name: str, regex: str, description: str = "") -> Pattern:
    """A custom pattern, refused with a clear reason when it cannot run in linear time."""
    validate_name(name)
    if not regex or len(regex) > MAX_REGEX_CHARS:
        raise InvalidInput(
            f"pattern {name!r}: the regex must be 1 to {MAX_REGEX_CHARS} characters",
            code="invalid_pattern",
        )
    try:
        pattern = Pattern(name, regex, False, description)
    except re2.error as exc:
        raise InvalidInput(
            f"pattern {name!r} cannot be used: {_reason(exc)}. Custom patterns run on RE2, "
            "which guarantees linear-time matching and so supports no look-around "
            "((?=…), (?<=…)) and no backreferences (\\1)",
            code="invalid_pattern",
        ) from None
    if pattern.compiled.fullmatch("") is not None:
        raise InvalidInput(
            f"pattern {name!r} matches empty text; it must match at least one character",
            code="invalid_pattern",
        )
    return pattern


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else "invalid regex"
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
