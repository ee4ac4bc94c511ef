"""Benchmark: two ``autorag worker`` processes on one PostgreSQL ingest ≥ 1.7× the chunks/s
of one (issue 7: embedding-bound work split across processes).

Run with ``pytest -m bench -s tests/bench/test_worker_bench.py`` (never in the normal
suite). Needs at least 2 usable CPUs, else it skips.

What it measures: a generated corpus of English-like markdown and text documents
(deterministic, ``AUTORAG_BENCH_DOCS`` of them, default 400: 2.1 MB, 3,049 chunks) is
queued as uploads, exactly as the HTTP upload route stores them, into a fresh PostgreSQL
database with a pgvector workspace, while no worker runs: queueing parses and embeds
nothing. Then N real ``python -m autorag worker`` processes are started on it and
chunks/s is the corpus's chunks over the time until the last job has finished.

The setup that makes the comparison fair on a small machine: each measured worker
process is pinned to a CPU of its own (``sched_setaffinity``) with one model thread
(``OMP_NUM_THREADS=1`` and friends) and ``--workers 1``; the baseline is one such
process, the measured case two. PostgreSQL and this test process are not pinned. As
context only, one unpinned worker process is also run with ``autorag worker``'s default
threading (``server.workers`` job threads, one model thread per call) and with one job
thread whose torch uses every CPU (``OMP_NUM_THREADS=<cpus>``); ``AUTORAG_BENCH_CONTEXT=0``
leaves those two out. The persistent embedding cache is off in every case.

Start-up (Python imports, torch and the model load, which happen on a worker's first
job) is not counted, and nothing is subtracted: one tiny warm-up upload per job thread
is queued ahead of the corpus, and the clock starts when the first warm-up job has
finished (from the jobs table's timestamps), so a second worker that becomes ready
later is charged for its lateness. The time from spawning the processes is printed
beside it. Each case gets a fresh database and workspace, so each ingests the same work
from scratch; afterwards every job must be ``done`` after exactly one claim and the
vector table must hold exactly one row per chunk.

A second table shows where the CPU time of the timed window went (the worker processes,
the PostgreSQL server, the rest of the machine, idle), read from /proc: a run during
which other programs took more than a tenth of the CPUs says so, and its numbers are
not worth quoting.

Takes about 5 minutes on 2 cores (the pinned baseline alone about 100 s);
``AUTORAG_BENCH_DOCS=20`` is a quick smoke run (whose numbers mean nothing);
``AUTORAG_BENCH_CASE_TIMEOUT_S`` (default 1800) bounds each case.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text

from autorag.context import AppContext, open_context
from autorag.ingest.chunker import chunk_document
from autorag.ingest.parsers import parse_file
from autorag.ingest.uploads import ReceivedFile, store_upload
from autorag.store.catalog import queue
from autorag.store.catalog.models import ChunkRow, DocumentRow, JobRow
from autorag.workspace import Workspace, init_workspace
from tests.postgres import PostgresTestServer

pytestmark = pytest.mark.bench

DOCS = int(os.environ.get("AUTORAG_BENCH_DOCS", 400))
CONTEXT_CASES = os.environ.get("AUTORAG_BENCH_CONTEXT", "1") != "0"
CASE_TIMEOUT_S = float(os.environ.get("AUTORAG_BENCH_CASE_TIMEOUT_S", 1800))
GOAL_SPEEDUP = 1.7
SEED = 20240607
POLL_S = 0.25
STOP_WAIT_S = 30.0
BUSY_MACHINE_SHARE = 0.1  # other programs' CPU share that makes a run's numbers suspect
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_PR_SET_PDEATHSIG = 1


# -- the corpus -------------------------------------------------------------------------
def _words(text: str, separator: str | None = None) -> tuple[str, ...]:
    return tuple(text.split(separator))


_NOUNS = _words(
    "harbour committee report budget engine river bridge council warehouse schedule "
    "contract survey station ferry cargo timber orchard village school library market "
    "pipeline inspector tenant invoice ledger furnace turbine reservoir railway signal "
    "district archive manuscript garden mill quarry lantern harvest storm coastline "
    "freight tariff clinic patient nurse winter summer mountain valley road highway "
    "factory worker union policy audit meeting proposal customer supplier warranty"
)
_ADJECTIVES = _words(
    "annual northern quiet heavy early late careful small large public private local "
    "regional narrow broad seasonal modest reliable damaged temporary permanent coastal "
    "rural urban detailed brief formal informal recent former standard unusual steady"
)
_VERBS = _words(
    "reviewed approved delayed inspected repaired expanded reduced described recorded "
    "replaced questioned confirmed measured shipped ordered rejected extended cleared "
    "supported planned tested moved finished opened closed funded surveyed estimated"
)
_ADVERBS = _words(
    "quickly slowly carefully finally recently again quietly openly briefly largely "
    "mostly partly nearly twice already formally"
)
_PREPOSITIONS = _words("near beside across along behind before after during under over")
_NAMES = _words(
    "Marta Okafor|the harbour master|Jonas Lindqvist|the district engineer|Priya Raman|"
    "the finance office|Tomasz Nowak|the survey team|Elena Duarte|the night shift",
    "|",
)
_CONNECTIVES = _words(
    "However,|In the meantime,|As a result,|According to the minutes,|By contrast,|"
    "For the second year running,|Despite the weather,|Later that month,",
    "|",
)


def _article(word: str) -> str:
    return f"{'An' if word[0] in 'aeiou' else 'A'} {word}"


def _sentence(rng: random.Random, topic: Sequence[str]) -> str:
    def noun() -> str:  # a document keeps returning to its own topic words
        return rng.choice(topic) if rng.random() < 0.6 else rng.choice(_NOUNS)

    shape = rng.randrange(5)
    if shape == 0:
        words = (
            f"The {rng.choice(_ADJECTIVES)} {noun()} {rng.choice(_VERBS)} the {noun()} "
            f"{rng.choice(_PREPOSITIONS)} the {rng.choice(_ADJECTIVES)} {noun()}"
        )
    elif shape == 1:
        words = (
            f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.randint(2, 480)} "
            f"{noun()}s {rng.choice(_ADVERBS)}, and the {noun()} was {rng.choice(_VERBS)} "
            f"by {rng.choice(_NAMES)}"
        )
    elif shape == 2:
        words = (
            f"{rng.choice(_CONNECTIVES)} the {noun()} was {rng.choice(_ADVERBS)} "
            f"{rng.choice(_VERBS)} {rng.choice(_PREPOSITIONS)} the {noun()}"
        )
    elif shape == 3:
        words = (
            f"{_article(rng.choice(_ADJECTIVES))} {noun()} costs about {rng.randint(12, 9_800)} "
            f"credits a {rng.choice(('week', 'month', 'season', 'year'))}, "
            f"{rng.choice(_ADVERBS)} more than the {noun()} {rng.choice(_VERBS)} in "
            f"{rng.randint(1998, 2024)}"
        )
    else:
        words = (
            f"Nobody {rng.choice(_VERBS)} whether the {noun()} {rng.choice(_PREPOSITIONS)} "
            f"the {noun()} would be {rng.choice(_VERBS)} before the {rng.choice(_ADJECTIVES)} "
            f"{noun()}"
        )
    return words[0].upper() + words[1:] + "."


def _paragraph(rng: random.Random, topic: Sequence[str]) -> str:
    return " ".join(_sentence(rng, topic) for _ in range(rng.randint(3, 8)))


@dataclass(frozen=True)
class SourceFile:
    name: str
    content: bytes


def make_corpus(count: int, seed: int = SEED) -> list[SourceFile]:
    """``count`` documents of English-like prose, 2–20 KB each, the same on every run.

    Three in four are markdown with sections, the rest plain text.
    """
    rng = random.Random(seed)
    files: list[SourceFile] = []
    for number in range(count):
        topic = rng.sample(_NOUNS, 4)
        title = f"{rng.choice(_ADJECTIVES).capitalize()} {topic[0]} {rng.choice(_NOUNS)} notes"
        sections = [
            (
                f"{rng.choice(_ADJECTIVES).capitalize()} {rng.choice(topic)}",
                [_paragraph(rng, topic) for _ in range(rng.randint(1, 4))],
            )
            for _ in range(rng.randint(2, 7))
        ]
        if number % 4 == 3:
            body = "\n\n".join(p for _, paragraphs in sections for p in paragraphs)
            name, content = f"notes-{number:04d}.txt", f"{title}\n\n{body}\n"
        else:
            parts = [f"# {title}"]
            for heading, paragraphs in sections:
                parts += [f"## {heading}", *paragraphs]
            name, content = f"doc-{number:04d}.md", "\n\n".join(parts) + "\n"
        files.append(SourceFile(name, content.encode()))
    return files


def _warmups(count: int) -> list[SourceFile]:
    return [
        SourceFile(f"warm-up-{i}.txt", f"Warm-up upload {i}: it loads the model.\n".encode())
        for i in range(count)
    ]


# -- the cases -------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    label: str
    processes: int
    pinned: bool  # each process on a CPU of its own
    job_threads: int | None  # ``--workers``; None: the default (``server.workers``)
    model_threads: int | None  # OMP_NUM_THREADS & co.; None: left to ``autorag worker``

    def cpus_each(self, cpus: int) -> str:
        return "1" if self.pinned else f"{cpus} shared"

    def model_threads_shown(self) -> str:
        # Unset, `autorag worker` sets OMP_NUM_THREADS=1: one model thread per job thread.
        return "1/job" if self.model_threads is None else str(self.model_threads)


@dataclass
class Result:
    case: Case
    chunks: int
    seconds: float  # first worker ready -> last job finished
    spawn_seconds: float  # processes spawned -> last job finished
    job_threads: int
    ready_lag: list[float] = field(default_factory=list)  # each process: its first job done
    jobs_per_process: list[int] = field(default_factory=list)
    cpu: CpuUse | None = None  # over the timed window

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds


def _cases(cpus: int) -> list[Case]:
    cases = [
        Case("1 worker, pinned (baseline)", 1, True, 1, 1),
        Case("2 workers, pinned", 2, True, 1, 1),
    ]
    if CONTEXT_CASES:
        cases += [
            Case("context: 1 worker, unpinned, defaults", 1, False, None, None),
            Case("context: 1 worker, unpinned, torch threads", 1, False, 1, cpus),
        ]
    return cases


# -- where the CPU time went -----------------------------------------------------------
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuSample:
    at: float  # wall clock
    workers: float  # CPU seconds of the worker processes
    postgres: float  # CPU seconds of the PostgreSQL server (postmaster and backends)
    busy: float  # CPU seconds the whole machine spent busy
    idle: float


@dataclass(frozen=True)
class CpuUse:
    seconds: float
    workers: float
    postgres: float
    other: float  # the rest of the machine: this test, other programs
    idle: float


def _proc_stat(pid: int) -> list[str] | None:
    try:
        # Fields after the command name: [0] is field 3 (state), so field n is [n - 3].
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _own_cpu(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime + stime


def _server_cpu(postmaster: int) -> float:
    """The postmaster's CPU, its exited children's (reaped) and its live children's."""
    fields = _proc_stat(postmaster)
    if fields is None:
        return 0.0
    total = _own_cpu(fields) + (int(fields[13]) + int(fields[14])) * _TICK_S
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            child = _proc_stat(int(entry.name))
            if child is not None and int(child[1]) == postmaster:
                total += _own_cpu(child)
    return total


def _sample(pids: Sequence[int], postmaster: int) -> CpuSample:
    machine = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = machine
    workers = 0.0
    for pid in pids:
        fields = _proc_stat(pid)
        workers += _own_cpu(fields) if fields is not None else 0.0
    return CpuSample(
        time.time(),
        workers,
        _server_cpu(postmaster),
        (user + nice + system + irq + softirq + steal) * _TICK_S,
        (idle + iowait) * _TICK_S,
    )


def _cpu_between(samples: Sequence[CpuSample], start: float, end: float) -> CpuUse | None:
    """CPU use from the first sample at or after ``start`` to the last at or before ``end``."""
    inside = [s for s in samples if start <= s.at <= end]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    workers = last.workers - first.workers
    postgres = last.postgres - first.postgres
    return CpuUse(
        last.at - first.at,
        workers,
        postgres,
        max(0.0, last.busy - first.busy - workers - postgres),
        last.idle - first.idle,
    )


def _postmaster(engine: Engine) -> int:
    with engine.connect() as conn:
        backend = int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
    fields = _proc_stat(backend)
    assert fields is not None, "the PostgreSQL server runs on another machine"
    return int(fields[1])


# -- running a case ---------------------------------------------------------------------
def _usable_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40]


def _workspace(root: Path, database_url: str) -> Workspace:
    workspace = init_workspace(root)
    workspace.write_config(
        {
            "workspace": "default",
            "search_paths": [],
            "database_url": database_url,
            "vector_store": "pgvector",
            "embedding": {"cache": False},
        }
    )
    return workspace


def _queue_uploads(context: AppContext, files: Sequence[SourceFile]) -> list[int]:
    """Store each file as the upload route does: a pending document and its job."""
    incoming = context.workspace.incoming_uploads_dir
    incoming.mkdir(parents=True, exist_ok=True)
    job_ids: list[int] = []
    for source in files:
        path = incoming / secrets.token_hex(8)
        path.write_bytes(source.content)
        received = ReceivedFile(
            path, source.name, len(source.content), hashlib.sha256(source.content).hexdigest()
        )
        stored = store_upload(
            context.catalog.engine,
            context.info,
            context.workspace.data_dir,
            received,
            context.indexer.limits,
        )
        assert not stored.duplicate and stored.job_id is not None, source.name
        job_ids.append(stored.job_id)
    return job_ids


def _expected_chunks(context: AppContext, files: Sequence[SourceFile], scratch: Path) -> int:
    """The corpus's chunks as the pipeline cuts them, counted here without a worker."""
    scratch.mkdir(parents=True, exist_ok=True)
    settings = context.settings.ingest
    total = 0
    for source in files:
        path = scratch / source.name
        path.write_bytes(source.content)
        parsed = parse_file(path, limits=context.indexer.limits)
        total += len(
            chunk_document(parsed, chunk_size=settings.chunk_size, overlap=settings.chunk_overlap)
        )
    return total


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _child_setup(cpu: int | None) -> None:
    """In the worker, before exec: die with this test process, and keep to ``cpu``."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def _spawn(case: Case, workspace: Workspace, cpu: int | None, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if case.model_threads is not None:
        env.update({variable: str(case.model_threads) for variable in THREAD_VARIABLES})
    env["AUTORAG_EMBEDDING__CACHE"] = "false"  # also in the config; no AUTORAG_* may undo it
    command = [sys.executable, "-m", "autorag", "-w", str(workspace.root), "worker"]
    if case.job_threads is not None:
        command += ["--workers", str(case.job_threads)]
    with log.open("wb") as sink:
        return subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl+C on the test reaches them only through _stop
            preexec_fn=lambda: _child_setup(cpu),
        )


def _stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGINT (running jobs finish), then SIGKILL whatever is left after STOP_WAIT_S."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + STOP_WAIT_S
    for process in processes:
        try:
            process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_for_jobs(
    engine: Engine, processes: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path]
) -> list[CpuSample]:
    """Poll until no job is queued or running; CPU use sampled at each poll."""
    postmaster = _postmaster(engine)
    pids = [p.pid for p in processes]
    samples: list[CpuSample] = []
    deadline = time.monotonic() + CASE_TIMEOUT_S
    while time.monotonic() < deadline:
        samples.append(_sample(pids, postmaster))
        with engine.connect() as conn:
            active = conn.execute(
                select(func.count(JobRow.id)).where(JobRow.status.in_(queue.ACTIVE))
            ).scalar_one()
        if active == 0:
            samples.append(_sample(pids, postmaster))
            return samples
        for process, log in zip(processes, logs, strict=True):
            if process.poll() is not None:
                raise AssertionError(
                    f"worker {process.pid} exited ({process.returncode}) with {active} jobs "
                    f"left:\n{_tail(log)}"
                )
        time.sleep(POLL_S)
    raise AssertionError(f"jobs still active after {CASE_TIMEOUT_S:.0f} s")


def _pid(claimed_by: str | None) -> int:
    assert claimed_by, "a finished job names no claimer"
    return int(claimed_by.split(":")[1])


def _measure(
    context: AppContext,
    case: Case,
    *,
    corpus_jobs: Sequence[int],
    pids: Sequence[int],
    spawned: float,
    expected_chunks: int,
    job_threads: int,
    samples: Sequence[CpuSample],
) -> Result:
    """Check that the work was done once and completely, then time it from the jobs."""
    engine = context.catalog.engine
    with engine.connect() as conn:
        jobs = conn.execute(
            select(
                JobRow.id,
                JobRow.status,
                JobRow.attempts,
                JobRow.claimed_by,
                JobRow.started_at,
                JobRow.finished_at,
                JobRow.error,
                JobRow.document_id,
            )
        ).all()
        not_done = [(j.id, j.status, j.error) for j in jobs if j.status != queue.DONE]
        assert not not_done, f"jobs not done: {not_done[:5]}"
        reclaimed = [(j.id, j.attempts) for j in jobs if j.attempts != 1]
        assert not reclaimed, f"jobs claimed more than once: {reclaimed[:5]}"
        corpus = set(corpus_jobs)
        corpus_documents = [j.document_id for j in jobs if j.id in corpus]
        assert len(corpus_documents) == len(corpus)
        statuses = conn.execute(
            select(DocumentRow.status, func.count()).group_by(DocumentRow.status)
        ).all()
        assert {s for s, _ in statuses} == {"ready"}, statuses
        corpus_chunks = conn.execute(
            select(func.coalesce(func.sum(DocumentRow.chunk_count), 0)).where(
                DocumentRow.id.in_(corpus_documents)
            )
        ).scalar_one()
        assert corpus_chunks == expected_chunks
        all_chunks = conn.execute(select(func.count(ChunkRow.id))).scalar_one()
        all_counted = conn.execute(select(func.sum(DocumentRow.chunk_count))).scalar_one()
        assert all_chunks == all_counted
        table = f'"{context.settings.vectors.pgvector_schema}"."{context.info.vector_table}"'
        vector_rows = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
        assert vector_rows == all_chunks, (vector_rows, all_chunks)
        orphans = conn.execute(
            text(
                f"SELECT count(*) FROM chunks c LEFT JOIN {table} v ON v.chunk_id = c.id "
                "WHERE v.chunk_id IS NULL"
            )
        ).scalar_one()
        assert orphans == 0, f"{orphans} chunks without a vector"

    by_pid: dict[int, list[tuple[float, float, bool]]] = {pid: [] for pid in pids}
    for job in jobs:
        pid = _pid(job.claimed_by)
        assert pid in by_pid, f"job {job.id} claimed by a process not started here: {pid}"
        by_pid[pid].append(
            (job.started_at.timestamp(), job.finished_at.timestamp(), job.id in corpus)
        )
    ready = {pid: min(finished for _, finished, _ in done) for pid, done in by_pid.items() if done}
    start = min(ready.values())  # the first process with its model loaded
    end = max(finished for done in by_pid.values() for _, finished, _ in done)
    early = [s for done in by_pid.values() for s, _, is_corpus in done if is_corpus and s < start]
    assert not early, "a corpus job began before any warm-up ended: the clock would miss it"
    return Result(
        case,
        chunks=int(corpus_chunks),
        seconds=end - start,
        spawn_seconds=end - spawned,
        job_threads=job_threads,
        ready_lag=[ready.get(pid, end) - start for pid in pids],
        jobs_per_process=[sum(is_corpus for *_, is_corpus in by_pid[pid]) for pid in pids],
        cpu=_cpu_between(samples, start, end + POLL_S),
    )


def run_case(
    case: Case, corpus: Sequence[SourceFile], database_url: str, scratch: Path, cpus: list[int]
) -> Result:
    workspace = _workspace(scratch / "workspace", database_url)
    context = open_context(workspace)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        expected = _expected_chunks(context, corpus, scratch / "expected")
        job_threads = case.job_threads or context.settings.server.workers
        # One warm-up per job thread, queued first (jobs are claimed oldest first).
        _queue_uploads(context, _warmups(case.processes * job_threads))
        corpus_jobs = _queue_uploads(context, corpus)
        assert "embedder" not in context.__dict__, "queueing must not embed"
        logs = [scratch / f"worker-{i}.log" for i in range(case.processes)]
        spawned = time.time()  # wall clock, as the jobs' timestamps
        for index, log in enumerate(logs):
            cpu = cpus[index] if case.pinned else None
            processes.append(_spawn(case, workspace, cpu, log))
        samples = _wait_for_jobs(context.catalog.engine, processes, logs)
        return _measure(
            context,
            case,
            corpus_jobs=corpus_jobs,
            pids=[p.pid for p in processes],
            spawned=spawned,
            expected_chunks=expected,
            job_threads=job_threads,
            samples=samples,
        )
    finally:
        _stop(processes)
        context.close()


# -- the report -------------------------------------------------------------------------
def _table(results: Sequence[Result], cpus: int) -> str:
    baseline = results[0].rate
    header = (
        f"{'case':44} {'workers':>7} {'job thr':>7} {'model thr':>9} {'CPUs each':>9} "
        f"{'chunks':>7} {'seconds':>8} {'chunks/s':>9} {'speed-up':>8}"
    )
    rows = [header, "-" * len(header)]
    for r in results:
        rows.append(
            f"{r.case.label:44} {r.case.processes:>7} {r.job_threads:>7} "
            f"{r.case.model_threads_shown():>9} {r.case.cpus_each(cpus):>9} {r.chunks:>7} "
            f"{r.seconds:>8.1f} {r.rate:>9.1f} {r.rate / baseline:>7.2f}x"
        )
    return "\n".join(rows)


def _details(results: Sequence[Result], cpus: int) -> str:
    header = (
        f"{'case':44} {'from spawn':>10} {'ready at +s':>11} {'jobs each':>9}  "
        f"CPU-s in the timed window: workers / PostgreSQL / rest / idle (of CPUs x s)"
    )
    rows = [header, "-" * len(header)]
    for r in results:
        lags = ",".join(f"{lag:.1f}" for lag in r.ready_lag)
        split = "/".join(str(n) for n in r.jobs_per_process)
        use = r.cpu
        cpu = (
            "n/a"
            if use is None
            else f"{use.workers:6.1f} / {use.postgres:5.1f} / {use.other:5.1f} / "
            f"{use.idle:5.1f} (of {cpus * use.seconds:.1f})"
        )
        rows.append(f"{r.case.label:44} {r.spawn_seconds:>9.1f}s {lags:>11} {split:>9}  {cpu}")
    return "\n".join(rows)


@pytest.fixture(scope="module")
def cpus() -> list[int]:
    usable = _usable_cpus()
    if len(usable) < 2:
        pytest.skip(f"needs 2 usable CPUs for two pinned workers; this process has {usable}")
    return usable


def test_two_workers_ingest_at_least_1_7x_one(
    cpus: list[int], postgres_server: PostgresTestServer, tmp_path: Path
) -> None:
    started = time.perf_counter()
    corpus = make_corpus(DOCS)
    corpus_kb = sum(len(f.content) for f in corpus) / 1024
    results: list[Result] = []
    for number, case in enumerate(_cases(len(cpus))):
        scratch = tmp_path / f"{number}-{_slug(case.label)}"
        result = run_case(case, corpus, postgres_server.new_database(), scratch, cpus)
        results.append(result)
        print(f"\n  {case.label}: {result.chunks} chunks in {result.seconds:.1f} s", flush=True)

    print(
        f"\nIngest by `autorag worker` processes on one PostgreSQL (pgvector): {DOCS} uploads "
        f"({corpus_kb:,.0f} KB of markdown/text, {results[0].chunks:,} chunks), "
        "all-MiniLM-L6-v2 on CPU, embedding cache off, a fresh database per case.\n"
        f"Pinned rows: each worker process on a CPU of its own (one of {cpus}, by "
        "sched_setaffinity), OMP/MKL/OPENBLAS_NUM_THREADS=1, --workers 1.\n"
        "Context rows (not the goal): one unpinned process on all CPUs; 'defaults' is "
        "`autorag worker` as shipped (server.workers job threads, one model thread each), "
        f"'torch threads' is --workers 1 with OMP_NUM_THREADS={len(cpus)}.\n"
        "PostgreSQL (pgserver, fsync off) and this test process are not pinned.\n"
        "seconds: from the first worker's warm-up upload done (imports, torch, model "
        "loaded) to the last job's end: start-up excluded, nothing subtracted."
    )
    print(_table(results, len(cpus)))
    print(_details(results, len(cpus)))
    for r in results:
        if r.cpu is not None and r.cpu.other > BUSY_MACHINE_SHARE * len(cpus) * r.cpu.seconds:
            print(
                f"warning: during '{r.case.label}' other programs used {r.cpu.other:.1f} "
                f"CPU-s of {len(cpus) * r.cpu.seconds:.1f}: the machine was not quiet"
            )
    speedup = results[1].rate / results[0].rate
    print(
        f"two pinned workers vs one: {speedup:.2f}x (goal >= {GOAL_SPEEDUP}x); "
        f"whole benchmark {time.perf_counter() - started:.0f} s"
    )
    assert speedup >= GOAL_SPEEDUP
