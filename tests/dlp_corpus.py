"""A labelled corpus for the DLP built-ins: secrets in context, and near misses.

``POSITIVES`` maps each pattern to secrets; ``CONTEXTS`` are the surroundings each is
put in (prose, JSON, a URL query, a line of its own, a table cell). ``NEGATIVES`` are
texts that look close to a secret but must not match anything. ``samples()`` yields
every (text, expected spans) pair the precision/recall test and the streaming tests
use.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

RSA_KEY = """-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun
VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK
-----END RSA PRIVATE KEY-----"""
PKCS8_KEY = """-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj
-----END PRIVATE KEY-----"""
ENCRYPTED_KEY = """-----BEGIN EC PRIVATE KEY-----
Proc-Type: 4,ENCRYPTED
DEK-Info: AES-128-CBC,2B2E3F4A5B6C7D8E9F0A1B2C3D4E5F60

MHcCAQEEIBKZx2T2b0I1hP4kSx7nH2oK9jE0uQ1vL8mN3pR6sT9uoAoGCCqGSM49
-----END EC PRIVATE KEY-----"""
OPENSSH_KEY = """-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
-----END OPENSSH PRIVATE KEY-----"""

POSITIVES: dict[str, list[str]] = {
    "email": [
        "mario.rossi@example.com",
        "j.doe+news@mail.example.co.uk",
        "ADMIN@EXAMPLE.ORG",
        "first_last-99@sub.domain.io",
        "support@acme-corp.it",
    ],
    "credit_card": [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "5555 5555 5555 4444",
        "5105105105105100",
        "3782 822463 10005",
        "378282246310005",
        "6011 1111 1111 1117",
        "6011000990139424",
        "3530111333300000",
        "4222222222222",
        "2223003122003222",
    ],
    "ssn": ["123-45-6789", "078-05-1120", "219-09-9999", "536-22-8726"],
    "api_key": [
        "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
        "sk-ant-api03-Xy7Kq2Lm9Np4Rs1Tu6Vw3Yz8Ab5Cd0Ef",
        "sk-1234567890abcdefABCDEF1234",
        "sk-live_9aK3mZ8qW2eR5tY7uI1oP4sD6",
    ],
    "aws_key": ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A", "AKIA2E0A8F3B244C9986"],
    "private_key": [RSA_KEY, PKCS8_KEY, ENCRYPTED_KEY, OPENSSH_KEY],
    "it_codice_fiscale": [
        "RSSMRA80A01H501U",
        "VRDGPP85T10F205R",
        "BNCLRA72E41L219D",
        "RSSMRA80A01H50MM",  # omocodia: a digit position holding a letter
    ],
    "iban": [
        "IT60X0542811101000000123456",
        "IT60 X054 2811 1010 0000 0123 456",
        "GB82WEST12345698765432",
        "GB82 WEST 1234 5698 7654 32",
        "DE89370400440532013000",
        "DE89 3704 0044 0532 0130 00",
        "FR1420041010050500013M02606",
        "ES9121000418450200051332",
        "NL91ABNA0417164300",
        "BE68539007547034",
        "CH9300762011623852957",
    ],
    "eu_phone": [
        "+39 02 1234 5678",
        "+39 333 123 4567",
        "0039 06 98765432",
        "+49 30 1234567",
        "+33 1 23 45 67 89",
        "333 1234567",
    ],
}

# Label-anchored: the label stays readable, only the number is the secret.
VAT_SAMPLES = [
    ("Partita IVA: 01234567890", "01234567890"),
    ("P.IVA 12345678903", "12345678903"),
    ("P. IVA n. 07643520567", "07643520567"),
    ("VAT IT01234567890", "IT01234567890"),
    ("partita iva 00743110157", "00743110157"),
    ("P.I. 02468013579", "02468013579"),
    ("VAT number: IT 09876543210", "IT 09876543210"),
]

CONTEXTS = [
    "{}",
    "Contact: {}.",
    "Please use {} for the payment, thanks!",
    '{{"value": "{}", "ok": true}}',
    "https://api.example.test/v1/items?token={}&page=2",
    "first line\n{}\nthird line",
    "| field | {} |",
]

NEGATIVES = [
    # e-mail look-alikes
    "Write to user@localhost or to name at example dot com.",
    "Follow @handle and ping a@b for details; x@y.c is not a domain.",
    # card numbers that fail Luhn or a network's range, and long digit runs
    "Card 4111 1111 1111 1112 was declined.",
    "Reference 1234 5678 9012 3456 in the ledger.",
    "Dummy 0000 0000 0000 0000 in the form.",
    "Tracking 1111111111111111111111 (22 digits).",
    "ISBN 978-3-16-148410-0 is a book.",
    "Order 12345678 shipped.",
    # SSNs the SSA never issues, dates, US phone numbers
    "Numbers 000-12-3456, 666-12-3456, 900-12-3456, 123-00-4567 and 123-45-0000.",
    "Meeting on 2024-01-15 and call 415-555-2671.",
    # key-like words
    "We use sk-learn-is-a-python-library-name and the task-1234567890abcdefghij job.",
    "A short sk-short1 token.",
    "AKIA1234 is too short; XAKIAIOSFODNN7EXAMPLE and akiaiosfodnn7example are not keys.",
    "AKIAIOSFODNN7EXAMPLE1 has one character too many.",
    # PEM blocks that are not private keys
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1L\n"
    "-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n"
    "-----END CERTIFICATE-----",
    "The RSA PRIVATE KEY is kept in the vault (BEGIN and END markers omitted).",
    # VAT numbers without a label, or of the wrong length
    "Invoice 01234567890 is due.",
    "Partita IVA: 0123456789 (ten digits) and P.IVA 012345678901 (twelve).",
    "IVA 22% applies; the private 01234567890 reference is internal.",
    # codici fiscali with a wrong check character, lowercase, bad month, wrong length
    "RSSMRA80A01H501X, rssmra80a01h501u, RSSMRA80Z01H501U, RSSMRA80A01H501 and XRSSMRA80A01H501U.",
    # corrupted IBANs
    "IT60X0542811101000000123457 and GB82WEST12345698765431.",
    "DE89370400440532013001 or XX00 0000 0000 0000 0000.",
    "IT60X05428111010000001234 is too short.",
    # phone look-alikes (non-EU, too short)
    "Call +1 415 555 2671 or +12 345; extension 2024.",
    "Invoice no. 3012345678 dated March.",  # an Italian mobile number to eu_phone
    # plain prose
    "The meeting is at 10:30 on 2024-05-01 in room 42; bring 3 copies.",
    "Version 3.12.1 fixed issue #4521 (see PR 1234).",
    "Temperature 36.6, pressure 120/80, heart rate 72 bpm.",
]


@dataclass(frozen=True)
class Sample:
    text: str
    expected: frozenset[tuple[str, int, int]]  # (type, start, end) of every secret


def samples() -> Iterator[Sample]:
    for pattern_type, secrets in POSITIVES.items():
        for secret in secrets:
            for context in CONTEXTS:
                text = context.format(secret)
                start = text.index(secret)
                yield Sample(text, frozenset({(pattern_type, start, start + len(secret))}))
    for labelled, value in VAT_SAMPLES:
        for context in CONTEXTS:
            text = context.format(labelled)
            start = text.index(value, text.index(labelled))
            yield Sample(text, frozenset({("it_vat_iva", start, start + len(value))}))
    for text in NEGATIVES:
        yield Sample(text, frozenset())


def secrets_of(sample: Sample) -> list[str]:
    return [sample.text[start:end] for _, start, end in sample.expected]
