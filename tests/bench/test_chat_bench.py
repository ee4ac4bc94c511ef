"""Benchmark: the agent chat on SciFact (`autorag eval chat`), the issue's numbers.

Goals: orchestration overhead per iteration ≤ 10 ms (model time excluded); with the
extractive provider, time to the first token ≤ 300 ms p50 through the HTTP API. A
reduced run (30 questions a side; `autorag eval chat` defaults to 100). Run with
`pytest -m bench -s tests/bench/test_chat_bench.py`; skipped without
../shared/data/scifact.

As in test_api_bench, the embedding cache starts as a copy of the user's (never written
to), so indexing SciFact takes seconds; the answers get fresh caches of their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.test_api_bench import SCIFACT, _listening, _seed_cache

QUESTIONS = 30


@pytest.mark.bench
@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"no SciFact at {SCIFACT}")
def test_chat_on_scifact(tmp_path: Path) -> None:
    _seed_cache(tmp_path / "cache")
    env = {**os.environ, "AUTORAG_EMBEDDING__CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [
            *(sys.executable, "-m", "autorag", "eval", "chat", str(SCIFACT)),
            *("--queries", str(QUESTIONS), "--json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    inside, http = report["in_process"], report["http"]

    def phases(p50: dict[str, float]) -> str:
        return ", ".join(f"{name} {ms:.1f}" for name, ms in p50.items())

    print(
        f"\nSciFact chat, extractive ({report['chunks']} chunks, {report['cpus']} CPUs, load "
        f"average {report['load_average_before'][0]:.2f} before), {report['queries']} questions\n"
        f"  in-process: overhead per iteration p50 "
        f"{inside['overhead_per_iteration']['p50_ms']:.2f} ms (p95 "
        f"{inside['overhead_per_iteration']['p95_ms']:.2f}); first token p50 "
        f"{inside['first_token']['p50_ms']:.0f} ms; answer p50 {inside['answer']['p50_ms']:.0f} "
        f"ms; {inside['errors']} errors\n"
        f"  HTTP: first token p50 {http['first_token']['p50_ms']:.0f} ms (p95 "
        f"{http['first_token']['p95_ms']:.0f}); done p50 {http['done']['p50_ms']:.0f} ms; "
        f"{http['errors']} errors\n"
        f"  phases p50 ms, in-process: {phases(inside['phases_p50_ms'])}\n"
        f"  phases p50 ms, HTTP: {phases(http['phases_p50_ms'])}\n"
        f"  goals: {report['goals']}"
    )
    port = int(report["server_command"][-1])
    assert not _listening(port), "the server outlived the benchmark"
    assert report["chunks"] > 10_000 and report["queries"] == QUESTIONS
    assert inside["answers"] == http["requests"] == QUESTIONS
    assert inside["iterations"] == {"2": QUESTIONS}  # search, then the extractive answer
    missed = [goal for goal, met in report["goals"].items() if not met]
    assert not missed, f"missed: {missed}"
