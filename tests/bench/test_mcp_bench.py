"""Benchmark: a search as an MCP tool call over streamable HTTP (``/mcp``) beside the same
search through the REST API, on one real ``autorag serve`` over the sample corpus.

The same queries, one after another, ``CALLS`` of each kind after a warm-up; what is
reported is the latency the client sees (p50, p95). The MCP client is the official SDK
(``ClientSession`` over ``streamable_http_client``), one session for all its calls. Run
with `pytest -m bench -s tests/bench/test_mcp_bench.py`.
"""

from __future__ import annotations

import time
from pathlib import Path
from statistics import median

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from autorag.auth.service import create_api_key, create_user
from autorag.context import open_context
from autorag.ingest.minsync import refresh
from tests.bench.serving import autorag_serve
from tests.samples import write_corpus
from tests.workspaces import new_workspace

CALLS = 300
WARM_UP = 20
QUERIES = ["refund window", "courier service", "headset launch", "gift cards"]


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def _rest(url: str, key: str, calls: int) -> list[float]:
    took = []
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for i in range(calls):
            body = {"query": QUERIES[i % len(QUERIES)], "k": 8}
            start = time.perf_counter()
            response = client.post(url + "/api/workspaces/default/search", json=body)
            took.append(time.perf_counter() - start)
            assert response.status_code == 200, response.text
    return took


async def _mcp(url: str, key: str, calls: int) -> list[float]:
    took = []
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url + "/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i in range(calls):
            arguments = {"query": QUERIES[i % len(QUERIES)], "k": 8}
            start = time.perf_counter()
            result = await session.call_tool("search", arguments)
            took.append(time.perf_counter() - start)
            assert not result.is_error, result.content
    return took


@pytest.mark.bench
def test_search_over_mcp_beside_rest(tmp_path: Path) -> None:
    write_corpus(tmp_path / "docs")
    workspace = new_workspace(tmp_path / "kb", search_paths=[str(tmp_path / "docs")])
    context = open_context(workspace)
    try:
        refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
        create_user(context.catalog, "root", "a long enough password", "admin")
        _, key = create_api_key(context.catalog, "root", "bench", [])
    finally:
        context.close()
    with autorag_serve(workspace, tmp_path / "serve.log") as served:
        _rest(served.url, key, WARM_UP)
        anyio.run(_mcp, served.url, key, WARM_UP)
        rest = _rest(served.url, key, CALLS)
        mcp = anyio.run(_mcp, served.url, key, CALLS)
    print(f"\nREST search: {_percentiles(rest)} ({CALLS} calls)")
    print(f"MCP search:  {_percentiles(mcp)} ({CALLS} calls)")
