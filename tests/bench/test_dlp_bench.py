"""Benchmarks of DLP (run with `pytest -m bench -s tests/bench/test_dlp_bench.py`).

Goals from the issue: built-in scanning ≥ 20 MB/s of plain text on one core; hostile
inputs finish at once (no catastrophic backtracking); streaming holds back nothing
outside an open candidate match.
"""

from __future__ import annotations

import random
import time

import pytest

from autorag.dlp import BUILTINS, DEFAULT_PATTERNS, StreamingRedactor, compile_custom, scan_content
from autorag.dlp.patterns import builtin
from tests.unit.test_dlp_patterns import BUILTIN_NAMES, HOSTILE_INPUTS

SCAN_GOAL_MB_S = 20.0
HOSTILE_BUDGET_S = 0.5  # per pattern and 100 kB input; a backtracking blow-up takes hours
WORDS = (
    *("the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by"),
    *("refund", "policy", "customer", "order", "shipping", "warranty", "invoice", "payment"),
    *("Rome", "Milan", "Europe", "2024", "42", "3.5", "(see", "section", "4)", "—", "é", "ü"),
)


def _prose(size: int, vocabulary: tuple[str, ...] = WORDS) -> str:
    rng = random.Random(7)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(vocabulary)
        words.append(word + (".\n" if rng.random() < 0.05 else " "))
        length += len(words[-1])
    return "".join(words)


@pytest.mark.bench
def test_builtin_scanning_throughput() -> None:
    text = _prose(8 * 1024 * 1024)
    scan_content(text[:10_000])  # warm up
    started = time.perf_counter()
    result = scan_content(text, patterns=BUILTINS)
    elapsed = time.perf_counter() - started
    rate = len(text.encode()) / elapsed / 1e6
    print(
        f"\nbuilt-in scan: {rate:.0f} MB/s over {len(text) / 1e6:.1f} MB (goal ≥ {SCAN_GOAL_MB_S})"
    )
    assert not result.has_match
    assert rate >= SCAN_GOAL_MB_S


@pytest.mark.bench
@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_hostile_inputs_finish_at_once(name: str) -> None:
    pattern = builtin(name)
    worst = 0.0
    for hostile in HOSTILE_INPUTS:
        started = time.perf_counter()
        scan_content(hostile, patterns=[pattern])
        worst = max(worst, time.perf_counter() - started)
    print(f"\n{name}: worst hostile 100 kB input {worst * 1000:.1f} ms")
    assert worst < HOSTILE_BUDGET_S


@pytest.mark.bench
def test_classic_redos_patterns_run_linear() -> None:
    hostile = "a" * 100_000 + "!"
    for regex in (r"(a+)+$", r"(a|aa)+$", r"(a*)*b", r"(.*a){20}"):
        started = time.perf_counter()
        scan_content(hostile, patterns=[compile_custom("redos", regex)])
        elapsed = time.perf_counter() - started
        print(f"\n{regex}: {elapsed * 1000:.1f} ms on 100 kB")
        assert elapsed < HOSTILE_BUDGET_S


@pytest.mark.bench
def test_streaming_cost_and_hold_back() -> None:
    """Prose in 4-character tokens: the cost per token, and how much is ever held back
    (at most the word being written: it could still become an e-mail address). Numbers
    are left out: digits and spaces in a row could still become a card number."""
    text = _prose(200_000, tuple(w for w in WORDS if not any(c.isdigit() for c in w)))
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)]
    redactor = StreamingRedactor(DEFAULT_PATTERNS)
    received = emitted = 0
    held: list[int] = []
    started = time.perf_counter()
    for token in tokens:
        received += len(token)
        emitted += len(redactor.feed(token))
        held.append(received - emitted)
    emitted += len(redactor.flush())
    elapsed = time.perf_counter() - started
    longest_word = max(len(w) for w in text.split())
    print(
        f"\nstreaming: {elapsed / len(tokens) * 1e6:.0f} µs per token; held back at most "
        f"{max(held)} characters, {sum(held) / len(held):.1f} on average "
        f"(longest word {longest_word})"
    )
    assert emitted == len(text)
    assert max(held) <= longest_word + 4
    assert elapsed / len(tokens) < 0.005
