"""``autorag eval api``: the search endpoint on a real server, against the in-process search.

A BEIR corpus is indexed into a throwaway workspace (the same way ``autorag eval beir``
does), an admin and an API key are created, and ``autorag serve`` runs in a separate
process on a loopback port. Two measurements follow:

* overhead: every query searched in-process and through the endpoint, one after the
  other with one keep-alive client, both with the endpoint's request (k=10, hybrid, no
  filters); the difference of the medians is what HTTP, auth and serialisation add;
* load: N closed-loop clients (each a keep-alive ``httpx.AsyncClient``) cycle through
  the queries for D seconds, each sending its next search as soon as the last one is
  answered: the throughput the server sustains, latency percentiles and errors;
* paced load: the same N clients holding a fixed total rate (the goal's 40 searches/s).
  A closed loop with no pause keeps N requests in flight, so its mean latency is N over
  the throughput (Little's law: 500 ms at 40/s with 20 clients) whatever the goal says;
  the latency *at* a given rate needs the rate held. Latency is timed from each
  request's scheduled start, so a server falling behind shows up in it.

The server is stopped at the end whatever happens.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from autorag.auth.service import create_api_key, create_user
from autorag.context import AppContext
from autorag.errors import Conflict, InvalidInput, Unavailable
from autorag.eval.beir import BeirDataset
from autorag.eval.metrics import percentile
from autorag.eval.runner import beir_workspace, index_corpus
from autorag.ingest.pipeline import IngestOutcome
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.runtime import server_model_threads

# The goals ("Numbers"), reported as met or missed, never asserted here.
GOAL_OVERHEAD_P50_MS = 5.0
GOAL_THROUGHPUT_PER_S = 40.0  # also the default rate of the paced phase
GOAL_LOAD_P95_MS = 250.0

K = 10  # the endpoint's default, an interactive search
BENCH_USER = "api-bench"
WARMUP_QUERIES = 5  # per side, before timing: the first searches load the model
SERVER_START_TIMEOUT_S = 120.0
SERVER_STOP_TIMEOUT_S = 15.0
REQUEST_TIMEOUT_S = 30.0
MAX_REQUESTS = 100_000  # the load test's bound in count, whatever the duration
MAX_CLIENTS = 200
_LOG_TAIL_CHARS = 2000


@dataclass
class LatencyStats:
    count: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float


@dataclass
class OverheadResult:
    queries: int
    in_process: LatencyStats
    endpoint: LatencyStats
    overhead_p50_ms: float  # endpoint p50 − in-process p50: the figure the goal is about
    paired_overhead_p50_ms: float  # median over queries of (endpoint − in-process)
    server_search_p50_ms: float  # the server's own search time (timingsMs.total_ms)
    beyond_server_search_p50_ms: float  # median of (endpoint latency − server's search)


@dataclass
class LoadResult:
    clients: int
    target_rate_per_s: float | None  # None: closed loop, no pause between searches
    duration_s: float  # asked for
    elapsed_s: float  # first request sent to last answer received
    requests: int
    ok: int
    errors: int
    error_kinds: dict[str, int]
    throughput_per_s: float  # successful searches per second
    latency: LatencyStats  # successful searches only
    cpu: CpuUsage | None = None  # None where /proc is missing


@dataclass
class CpuUsage:
    """Where the machine's CPU went during a load test (in cores: CPU seconds per second)."""

    server_cpu_ms_per_search: float
    server_cores: float
    client_cores: float  # this process: the load generator
    other_cores: float  # everything else on the machine (other people's jobs, the OS)


@dataclass
class ServerBench:
    """What a benchmark against a real server ran on; its report's first fields."""

    dataset: str
    split: str
    documents: int
    queries: int
    chunks: int
    embedding_model: str
    cpus: int
    load_average_before: tuple[float, float, float]
    ingest_seconds: float
    server_command: list[str]


def server_bench(
    app: AppContext,
    dataset: BeirDataset,
    *,
    split: str,
    queries: int,
    load_average: tuple[float, float, float],
    ingest_seconds: float,
    server: Server,
) -> dict[str, Any]:
    """The ``ServerBench`` fields of a run, for a report's constructor."""
    return {
        "dataset": dataset.name,
        "split": split,
        "documents": len(dataset.corpus),
        "queries": queries,
        "chunks": app.catalog.chunk_count(app.info.id),
        "embedding_model": app.embedder.model_id,
        "cpus": _usable_cpus(),
        "load_average_before": load_average,
        "ingest_seconds": ingest_seconds,
        "server_command": server.command,
    }


@dataclass
class ApiBenchReport(ServerBench):
    overhead: OverheadResult
    load: LoadResult  # closed loop
    paced: LoadResult | None  # at a fixed rate (None: not run)
    goals: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Sample:
    """One request of the load test."""

    latency_ms: float
    error: str | None = None  # None: answered 200

    @property
    def ok(self) -> bool:
        return self.error is None


# -- pure parts -----------------------------------------------------------------------
def latency_stats(samples_ms: Sequence[float]) -> LatencyStats:
    """Percentiles (numpy's linear interpolation), mean and max; all 0 for no samples."""
    if not samples_ms:
        return LatencyStats(0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return LatencyStats(
        count=len(samples_ms),
        p50_ms=percentile(samples_ms, 50),
        p95_ms=percentile(samples_ms, 95),
        p99_ms=percentile(samples_ms, 99),
        mean_ms=sum(samples_ms) / len(samples_ms),
        max_ms=max(samples_ms),
    )


def summarize_overhead(
    in_process_ms: Sequence[float], endpoint_ms: Sequence[float], server_ms: Sequence[float]
) -> OverheadResult:
    """Paired timings, one entry per query in each sequence."""
    if not len(in_process_ms) == len(endpoint_ms) == len(server_ms) or not in_process_ms:
        raise InvalidInput("overhead needs the same, non-zero number of timings on each side")
    inside, outside = latency_stats(in_process_ms), latency_stats(endpoint_ms)
    paired = [e - i for e, i in zip(endpoint_ms, in_process_ms, strict=True)]
    beyond = [e - s for e, s in zip(endpoint_ms, server_ms, strict=True)]
    return OverheadResult(
        queries=len(in_process_ms),
        in_process=inside,
        endpoint=outside,
        overhead_p50_ms=outside.p50_ms - inside.p50_ms,
        paired_overhead_p50_ms=percentile(paired, 50),
        server_search_p50_ms=percentile(server_ms, 50),
        beyond_server_search_p50_ms=percentile(beyond, 50),
    )


def summarize_load(
    samples: Sequence[Sample],
    *,
    clients: int,
    duration_s: float,
    elapsed_s: float,
    rate: float | None = None,
) -> LoadResult:
    ok = [s.latency_ms for s in samples if s.ok]
    kinds = Counter(s.error for s in samples if s.error is not None)
    return LoadResult(
        clients=clients,
        target_rate_per_s=rate,
        duration_s=duration_s,
        elapsed_s=elapsed_s,
        requests=len(samples),
        ok=len(ok),
        errors=len(samples) - len(ok),
        error_kinds=dict(sorted(kinds.items())),
        throughput_per_s=len(ok) / elapsed_s if elapsed_s > 0 else 0.0,
        latency=latency_stats(ok),
    )


def check_goals(
    overhead: OverheadResult, load: LoadResult, paced: LoadResult | None = None
) -> dict[str, bool]:
    """The issue's numbers. The latency goal is judged at the paced rate when there is a
    paced run (see the module doc), else on the closed loop."""
    at_rate = paced or load
    rate = f"{at_rate.target_rate_per_s:g}/s" if at_rate.target_rate_per_s else "closed loop"
    runs = [load] if paced is None else [load, paced]
    return {
        f"overhead p50 ≤ {GOAL_OVERHEAD_P50_MS:g} ms": (
            overhead.overhead_p50_ms <= GOAL_OVERHEAD_P50_MS
        ),
        f"closed loop ≥ {GOAL_THROUGHPUT_PER_S:g}/s": (
            load.throughput_per_s >= GOAL_THROUGHPUT_PER_S
        ),
        f"p95 ≤ {GOAL_LOAD_P95_MS:g} ms ({rate})": (
            at_rate.ok > 0 and at_rate.latency.p95_ms <= GOAL_LOAD_P95_MS
        ),
        "no errors": all(run.ok > 0 and run.errors == 0 for run in runs),
    }


@dataclass(frozen=True)
class CpuTimes:
    server_s: float
    client_s: float
    machine_busy_s: float


def cpu_usage(before: CpuTimes, after: CpuTimes, elapsed_s: float, searches: int) -> CpuUsage:
    server = after.server_s - before.server_s
    client = after.client_s - before.client_s
    machine = after.machine_busy_s - before.machine_busy_s
    per_core = 1 / elapsed_s if elapsed_s > 0 else 0.0
    return CpuUsage(
        server_cpu_ms_per_search=server * 1000 / searches if searches else 0.0,
        server_cores=server * per_core,
        client_cores=client * per_core,
        other_cores=max(0.0, machine - server - client) * per_core,
    )


def scheduled_at(client: int, n: int, clients: int, rate: float) -> float:
    """When (seconds from the start) client ``client`` sends its ``n``-th paced search.

    Clients take turns: together they send one search every 1/rate seconds, each one
    every clients/rate seconds.
    """
    return (client + n * clients) / rate


class QueryCycle:
    """Hands the queries out round-robin to any number of clients, ``limit`` in all.

    Shared by the load test's clients on one event loop (no locking needed): together
    they go through the whole set before any query repeats.
    """

    def __init__(self, queries: Sequence[str], limit: int | None = None) -> None:
        if not queries:
            raise InvalidInput("no queries to cycle through")
        if limit is not None and limit < 0:
            raise InvalidInput(f"limit must be >= 0, got {limit}")
        self._queries = list(queries)
        self._limit = limit
        self.issued = 0

    def next(self) -> str | None:
        """The next query, or None once ``limit`` queries have been handed out."""
        if self._limit is not None and self.issued >= self._limit:
            return None
        query = self._queries[self.issued % len(self._queries)]
        self.issued += 1
        return query


# -- the benchmark --------------------------------------------------------------------
def run_api_bench(
    dataset: BeirDataset,
    *,
    split: str,
    clients: int = 20,
    duration_s: float = 20.0,
    rate: float | None = GOAL_THROUGHPUT_PER_S,
    workdir: Path | None = None,
    on_ingest: Callable[[IngestOutcome], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> ApiBenchReport:
    if not 1 <= clients <= MAX_CLIENTS:
        raise InvalidInput(f"clients must be within 1..{MAX_CLIENTS}, got {clients}")
    if duration_s <= 0:
        raise InvalidInput(f"duration must be positive, got {duration_s}")
    if rate is not None and rate <= 0:
        raise InvalidInput(f"rate must be positive, got {rate}")
    queries = list(dataset.queries.values())
    if not queries:
        raise InvalidInput(f"{dataset.name} has no queries in split {split!r}")
    phase = on_phase or (lambda _name: None)
    load_average = os.getloadavg()
    # The server gets this environment, as `autorag serve` started from this shell would;
    # not the one below: its OMP_NUM_THREADS, inherited at start-up, would also make
    # numpy's BLAS single-threaded in the server, which a plain `autorag serve` is not.
    server_env = dict(os.environ)
    # The in-process searches run with the server's model threads (set before the
    # model is loaded here), so that the overhead compares like with like.
    with server_model_threads(), beir_workspace(dataset, workdir=workdir) as app:
        ingest_seconds = index_corpus(app, dataset, on_ingest)
        key = _admin_key(app)
        headers = {"Authorization": f"Bearer {key}"}
        path = f"/api/workspaces/{app.info.name}/search"
        phase("starting the server")
        with running_server(app.workspace.root, env=server_env) as server:
            phase("measuring overhead (sequential)")
            with httpx.Client(
                base_url=server.base_url, headers=headers, timeout=REQUEST_TIMEOUT_S
            ) as client:
                overhead = measure_overhead(app, client, path, queries)
            phase(f"closed-loop load ({clients} clients, {duration_s:g} s)")
            target = (server.base_url, path, headers, queries)
            load = asyncio.run(
                run_load(*target, clients=clients, duration_s=duration_s, server_pid=server.pid)
            )
            paced = None
            if rate is not None:
                phase(f"paced load ({clients} clients, {rate:g}/s, {duration_s:g} s)")
                paced = asyncio.run(
                    run_load(
                        *target,
                        clients=clients,
                        duration_s=duration_s,
                        rate=rate,
                        server_pid=server.pid,
                    )
                )
        return ApiBenchReport(
            **server_bench(
                app,
                dataset,
                split=split,
                queries=len(queries),
                load_average=load_average,
                ingest_seconds=ingest_seconds,
                server=server,
            ),
            overhead=overhead,
            load=load,
            paced=paced,
            goals=check_goals(overhead, load, paced),
        )


def _admin_key(app: AppContext) -> str:
    """A fresh API key of the benchmark's admin (created unless a kept workspace has it)."""
    with suppress(Conflict):  # a kept workspace from an earlier run has it
        create_user(app.catalog, BENCH_USER, secrets.token_urlsafe(24), "admin")
    _info, key = create_api_key(app.catalog, BENCH_USER, f"api-bench-{time.time_ns()}", [])
    return key


def endpoint_request(query: str) -> SearchRequest:
    """The request the search endpoint builds for ``{"query": query}``."""
    return SearchRequest(query, k=K, filters=build_filters([], None, None), mode="hybrid")


def measure_overhead(
    app: AppContext, client: httpx.Client, path: str, queries: Sequence[str]
) -> OverheadResult:
    """Each query in-process then over HTTP (alternating which goes first), sequentially."""
    for query in queries[:WARMUP_QUERIES]:
        app.searcher.search(endpoint_request(query))
        _post(client, path, query)
    inside: list[float] = []
    outside: list[float] = []
    server: list[float] = []
    for index, query in enumerate(queries):
        if index % 2:
            endpoint_ms, server_ms = _post(client, path, query)
            inside.append(_in_process(app, query))
        else:
            inside.append(_in_process(app, query))
            endpoint_ms, server_ms = _post(client, path, query)
        outside.append(endpoint_ms)
        server.append(server_ms)
    return summarize_overhead(inside, outside, server)


def _in_process(app: AppContext, query: str) -> float:
    started = time.perf_counter()
    app.searcher.search(endpoint_request(query))
    return (time.perf_counter() - started) * 1000


def _post(client: httpx.Client, path: str, query: str) -> tuple[float, float]:
    """Latency of one search over HTTP and the server's own search time, in ms."""
    started = time.perf_counter()
    response = client.post(path, json={"query": query, "k": K})
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise Unavailable(f"search endpoint answered {response.status_code}: {response.text}")
    return elapsed, float(response.json()["timingsMs"]["total_ms"])


async def run_load(
    base_url: str,
    path: str,
    headers: dict[str, str],
    queries: Sequence[str],
    *,
    clients: int,
    duration_s: float,
    rate: float | None = None,
    server_pid: int | None = None,
) -> LoadResult:
    """``clients`` loops, each on its own keep-alive connection, for ``duration_s``.

    Without ``rate`` a client sends its next search as soon as the previous one is
    answered; with it, at its turn on the schedule (or at once when running late). It
    stops when the time is up or ``MAX_REQUESTS`` were sent; each request has a timeout.
    """
    cycle = QueryCycle(queries, limit=MAX_REQUESTS)
    samples: list[Sample] = []
    async with AsyncExitStack() as stack:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        connections = [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S, limits=limits
                )
            )
            for _ in range(clients)
        ]
        # Set up before the clock starts: creating a client and opening its connection
        # cost the load generator tens of ms each, which no search should be charged.
        await asyncio.gather(*(client.get("/healthz") for client in connections))
        cpu_before = _cpu_times(server_pid)
        begin = time.perf_counter()
        deadline = begin + duration_s

        async def one_client(index: int, client: httpx.AsyncClient) -> None:
            for n in itertools.count():
                if rate is None:
                    started = time.perf_counter()
                else:
                    started = begin + scheduled_at(index, n, clients, rate)
                if started >= deadline or (query := cycle.next()) is None:
                    return
                await asyncio.sleep(max(0.0, started - time.perf_counter()))
                error: str | None = None
                try:
                    response = await client.post(path, json={"query": query, "k": K})
                    if response.status_code != 200:
                        error = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    error = type(exc).__name__
                samples.append(Sample((time.perf_counter() - started) * 1000, error))

        await asyncio.wait_for(
            asyncio.gather(*(one_client(i, c) for i, c in enumerate(connections))),
            timeout=duration_s + REQUEST_TIMEOUT_S + 10,
        )
        elapsed = time.perf_counter() - begin
        cpu_after = _cpu_times(server_pid)
    result = summarize_load(
        samples, clients=clients, duration_s=duration_s, elapsed_s=elapsed, rate=rate
    )
    if cpu_before is not None and cpu_after is not None:
        result.cpu = cpu_usage(cpu_before, cpu_after, elapsed, result.ok)
    return result


# -- the server -----------------------------------------------------------------------
@dataclass(frozen=True)
class Server:
    base_url: str
    command: list[str]
    pid: int


@contextmanager
def running_server(
    root: Path, *, port: int | None = None, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """``autorag -w root serve`` in its own process on loopback, up until the block ends."""
    port = port or free_port()
    command = [sys.executable, "-m", "autorag", "-w", str(root), "serve", "--port", str(port)]
    log_path = root / ".autorag" / "api-bench-server.log"
    base_url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
        )
        try:
            _wait_healthy(process, base_url, log_path)
            yield Server(base_url, command, process.pid)
        finally:
            _stop(process)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_healthy(process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    with httpx.Client(base_url=base_url, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise Unavailable(
                    f"the server exited with {process.returncode}:\n{_tail(log_path)}"
                )
            try:
                if client.get("/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass  # not listening yet
            time.sleep(0.2)
    raise Unavailable(
        f"the server did not answer /healthz within {SERVER_START_TIMEOUT_S:g} s:\n"
        f"{_tail(log_path)}"
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()  # uvicorn shuts down gracefully on SIGTERM
    try:
        process.wait(SERVER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _tail(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")[-_LOG_TAIL_CHARS:]
    except OSError:
        return "(no server log)"


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _cpu_times(pid: int | None) -> CpuTimes | None:
    """CPU seconds so far of process ``pid``, of this process and of the whole machine."""
    if pid is None:
        return None
    try:
        tick = os.sysconf("SC_CLK_TCK")
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        server = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        jiffies = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = jiffies[3] + jiffies[4]  # idle, iowait; guest time is already in user
    busy = sum(jiffies[:8]) - idle
    return CpuTimes(server, time.process_time(), busy / tick)
