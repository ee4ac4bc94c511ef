"""Benchmark: a flood of parallel logins costs the server bounded memory (issue 15).

Argon2 takes 64 MiB per hash; before the bounded pool, 80 parallel logins cost about
1 GB. A real ``autorag serve`` on 127.0.0.1 gets ``LOGINS`` logins at once (wrong
passwords, from one thread and one loopback address each); the server's peak resident
memory (VmHWM) is read before and after. Goal: the flood adds at most ``GOAL_MIB`` (a
few hashes' worth), and the excess is turned away quickly (429) instead of queued. Run with
`pytest -m bench -s tests/bench/test_login_flood_bench.py`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from autorag.auth.service import create_user
from autorag.context import open_context
from tests.bench.serving import autorag_serve
from tests.workspaces import new_workspace

LOGINS = 80
GOAL_MIB = 300.0


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


@pytest.mark.bench
def test_a_login_flood_costs_bounded_memory(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path / "kb")
    context = open_context(workspace)
    create_user(context.catalog, "target", "quartz-meadow-lantern-58", "member")
    context.close()
    with autorag_serve(workspace, tmp_path / "serve.log") as served:
        url = served.url
        # One login first: argon2's first allocation is part of the baseline.
        body = {"username": "target", "password": "quartz-meadow-lantern-58"}
        assert httpx.post(f"{url}/api/auth/login", json=body, timeout=60).status_code == 200
        before = _peak_mib(served.process.pid)

        def attempt(n: int) -> int:
            # Each from its own loopback address, so that the per-address limit does not
            # turn the flood away first: the hashing pool must.
            transport = httpx.HTTPTransport(local_address=f"127.0.0.{10 + n}")
            wrong = {"username": f"user{n}", "password": f"wrong password {n}"}
            with httpx.Client(transport=transport, timeout=120) as client:
                return client.post(f"{url}/api/auth/login", json=wrong).status_code

        with ThreadPoolExecutor(LOGINS) as pool:
            codes = list(pool.map(attempt, range(LOGINS)))
        after = _peak_mib(served.process.pid)
    counts = {code: codes.count(code) for code in sorted(set(codes))}
    print(
        f"\n{LOGINS} parallel logins: answers {counts}; server peak memory "
        f"{before:.0f} MiB before, {after:.0f} MiB after (+{after - before:.0f} MiB)"
    )
    assert set(codes) <= {401, 429}
    assert after - before <= GOAL_MIB
