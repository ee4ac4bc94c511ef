"""Checks a regex cannot make: check digits and checksums of the built-in patterns.

A validator gets the matched value and answers how many of its leading characters are
the secret (usually all of them), or None when the value is not one after all.
"""

from __future__ import annotations

from collections.abc import Callable

Validator = Callable[[str], int | None]

# IBAN length per country (SWIFT IBAN registry); a known country must have exactly this.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
    "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
IBAN_MIN, IBAN_MAX = 15, 34

# Codice fiscale check character: values of characters in odd (1st, 3rd…) positions.
_CF_ODD = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20,
         11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23],
        strict=True,
    )
)  # fmt: skip


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a string of digits (card numbers)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def mod97_ok(iban: str) -> bool:
    """ISO 13616: the IBAN with its first four characters moved to the end, letters as
    numbers (A=10…Z=35), is 1 modulo 97."""
    rearranged = iban[4:] + iban[:4]
    remainder = 0
    for char in rearranged:
        value = int(char, 36)  # digits and letters alike
        remainder = (remainder * (100 if value > 9 else 10) + value) % 97
    return remainder == 1


def card_number(value: str) -> int | None:
    """13–19 digits from a card network's range (2–6) passing Luhn."""
    digits = "".join(c for c in value if c.isdigit())
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        return None
    return len(value) if luhn_ok(digits) else None


def us_ssn(value: str) -> int | None:
    """Not an area, group or serial the SSA never assigns (000, 666, 9xx; 00; 0000)."""
    area, group, serial = value.split("-")
    if area in ("000", "666") or area.startswith("9") or group == "00" or serial == "0000":
        return None
    return len(value)


def api_key(value: str) -> int | None:
    """A generated key mixes digits in; ``sk-`` followed by plain words does not."""
    body = value[3:]
    return len(value) if any(c.isdigit() for c in body) else None


def codice_fiscale(value: str) -> int | None:
    """The 16th character is the check character of the first 15."""
    total = sum(
        _CF_ODD[char] if index % 2 == 0 else _cf_even(char) for index, char in enumerate(value[:15])
    )
    return len(value) if chr(ord("A") + total % 26) == value[15] else None


def _cf_even(char: str) -> int:
    return ord(char) - ord("A") if char.isalpha() else int(char)


def iban(value: str) -> int | None:
    """Mod-97 valid; a known country's exact length (longer text after it is not part
    of it: groups of capitals may follow an IBAN written with spaces)."""
    compact = value.replace(" ", "")
    length = IBAN_LENGTHS.get(compact[:2])
    if length is None:
        length = len(compact) if IBAN_MIN <= len(compact) <= IBAN_MAX else 0
    if length == 0 or len(compact) < length or not mod97_ok(compact[:length]):
        return None
    return _span_of_characters(value, length)


def _span_of_characters(value: str, count: int) -> int:
    """How many characters of ``value`` hold its first ``count`` non-space ones."""
    seen = 0
    for index, char in enumerate(value):
        if char != " ":
            seen += 1
            if seen == count:
                return index + 1
    return len(value)
