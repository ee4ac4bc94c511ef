"""Benchmark: backing up and restoring the SciFact workspace (issue 20's numbers).

The workspace holds SciFact indexed as the other SciFact benchmarks index it (every
corpus document a datasource record: the catalog and LanceDB's vectors, no uploads).
Measured in one run, alternating, ``ROUNDS`` rounds, medians reported:

* ``BackupService.run`` to a local folder, against the bare work on the same files: a
  plain zip (deflate level 9) of the files the backup's manifest lists (the catalog as a
  snapshot made beforehand, the vectors, the configuration, the keys) streamed through
  AES-256-GCM in 1 MiB chunks (no segment framing) into a file. Ratio = baseline time /
  backup time (goal ≥ 0.8: the backup at most 25 % slower than the bare work). The
  catalog's dump (SQLite's online backup API) is a step the baseline does not take: the
  ratio is also given without it.
* ``BackupService.restore`` of that backup into the same workspace: verify, the safety
  backup, the restore itself (timed apart from the progress steps).
* Peak memory (ru_maxrss) of a fresh process backing up, restoring, or doing the
  baseline, each beside one that only imports and opens the context.

Goals are printed, never asserted (a timing depends on the machine's load); the backup
must succeed, verify and restore. Run with
``pytest -m bench -s tests/bench/test_backup_bench.py``; skipped without
../shared/data/scifact. Indexing SciFact embeds about 5,000 abstracts (minutes on 2
cores with a cold embedding cache, which starts as a copy of the user's, as in
test_api_bench). ``AUTORAG_BENCH_BACKUP_WORKSPACE=/some/dir`` keeps the indexed
workspace there and reuses it in later runs.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from autorag.backup.dump import snapshot_sqlite
from autorag.backup.models import Progress
from autorag.backup.paths import SQLITE_ENTRY, area_of, place_of
from autorag.backup.service import BackupService, backup_dir
from autorag.context import open_context
from autorag.eval.beir import load_beir
from autorag.eval.runner import index_corpus, workspace_name
from autorag.workspace import Workspace, init_workspace
from tests.bench.test_api_bench import SCIFACT, _seed_cache

pytestmark = pytest.mark.bench

ROUNDS = 3
CHUNK = 1 << 20  # the baseline's AES-GCM chunk
GOAL_RATIO = 0.8
KEEP_ENV = "AUTORAG_BENCH_BACKUP_WORKSPACE"
INDEXED_MARK = ".backup-bench-indexed"  # in a kept workspace's root: indexing finished
MB = 1024 * 1024


# -- the workspace -----------------------------------------------------------------------
@dataclass
class Bench:
    workspace: Workspace
    env: dict[str, str]  # for the subprocesses: the same embedding cache
    index_seconds: float | None  # None: reused


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    if not SCIFACT.is_dir():
        pytest.skip(f"no SciFact at {SCIFACT}")
    scratch = tmp_path_factory.mktemp("backup-bench")
    kept = os.environ.get(KEEP_ENV)
    root = Path(kept).expanduser().resolve() if kept else scratch / "kb"
    cache = (root.parent / f"{root.name}-cache") if kept else scratch / "cache"
    if not cache.is_dir():
        cache.parent.mkdir(parents=True, exist_ok=True)
        _seed_cache(cache)
    env = {**os.environ, "AUTORAG_EMBEDDING__CACHE_DIR": str(cache)}
    saved = os.environ.get("AUTORAG_EMBEDDING__CACHE_DIR")
    os.environ["AUTORAG_EMBEDDING__CACHE_DIR"] = str(cache)
    try:
        index_seconds = None
        if not (root / INDEXED_MARK).is_file():
            shutil.rmtree(root, ignore_errors=True)
            index_seconds = _build(root)
        yield Bench(Workspace(root), env, index_seconds)
    finally:
        if saved is None:
            os.environ.pop("AUTORAG_EMBEDDING__CACHE_DIR", None)
        else:
            os.environ["AUTORAG_EMBEDDING__CACHE_DIR"] = saved
        if not kept:
            shutil.rmtree(scratch, ignore_errors=True)


def _build(root: Path) -> float:
    """SciFact indexed into a new workspace at ``root``; the seconds it took."""
    dataset = load_beir(SCIFACT, split="test")
    workspace = init_workspace(root)
    # The workspace named in its configuration: every process opening it sees this one.
    workspace.write_config({"workspace": workspace_name(dataset), "search_paths": []})
    context = open_context(workspace)
    try:
        seconds = index_corpus(context, dataset)
        chunks = context.catalog.chunk_count(context.info.id)
    finally:
        context.close()
    assert chunks > 10_000, chunks
    (root / INDEXED_MARK).write_text(f"{chunks} chunks\n", encoding="utf-8")
    return seconds


def _tree_size(folder: Path, leave_out: Path | None = None) -> int:
    return sum(
        p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and (leave_out is None or leave_out not in p.parents)
    )


# -- the measures ------------------------------------------------------------------------
@dataclass
class Steps:
    """When each progress step was first (and last) seen, from the start."""

    started: float = field(default_factory=time.perf_counter)
    first: dict[str, float] = field(default_factory=dict)
    last: dict[str, float] = field(default_factory=dict)
    messages: list[tuple[float, str, str]] = field(default_factory=list)

    def __call__(self, progress: Progress) -> None:
        now = time.perf_counter() - self.started
        self.first.setdefault(progress.step, now)
        self.last[progress.step] = now
        if progress.message:
            self.messages.append((now, progress.step, progress.message))

    def at(self, step: str, message_start: str) -> float:
        return next(t for t, s, m in self.messages if s == step and m.startswith(message_start))


@dataclass(frozen=True)
class BackupTiming:
    seconds: float
    dump_seconds: float  # the catalog's dump (SQLite online backup + counts)
    size: int  # the archive's bytes


def _backup(service: BackupService, destination: Path) -> tuple[BackupTiming, int]:
    steps = Steps()
    run = service.run(destination=f"local:{destination}", progress=steps)
    seconds = time.perf_counter() - steps.started
    assert run.status == "succeeded", run.error
    assert run.size_bytes is not None
    dump = steps.at("dump", "catalog dumped") - steps.at("dump", "dumping")
    return BackupTiming(seconds, dump, run.size_bytes), run.id


def _entries_on_disk(workspace: Workspace, names: list[str], snapshot: Path) -> list[Path]:
    """Where each manifest entry is read from: the snapshot for the catalog."""
    paths = []
    for name in names:
        if name == SQLITE_ENTRY:
            paths.append(snapshot)
            continue
        area = area_of(name)
        assert area is not None, name
        paths.append(place_of(workspace, area, name))
    return paths


class _AesSink:
    """A file written through AES-256-GCM, 1 MiB of plaintext per sealed chunk."""

    def __init__(self, out: Path, key: bytes) -> None:
        self._raw = out.open("wb")
        self._aead = AESGCM(key)
        self._buffer = bytearray()
        self._written = 0
        self._count = 0

    def write(self, data: bytes) -> int:
        self._buffer += data
        self._written += len(data)
        while len(self._buffer) >= CHUNK:
            self._seal(bytes(self._buffer[:CHUNK]))
            del self._buffer[:CHUNK]
        return len(data)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        self._raw.flush()

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self._seal(bytes(self._buffer))
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()

    def _seal(self, chunk: bytes) -> None:
        nonce = self._count.to_bytes(12, "big")
        self._count += 1
        self._raw.write(self._aead.encrypt(nonce, chunk, None))


def baseline(files: list[tuple[Path, str]], out: Path) -> int:
    """The bare work: ``files`` (path on disk, name) zipped at level 9, streamed through
    AES-256-GCM into ``out``; the bytes written."""
    sink = _AesSink(out, AESGCM.generate_key(bit_length=256))
    with zipfile.ZipFile(
        sink,  # type: ignore[arg-type]  # a write-only stream, as zipfile takes one
        "w",
        compression=zipfile.ZIP_DEFLATED,
        compresslevel=9,
        allowZip64=True,
    ) as archive:
        for path, name in files:
            info = zipfile.ZipInfo.from_file(path, name)
            info.compress_type = zipfile.ZIP_DEFLATED
            info._compresslevel = 9  # type: ignore[attr-defined]
            with path.open("rb") as source, archive.open(info, "w") as target:
                while block := source.read(CHUNK):
                    target.write(block)
    sink.close()
    return out.stat().st_size


def _baseline_timed(files: list[tuple[Path, str]], out: Path) -> float:
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    baseline(files, out)
    return time.perf_counter() - started


# -- peak memory in fresh processes ------------------------------------------------------
_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    what, root, destination, ref = sys.argv[1:5]
    from autorag.backup.service import BackupService
    from autorag.context import open_context
    from autorag.workspace import Workspace
    from tests.bench.test_backup_bench import baseline  # in every child alike
    context = open_context(Workspace(Path(root)))
    service = BackupService.for_context(context)
    status = Path("/proc/self/status").read_text().split("VmRSS:")[1]
    before = int(status.split()[0])  # KiB resident once imported and opened
    started = time.perf_counter()
    out = {"ok": True}
    if what == "backup":
        run = service.run(destination=f"local:{destination}")
        out = {"ok": run.status == "succeeded", "error": run.error, "run": run.id}
    elif what == "restore":
        report = service.restore(int(ref))
        out = {"ok": True, "vectors": report.vectors}
    elif what == "baseline":
        files = json.loads(Path(ref).read_text())
        baseline([(Path(p), n) for p, n in files], Path(destination) / "baseline.zip.aes")
        out = {"ok": True}
    seconds = time.perf_counter() - started
    context.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({**out, "seconds": seconds, "peak_kib": peak, "before_kib": before}))
    """
)


def _child(bench: Bench, what: str, destination: Path, ref: str = "") -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, what, str(bench.workspace.root), str(destination), ref],
        env={**bench.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ok"], result
    return result


# -- the benchmark -----------------------------------------------------------------------
def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _rate(size: int, seconds: float) -> str:
    return f"{size / MB / seconds:6.1f} MB/s" if seconds else "-"


def test_backup_and_restore_of_scifact(bench: Bench, tmp_path: Path) -> None:
    load_before = _load()
    workspace = bench.workspace
    destination = tmp_path / "destination"
    destination.mkdir()
    work = tmp_path / "baseline"
    work.mkdir()
    sizes = {
        # Without the local backup folder (a kept workspace's grows run after run).
        "workspace": _tree_size(workspace.root, workspace.backups_dir),
        "catalog": workspace.database_file.stat().st_size,
        "vectors": _tree_size(workspace.vectors_dir),
    }

    context = open_context(workspace)
    try:
        service = BackupService.for_context(context)
        # One backup first, untimed: its manifest names the files the baseline zips, and
        # it warms the page cache for both sides alike.
        _, first_id = _backup(service, destination)
        verified = service.verify(first_id)
        assert verified.ok, verified.problems
        assert verified.manifest is not None
        names = [f.path for f in verified.manifest.files]
        snapshot = work / "autorag.db"
        snapshot_sqlite(workspace.database_file, snapshot)
        files = list(zip(_entries_on_disk(workspace, names, snapshot), names, strict=True))
        plain_bytes = sum(path.stat().st_size for path, _ in files)
        out = work / "baseline.zip.aes"
        _baseline_timed(files, out)
        backups: list[BackupTiming] = []
        baselines: list[float] = []
        for number in range(ROUNDS):  # alternating, the order swapped every round
            if number % 2:
                baselines.append(_baseline_timed(files, out))
                backups.append(_backup(service, destination)[0])
            else:
                backups.append(_backup(service, destination)[0])
                baselines.append(_baseline_timed(files, out))
        baseline_size = out.stat().st_size

        steps = Steps()
        report = service.restore(first_id, progress=steps)
        restore_seconds = time.perf_counter() - steps.started
        assert report.safety_run is not None and report.safety_run.status == "succeeded"
        assert report.vectors == "restored"
        verify_s = steps.first["safety"]
        safety_end = steps.last["upload"]  # the safety backup's last step: it is stored
        restore_only = restore_seconds - safety_end
        local = backup_dir(workspace, context.settings)
    finally:
        context.close()

    files_json = work / "files.json"
    files_json.write_text(json.dumps([[str(p), n] for p, n in files]), encoding="utf-8")
    memory = {
        "open context only": _child(bench, "open", destination),
        "backup": _child(bench, "backup", destination),
        "baseline (zip + AES)": _child(bench, "baseline", work, str(files_json)),
    }
    # The newest run: the one the child just made (restoring it changes nothing).
    context = open_context(workspace)
    try:
        newest = BackupService.for_context(context).runs(limit=1)[0]
    finally:
        context.close()
    memory["restore"] = _child(bench, "restore", destination, str(newest.id))
    load_after = _load()

    backup_s = statistics.median(b.seconds for b in backups)
    dump_s = statistics.median(b.dump_seconds for b in backups)
    baseline_s = statistics.median(baselines)
    ratio = baseline_s / backup_s
    # Each round's pair, run back to back: steadier than the medians on a busy machine.
    paired = statistics.median(s / b.seconds for s, b in zip(baselines, backups, strict=True))
    ratio_no_dump = baseline_s / (backup_s - dump_s)
    archive = backups[-1].size
    opened = int(memory["open context only"]["peak_kib"]) / 1024  # type: ignore[call-overload]
    index = f"indexed in {bench.index_seconds:.0f} s" if bench.index_seconds else "reused"
    lines = [
        "",
        f"SciFact workspace backup ({os.cpu_count()} CPUs; load average {load_before} "
        f"before, {load_after} after; workspace {index})",
        f"  on disk: workspace {sizes['workspace'] / MB:.1f} MB (catalog "
        f"{sizes['catalog'] / MB:.1f} MB, vectors {sizes['vectors'] / MB:.1f} MB); "
        f"{len(files)} files archived, {plain_bytes / MB:.1f} MB read",
        f"  archive {archive / MB:.1f} MB (baseline's {baseline_size / MB:.1f} MB); "
        f"local backup folder {local}",
        f"  {'':34} {'median':>8} {'rounds':>26} {'throughput':>12}",
        f"  {'BackupService.run (local folder)':34} {backup_s:7.2f}s "
        f"{' '.join(f'{b.seconds:7.2f}s' for b in backups):>26} "
        f"{_rate(plain_bytes, backup_s):>12}",
        f"  {'  of which the catalog dump':34} {dump_s:7.2f}s "
        f"{' '.join(f'{b.dump_seconds:7.2f}s' for b in backups):>26}",
        f"  {'baseline: zip -9 + AES-256-GCM':34} {baseline_s:7.2f}s "
        f"{' '.join(f'{s:7.2f}s' for s in baselines):>26} {_rate(plain_bytes, baseline_s):>12}",
        f"  ratio baseline/backup {ratio:.3f} (goal ≥ {GOAL_RATIO}: "
        f"{'met' if ratio >= GOAL_RATIO else 'missed'}); without the dump {ratio_no_dump:.3f}; "
        f"median of the rounds' own ratios {paired:.3f}",
        f"  restore {restore_seconds:.2f}s: fetch + verify {verify_s:.2f}s, safety backup "
        f"{safety_end - verify_s:.2f}s, restore itself {restore_only:.2f}s "
        f"(without the safety backup {restore_seconds - (safety_end - verify_s):.2f}s)",
        "  a fresh process: peak RSS (ru_maxrss), vs the process with only the imports and "
        "the context opened; RSS just before the work",
    ]
    for what, result in memory.items():
        peak = int(result["peak_kib"]) / 1024  # type: ignore[call-overload]
        first = what == "open context only"
        share = "" if first else f"  ({peak - opened:+.1f} MB)"
        took = "" if first else f"{float(result['seconds']):6.2f}s"  # type: ignore[arg-type]
        before = int(result["before_kib"]) / 1024  # type: ignore[call-overload]
        lines.append(f"    {what:22} {peak:7.1f} MB{share:14} before {before:6.1f} MB  {took}")
    print("\n".join(lines))
