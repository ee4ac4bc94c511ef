"""Commands that build the index: init, add, remove, refresh, status, reindex."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from autorag.cli._common import (
    console,
    current_workspace,
    err_console,
    local_time,
    open_app,
    plural,
    print_json,
)
from autorag.errors import Conflict, InvalidInput
from autorag.sources import DATASOURCE_KINDS, SourceRoot, plan_source_roots
from autorag.workspace import Workspace, init_workspace

# The indexing machinery is imported by the commands that use it: init, add and remove
# run without it, in a fraction of the time.
if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.ingest.minsync import RefreshReport
    from autorag.ingest.pipeline import IngestOutcome
    from autorag.ingest.readiness import Readiness

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


class _ProgressObserver:
    """A progress bar over the files a refresh has to index, with the rate of the files
    actually read: a file whose content turns out unchanged is counted, not timed (a
    touched tree would otherwise show a hundred thousand files a second)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("indexing", total=None, read_rate=None)
        self.read = 0
        self.started = time.monotonic()

    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None:
        self.started = time.monotonic()
        self.progress.update(self.task, total=to_index)
        if (unchanged or to_delete) and not self.progress.disable:
            self.progress.console.print(
                f"{unchanged} unchanged, {to_index} to index, {to_delete} to remove"
            )

    def done(self, outcome: IngestOutcome) -> None:
        self.read += outcome.status != "unchanged"
        elapsed = time.monotonic() - self.started
        rate = self.read / elapsed if self.read and elapsed >= 1 else None  # none at first
        self.progress.update(self.task, advance=1, read_rate=rate)


class _RateColumn(ProgressColumn):
    """Files read (or OCR pages) per second."""

    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit", "files")
        rate = task.fields.get("read_rate", task.speed)
        return Text(f"{rate:.1f} {unit}/s" if rate else "", style="cyan")


# Libraries that log or warn about the files they read (pypdf on a damaged cross-reference
# table, …): during a refresh their messages go to the workspace's log file, not into the
# progress bar, and one line says how many there were.
_READER_LOGGERS = ("pypdf", "pdfminer", "PIL", "openpyxl", "docx", "pptx", "py.warnings")


class _Tally(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        self.count += 1
        return True


@contextmanager
def _reader_messages_to(log_file: Path) -> Iterator[_Tally]:
    handler = logging.FileHandler(log_file, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    tally = _Tally()
    handler.addFilter(tally)
    loggers = [logging.getLogger(name) for name in _READER_LOGGERS]
    propagated = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    logging.captureWarnings(True)  # warnings.warn(...) as records of "py.warnings"
    try:
        yield tally
    finally:
        logging.captureWarnings(False)
        for logger, propagate in zip(loggers, propagated, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate
        handler.close()


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(add)
    app.command()(remove)
    app.command("refresh")(refresh_command)
    app.command()(status)
    app.command("reindex")(reindex_command)


def init(
    directory: Annotated[Path, typer.Argument(help="Folder for the workspace (created).")] = Path(
        "."
    ),
) -> None:
    """Create a workspace: DIR/autorag.toml and DIR/.autorag/."""
    workspace = init_workspace(directory)
    console.print(f"Workspace ready at [bold]{workspace.root}[/bold]")
    console.print(
        f"Next: autorag -w {workspace.root} add FOLDER && autorag -w {workspace.root} refresh"
    )


def add(
    ctx: typer.Context,
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Folders (or single files) to index: search paths. A YouTube video URL is"
            " added at once as a document, from its transcript (see `autorag youtube`).",
        ),
    ],
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="Follow symbolic links that lead outside every search path (files so "
            "reached are indexed under their real path). Off by default: such links are "
            "listed as failed and not read.",
        ),
    ] = False,
) -> None:
    """Register folders (or single files) as search paths (source roots).

    Example: autorag add ~/Documents/policies ~/Desktop/handbook.pdf

    A YouTube video's URL is indexed at once, as a document made of its transcript.

    Example: autorag add https://youtu.be/VIDEO_ID
    """
    from autorag.youtube.urls import is_youtube_url  # light: re and urllib only

    videos = [p for p in paths if is_youtube_url(p)]
    if videos:
        _add_videos(ctx, videos)
    workspace = current_workspace(ctx)
    config = workspace.read_config()
    search_paths: list[str] = list(config.get("search_paths", []))
    added: list[str] = []
    for path in [Path(p) for p in paths if p not in videos]:
        resolved = path.expanduser().resolve()
        if not resolved.is_dir() and not resolved.is_file():
            why = "is neither a file nor a folder" if resolved.exists() else "does not exist"
            raise InvalidInput(f"{path} {why} (give a folder or a file)")
        folder = next((p for p in search_paths if Path(p) in resolved.parents), None)
        if resolved.is_file() and folder is not None:
            console.print(f"{path} is indexed already: it is under the search path {folder}.")
            continue
        added.append(str(resolved))
        if str(resolved) not in search_paths:
            search_paths.append(str(resolved))
    if not added:
        return
    roots = plan_source_roots(search_paths)  # refuses a path before it is written
    _refuse_imported_namespaces(ctx, roots)
    config["search_paths"] = search_paths
    ingest = dict(config.get("ingest", {}))
    following = [p for p in ingest.get("follow_links", []) if p not in added]
    ingest["follow_links"] = following + (added if follow_links else [])
    if ingest["follow_links"] or "follow_links" in config.get("ingest", {}):
        config["ingest"] = ingest
    workspace.write_config(config)
    for root in roots:
        following_note = "  (links followed)" if root.path in ingest["follow_links"] else ""
        console.print(f"  {_namespace(root)}  ←  {root.path}{following_note}", highlight=False)
    console.print("Run `autorag refresh` to index them.")


def _add_videos(ctx: typer.Context, videos: list[str]) -> None:
    from autorag.cli.youtube import add_videos, print_added

    for added in add_videos(ctx, videos):
        print_added(added)


def _refuse_imported_namespaces(ctx: typer.Context, roots: list[SourceRoot]) -> None:
    """A folder whose prefix is a datasource kind already imported here would share its
    namespace (/kakao/...): one policy rule would then cover both."""
    clashing = [root for root in roots if root.prefix in DATASOURCE_KINDS]
    if not clashing:
        return
    app = open_app(ctx)
    try:
        imported = {sid.split("/")[1] for sid in app.catalog.file_states(app.info.id, "datasource")}
    finally:
        app.close()
    for root in clashing:
        if root.prefix in imported:
            raise Conflict(
                f"the folder {root.path} would use the /{root.prefix}/ namespace of this "
                f"workspace's {root.prefix} imports; rename the folder first"
            )


def remove(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Search paths to stop indexing.")],
) -> None:
    """Unregister search paths; their documents leave the index on the next refresh."""
    workspace = current_workspace(ctx)
    config = workspace.read_config()
    current: list[str] = list(config.get("search_paths", []))
    dropping = {str(p.expanduser().resolve()) for p in paths}
    missing = dropping - set(current)
    if missing:
        raise InvalidInput(f"not a search path: {', '.join(sorted(missing))}")
    config["search_paths"] = [p for p in current if p not in dropping]
    workspace.write_config(config)
    removed = plural(len(dropping), "search path")
    console.print(f"Removed {removed}. Run `autorag refresh` to apply.", highlight=False)


def refresh_command(
    ctx: typer.Context,
    method: Annotated[str, typer.Option(help="Refresh method (minsync).")] = "minsync",
    retry_failed: Annotated[
        bool,
        typer.Option("--retry-failed", help="Retry files that failed before, OCR failures too."),
    ] = False,
    ocr_now: Annotated[
        bool,
        typer.Option(
            "--ocr-now",
            help="Read the scans waiting for OCR before returning, with a progress bar "
            "(otherwise `autorag serve` or `autorag worker` reads them).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Index new and changed files, drop deleted ones. Safe to interrupt and re-run.

    Scans and images (pages without a text layer) are queued for OCR, unless
    ocr.enabled is false; see `autorag ocr jobs`.
    """
    from autorag.ingest.minsync import refresh, refresh_lock, scan_rules
    from autorag.ocr.service import refresh_planner

    if method != "minsync":
        raise InvalidInput(f"unknown refresh method {method!r} (known: minsync)")
    app = open_app(ctx)
    log_file = app.workspace.data_dir / "refresh.log"
    with refresh_lock(app.workspace.refresh_lock_file), _reader_messages_to(log_file) as noted:
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err_console,  # progress on stderr keeps stdout clean for --json
            disable=as_json,
            transient=False,
        )
        with progress:
            report = refresh(
                app.catalog,
                app.info,
                app.indexer,
                app.roots,
                ignore=scan_rules(app.settings, app.workspace),
                observer=_ProgressObserver(progress),
                retry_failed=retry_failed,
                ocr=refresh_planner(app),
            )
            ocr = _read_scans(app, progress) if ocr_now else None
    if as_json:
        print_json({**dataclasses.asdict(report), **({"ocr": ocr} if ocr is not None else {})})
        return
    _print_refresh(report)
    _print_ocr(report.ocr_queued, ocr)
    if noted.count:
        console.print(
            f"{plural(noted.count, 'warning')} from the file readers (damaged files read "
            f"anyway, …) went to {log_file}.",
            highlight=False,
        )


def _read_scans(app: AppContext, progress: Progress) -> dict[str, int]:
    """Run the workspace's queued OCR jobs in this process: how many ended in each status."""
    # Imported here: the worker pool and the server's thread settings are heavy.
    from autorag.jobs.worker import WorkerPool
    from autorag.ocr import store as ocr_store
    from autorag.runtime import server_model_threads

    engine = app.catalog.engine
    jobs = ocr_store.open_jobs(engine, app.info.id)
    task = progress.add_task("OCR", total=None, unit="pages")

    def tick() -> None:
        tally = ocr_store.tally(engine, jobs)
        progress.update(task, completed=tally.pages_done, total=tally.pages_total)

    # At least one thread: server.workers = 0 only says a server leaves jobs to workers.
    pool = WorkerPool(app, workers=max(1, app.settings.server.workers))
    with server_model_threads():
        pool.run_queued(kinds=[ocr_store.OCR_JOB], workspace_id=app.info.id, tick=tick)
    return ocr_store.tally(engine, jobs).statuses


def _print_refresh(report: RefreshReport) -> None:
    console.print(
        f"{plural(report.files_seen, 'file')}: {report.indexed} indexed, "
        f"{report.unchanged} unchanged, {report.failed} failed, {report.skipped} skipped, "
        f"{report.needs_ocr} need OCR, {report.deleted} removed",
        highlight=False,
    )
    for failure in report.failures[:20]:
        console.print(f"  [red]failed[/red] {failure.source_id}: {failure.error}", highlight=False)
    for skip in report.skips[:20]:
        why = f"skipped ({skip.error_code})"
        console.print(f"  [dim]{why}[/dim] {skip.source_id}: {skip.error}", highlight=False)
    shown = min(len(report.failures), 20) + min(len(report.skips), 20)
    if report.failed + report.skipped > shown:
        more = report.failed + report.skipped - shown
        console.print(f"  … and {more} more (see `autorag status`)", highlight=False)


def _print_ocr(queued: int, results: dict[str, int] | None) -> None:
    if results is None:
        if queued:
            console.print(
                f"{plural(queued, 'file')} queued for OCR: `autorag serve` or `autorag worker` "
                "reads them (or `autorag refresh --ocr-now`); follow them with `autorag ocr jobs`.",
                highlight=False,
            )
        return
    counts = ", ".join(f"{n} {status}" for status, n in sorted(results.items()))
    console.print(f"OCR: {counts or 'no scans were waiting'}", highlight=False)
    if results.get("review"):
        console.print(
            "Text below the quality bar waits for review: `autorag ocr jobs --status review`, "
            "then `autorag ocr approve ID` or `autorag ocr reject ID`.",
            highlight=False,
        )


def status(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Readiness (configured | degraded | unavailable | ready), counts and failed files."""
    workspace = current_workspace(ctx)
    readiness, roots = _status_of(workspace)
    if as_json:
        print_json(
            {
                **dataclasses.asdict(readiness),
                "workspace": str(workspace.root),
                "search_paths": [dataclasses.asdict(r) for r in roots],
            }
        )
        return
    _print_status(readiness, roots)


def _status_of(workspace: Workspace) -> tuple[Readiness, list[SourceRoot]]:
    """Readiness and search paths: read straight from a current SQLite catalog when it
    can be (a quarter of a second faster), else through the whole context."""
    from autorag.backup.presence import recover_interrupted
    from autorag.config import load_settings
    from autorag.ingest.readiness import quick_readiness

    recover_interrupted(workspace)  # as open_app does: a half-done restore first
    settings = load_settings(workspace.config_file)
    quick = quick_readiness(workspace, settings)
    if quick is not None:
        return quick, plan_source_roots(settings.search_paths)
    from autorag.context import open_context

    app = open_context(workspace)  # not open_app: the restore is already taken back
    return app.readiness(), app.roots


def _namespace(root: SourceRoot) -> str:
    """The ids a search path's files get: ``/prefix/…`` for a folder, ``/prefix`` for a file."""
    return f"/{root.prefix}/" if Path(root.path).is_dir() else f"/{root.prefix}"


def _print_status(readiness: Readiness, roots: list[SourceRoot]) -> None:
    colour = {"ready": "green", "degraded": "yellow", "configured": "cyan"}.get(
        readiness.state, "red"
    )
    console.print(f"[bold {colour}]{readiness.state}[/] — {readiness.reason}", highlight=False)
    for root in roots:
        console.print(f"  search path {_namespace(root)} ← {root.path}", highlight=False)
    counts = ", ".join(f"{n} {s}" for s, n in sorted(readiness.documents.items())) or "none"
    console.print(f"documents: {counts}; chunks: {readiness.chunks}; vectors: {readiness.vectors}")
    if readiness.last_refresh:
        run = readiness.last_refresh
        when = local_time(run["finished_at"] or run["started_at"])
        console.print(f"last refresh: {run['status']} at {when}", highlight=False)
    for rows, title in ((readiness.failed, "Failed files"), (readiness.skipped, "Skipped files")):
        if rows:
            table = Table("source", "code", "reason", title=title)
            for row in rows:
                table.add_row(row["name"], row["code"] or "", row["reason"] or "")
            console.print(table)


def reindex_command(ctx: typer.Context) -> None:
    """Rebuild vectors and the full-text index from the catalog, after a model change."""
    from autorag.ingest.minsync import refresh_lock
    from autorag.ingest.reindex import reindex

    app = open_app(ctx)
    with refresh_lock(app.workspace.refresh_lock_file):
        total = app.catalog.chunk_count(app.info.id)
        with Progress(console=console) as progress:
            task = progress.add_task("re-embedding chunks", total=total)
            count = reindex(
                app.catalog,
                app.info,
                app.fulltext,
                lambda: app.open_vectors(recreate=True),
                app.embedder,
                on_batch=lambda n: progress.advance(task, n),
            )
    console.print(f"Reindexed {plural(count, 'chunk')} with {app.embedder.model_id}.")
