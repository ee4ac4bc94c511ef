"""``autorag backup``: encrypted backups of the workspace, verified and restored, on demand
or on a schedule."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from autorag.cli._common import (
    camel_json,
    console,
    err_console,
    local_time,
    open_app,
    plural,
    print_json,
)
from autorag.errors import AutoragError

if TYPE_CHECKING:
    from autorag.backup import models
    from autorag.backup.service import BackupService
    from autorag.context import AppContext

app = typer.Typer(
    help="Backups: encrypted, verified archives of the workspace; restore, schedules, keys.\n\n"
    "A backup holds the catalog (documents, chats, users, settings), the vectors, uploads, "
    "autorag.toml and the P2P registry, zipped and encrypted (AES-256-GCM) with the "
    "workspace's key, and is put at a destination: the local backup folder (default), "
    "local:/path, s3://bucket/prefix, sftp://user@host/path, ftp:// or ftps://, "
    "email:address, dropbox:/folder or gdrive:<folder id> (credentials go in autorag.toml's "
    "\\[backup] section, never in the URL). Jobs make backups on a cron schedule while "
    "`autorag serve` or `autorag worker` runs. A restore verifies the backup first and makes "
    "a safety backup of what it replaces.\n\n"
    "Example:\n\n"
    "  autorag backup run --to s3://my-bucket/autorag\n\n"
    "  autorag backup list\n\n"
    "  autorag backup verify 12\n\n"
    "  autorag backup restore 12\n\n"
    '  autorag backup jobs add nightly --cron "0 3 * * *" --to s3://my-bucket/autorag',
    no_args_is_help=True,
)
jobs_app = typer.Typer(
    help="Scheduled backups: a cron schedule, a destination, how long backups are kept.\n\n"
    "Jobs run while `autorag serve` or `autorag worker` runs on the workspace.",
    no_args_is_help=True,
)
key_app = typer.Typer(help="The key backups (and stored secrets) are encrypted with.")
app.add_typer(jobs_app, name="jobs")
app.add_typer(key_app, name="key", no_args_is_help=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
RefArg = Annotated[
    str,
    typer.Argument(
        metavar="ID|FILE",
        help="A run's id (see `autorag backup list`), an archive's name, or an archive file.",
    ),
]
JobArg = Annotated[str, typer.Argument(help="The job's name (see `autorag backup jobs list`).")]
STATUS_STYLE = {"succeeded": "green", "failed": "red", "running": "yellow"}
STEP_LABELS = {
    "dump": "catalog",
    "collect": "files",
    "archive": "archive",
    "upload": "upload",
    "verify": "verify",
    "safety": "safety backup",
    "restore": "restore",
    "vectors": "vectors",
}
SHA_SHOWN = 12  # characters of a checksum in a table


def _service(context: AppContext) -> BackupService:
    from autorag.backup.service import BackupService  # deferred: `autorag --help` stays fast

    return BackupService.for_context(context)


def _json(value: Any) -> Any:
    return camel_json(value)


def _size(size: int | None) -> str:
    from autorag.ingest.parsers.guards import human_size

    return "" if size is None else human_size(size)


def _status(status: str) -> str:
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/{style}]" if style else status


class _StepBars:
    """One progress bar per step (catalog, files, archive, upload…), on stderr; none
    with --json or when stderr is not a terminal. Steps run one after the other: a new
    one finishes the bars before it."""

    def __init__(self, *, disable: bool) -> None:
        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            TextColumn("{task.fields[amount]:>21}"),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[message]}"),
            console=err_console,
            disable=disable or not err_console.is_terminal,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _StepBars:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish_all()
        self.progress.__exit__(None, None, None)

    def show(self, step: models.Progress) -> None:
        task = self.tasks.get(step.step)
        if task is None:
            self._finish_all()
            label = STEP_LABELS.get(step.step, step.step)
            task = self.tasks[step.step] = self.progress.add_task(
                label, total=None, amount="", message=""
            )
        current = self.progress.tasks[task]
        total = step.total if step.total is not None else current.total
        done = max(step.done, current.completed)  # a message alone moves nothing back
        changes: dict[str, Any] = {"completed": done, "total": total}
        changes["amount"] = _amount(step.step, done, total)
        if step.message:
            changes["message"] = escape(step.message[:70])
        self.progress.update(task, **changes)

    def _finish_all(self) -> None:
        for task in self.tasks.values():
            current = self.progress.tasks[task]
            if not current.finished:
                finished = max(current.completed, current.total or 0, 1)
                self.progress.update(task, total=finished, completed=finished)


BYTE_STEPS = {"archive", "upload", "extract", "verify"}  # whose amounts are bytes


def _amount(step: str, done: float, total: float | None) -> str:
    if step in BYTE_STEPS:
        shown = _size(int(done))
        return f"{shown}/{_size(int(total))}" if total else shown
    return f"{int(done)}/{int(total)}" if total else str(int(done) or "")


# -- run, list, show --------------------------------------------------------------------
@app.command("run")
def run(
    ctx: typer.Context,
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="URL",
            help="Where to put it (default: \\[backup] destination, else the local backup "
            "folder): local:/path, s3://bucket/prefix, sftp://user@host/path, ftp://…, "
            "email:address, dropbox:/folder, gdrive:<folder id>.",
        ),
    ] = None,
    no_vectors: Annotated[
        bool,
        typer.Option(
            "--no-vectors",
            help="Leave the vectors out (smaller); a restore rebuilds them from the catalog.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Make a backup now, with a progress bar per step.

    The backup is encrypted with the workspace's key (`autorag backup key export` shows
    it: keep a copy somewhere safe, a backup cannot be restored without it).

    autorag backup run --to sftp://backup@nas.local/srv/autorag
    """
    service = _service(open_app(ctx))
    with _StepBars(disable=as_json) as bars:
        done = service.run(
            destination=to, include_vectors=False if no_vectors else None, progress=bars.show
        )
    if as_json:
        print_json(_json(done))
    elif done.status == "succeeded":
        console.print(
            f"Backup {done.id} stored as {escape(done.archive or '')} at "
            f"{escape(done.destination)} ({_size(done.size_bytes)}, sha256 {done.sha256}).",
            highlight=False,
        )
    if done.status != "succeeded":
        raise AutoragError(f"backup run {done.id} failed: {done.error or 'see its log'}")


@app.command("list")
def list_runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """List backups made and tried, newest first: manual, scheduled and safety ones.

    autorag backup list --limit 10
    """
    runs = _service(open_app(ctx)).runs(limit)
    if as_json:
        print_json(_json(runs))
        return
    if not runs:
        console.print("No backups yet: autorag backup run")
        return
    table = Table("id", "started", "status", "trigger", "size", "sha256", "destination")
    for column in (table.columns[0], table.columns[2], table.columns[4], table.columns[5]):
        column.no_wrap = True
    table.columns[-1].overflow = "fold"
    table.columns[-1].min_width = 16
    for one in runs:
        trigger = f"{one.trigger} ({one.job})" if one.job else one.trigger
        table.add_row(
            str(one.id),
            local_time(one.started_at),
            _status(one.status),
            escape(trigger),
            _size(one.size_bytes),
            (one.sha256 or "")[:SHA_SHOWN],
            escape(one.destination),
        )
    console.print(table)
    failed = [one for one in runs if one.status == "failed"]
    if failed:
        console.print(
            f"{plural(len(failed), 'failed run')}: `autorag backup show ID` says why.",
            highlight=False,
        )


@app.command("show")
def show(
    ctx: typer.Context,
    run_id: Annotated[int, typer.Argument(min=1, help="The run's id.")],
    as_json: JsonFlag = False,
) -> None:
    """Show a run: its archive, size, checksum, error and log.

    autorag backup show 12
    """
    found = _service(open_app(ctx)).get_run(run_id)
    if as_json:
        print_json(_json(found))
        return
    job = f", job {escape(found.job)}" if found.job else ""
    console.print(
        f"[bold]Backup {found.id}[/bold]: {_status(found.status)} ({found.trigger}{job}) · "
        f"started {local_time(found.started_at)}"
        + (f" · finished {local_time(found.finished_at)}" if found.finished_at else ""),
        highlight=False,
    )
    console.print(f"Destination: {escape(found.destination)}", highlight=False)
    if found.archive:
        console.print(
            f"Archive: {escape(found.archive)} ({_size(found.size_bytes)}), sha256 {found.sha256}",
            highlight=False,
        )
    if found.error:
        console.print(f"[red]Error: {escape(found.error)}[/red]", highlight=False)
    for line in found.log:
        console.print(f"  {line}", markup=False, highlight=False)


# -- verify, restore --------------------------------------------------------------------
@app.command("verify")
def verify(ctx: typer.Context, ref: RefArg, as_json: JsonFlag = False) -> None:
    """Check a backup without restoring it (nothing is touched).

    Its checksum, the decryption of every segment, the manifest, and every file's SHA-256.

    autorag backup verify 12
    """
    report = _service(open_app(ctx)).verify(_ref(ref))
    if as_json:
        print_json(_json(report))
    else:
        _verify_report(report)
    if not report.ok:
        raise AutoragError(f"{report.archive} did not verify", code="backup_invalid")


def _verify_report(report: models.VerifyReport) -> None:
    checksum = {True: "matches the one recorded", False: "[red]differs[/red]", None: "computed"}
    console.print(
        f"{escape(report.archive)}: {_size(report.size_bytes)}, sha256 {report.sha256} "
        f"({checksum[report.checksum_matches]})",
        highlight=False,
    )
    console.print(f"Decrypted: {'yes' if report.decrypted else '[red]no[/red]'}", highlight=False)
    manifest = report.manifest
    if manifest is not None:
        console.print(
            f"Made {local_time(manifest.created_at)} by AutoRAG {manifest.product_version}; "
            f"catalog {manifest.catalog_kind}, vectors "
            f"{'included' if manifest.vectors_included else 'to be rebuilt'}; "
            f"{plural(report.files_checked, 'file')} checked.",
            highlight=False,
        )
    if report.ok:
        console.print("[green]OK[/green]: the backup is whole and can be restored.")
    for problem in report.problems:
        console.print(f"[red]✗[/red] {escape(problem)}", highlight=False)


@app.command("restore")
def restore(
    ctx: typer.Context,
    ref: RefArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Replace the workspace's catalog, files and vectors with a backup's.

    The backup is verified first (nothing is touched if it does not verify), a safety
    backup of the current state is made into the local backup folder, then everything
    is replaced at once, or nothing is. Stop `autorag serve` and `autorag worker` on
    the workspace first (or restore from the web UI).

    autorag backup restore 12
    """
    context = open_app(ctx)
    service = _service(context)
    target = _ref(ref)
    if not yes:
        _confirm(context, target)
    with _StepBars(disable=as_json) as bars:
        report = service.restore(target, progress=bars.show)
    if as_json:
        print_json(_json(report))
        return
    safety = report.safety_run
    reindexed = report.documents_reindexed
    console.print(
        f"Restored {escape(report.archive)} (made {local_time(report.manifest.created_at)}); "
        f"vectors {report.vectors}"
        + (f", {plural(reindexed, 'document')} re-indexed" if reindexed else "")
        + ".",
        highlight=False,
    )
    if safety is not None:
        console.print(
            f"What it replaced is kept in backup {safety.id} ({escape(safety.archive or '')}): "
            f"`autorag backup restore {safety.id}` puts it back.",
            highlight=False,
        )
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)


def _confirm(context: AppContext, target: int | str | Path) -> None:
    root = context.workspace.root
    catalog = "its PostgreSQL catalog" if context.settings.database_url else "its catalog"
    err_console.print(
        f"Restoring replaces everything in the workspace {escape(str(root))}: {catalog} "
        "(documents, chats, users, settings, archives), its vectors, uploads, autorag.toml "
        "and P2P registry, with the backup's. A safety backup of the current state is made "
        "first.",
        highlight=False,
    )
    what = f"backup {target}" if isinstance(target, int) else str(target)
    typer.confirm(f"Restore {what}?", abort=True, err=True)


def _ref(ref: str) -> int | str | Path:
    """A run id, an archive file (a path that exists), or an archive's name."""
    text = ref.strip()
    if text.isdigit():
        return int(text)
    path = Path(text).expanduser()
    return path.resolve() if path.is_file() else text


# -- rekey, key export ------------------------------------------------------------------
@app.command("rekey")
def rekey(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Re-encrypt stored secrets (DLP originals, model API keys…) under the current key.

    Run it after setting a new AUTORAG_ENCRYPTION_KEY (with the old one in
    AUTORAG_PREVIOUS_ENCRYPTION_KEYS). Backups made before keep opening with the previous
    keys.
    """
    report = _service(open_app(ctx)).rekey()
    if as_json:
        print_json(_json(report))
        return
    resealed = sum(report.resealed.values())
    console.print(f"Resealed {plural(resealed, 'secret')} under the current key.", highlight=False)
    for purpose, count in sorted(report.resealed.items()):
        console.print(f"  {escape(purpose)}: {count}", highlight=False)
    if report.failed:
        for purpose, count in sorted(report.failed.items()):
            err_console.print(
                f"[yellow]{escape(purpose)}: {plural(count, 'value')} no key opens, left as "
                "they were[/yellow]",
                highlight=False,
            )
        raise AutoragError(f"{sum(report.failed.values())} secrets could not be resealed")


@key_app.command("export")
def key_export(ctx: typer.Context) -> None:
    """Print the current encryption key (base64), to restore on another machine.

    There, set AUTORAG_ENCRYPTION_KEY to it before `autorag backup restore`. Anyone with
    the key and a backup can read the backup: keep it as you keep a password.
    """
    from autorag.cli._common import current_workspace
    from autorag.keyring import encode_key, key_fingerprint, workspace_keyring

    keyring = workspace_keyring(current_workspace(ctx).data_dir)
    err_console.print(
        "[yellow]warning:[/yellow] this is the key that opens every backup of this workspace "
        f"(fingerprint {key_fingerprint(keyring.current)}). Keep it secret and safe; on a new "
        "machine, set AUTORAG_ENCRYPTION_KEY to it to restore.",
        highlight=False,
    )
    typer.echo(encode_key(keyring.current))
    sys.stdout.flush()


# -- jobs ------------------------------------------------------------------------------
@jobs_app.command("add")
def jobs_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for the job: letters, digits, . _ -")],
    cron: Annotated[
        str,
        typer.Option(
            "--cron", help='When, as five cron fields in this machine\'s time zone: "0 3 * * *".'
        ),
    ],
    to: Annotated[str, typer.Option("--to", metavar="URL", help="Where its backups go.")],
    retention_days: Annotated[
        int | None,
        typer.Option(
            "--retention-days", min=1, help="Delete its backups older than this (default 30)."
        ),
    ] = None,
    no_vectors: Annotated[
        bool, typer.Option("--no-vectors", help="Leave the vectors out of its backups.")
    ] = False,
    disabled: Annotated[bool, typer.Option("--disabled", help="Add it paused.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Add a job making a backup on a cron schedule.

    autorag backup jobs add nightly --cron "0 3 * * *" --to s3://bucket/autorag --retention-days 30
    """
    job = _service(open_app(ctx)).add_job(
        name,
        cron=cron,
        destination=to,
        retention_days=retention_days,
        include_vectors=False if no_vectors else None,
        enabled=not disabled,
    )
    if as_json:
        print_json(_json(job))
        return
    console.print(
        f"Job {escape(job.name)}: {escape(job.cron)} to {escape(job.destination)}, backups "
        f"kept {plural(job.retention_days, 'day')}{'' if job.enabled else ' (disabled)'}. It "
        "runs while `autorag serve` or `autorag worker` runs.",
        highlight=False,
    )


@jobs_app.command("list")
def jobs_list(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the jobs, with each one's last run."""
    jobs = _service(open_app(ctx)).jobs()
    if as_json:
        print_json(_json(jobs))
        return
    if not jobs:
        console.print('No backup jobs: autorag backup jobs add NAME --cron "0 3 * * *" --to URL')
        return
    table = Table("name", "cron", "destination", "kept", "vectors", "enabled", "last run")
    table.columns[2].overflow = "fold"
    for job in jobs:
        last = job.last_run
        table.add_row(
            escape(job.name),
            escape(job.cron),
            escape(job.destination),
            plural(job.retention_days, "day"),
            "yes" if job.include_vectors else "no",
            "yes" if job.enabled else "[dim]no[/dim]",
            f"{last.id} {_status(last.status)} {local_time(last.started_at)}" if last else "",
        )
    console.print(table)


@jobs_app.command("remove")
def jobs_remove(ctx: typer.Context, name: JobArg) -> None:
    """Remove a job: it runs no more. Its backups and their history stay."""
    _service(open_app(ctx)).remove_job(name)
    console.print(f"Removed job {escape(name)}.", highlight=False)


@jobs_app.command("enable")
def jobs_enable(ctx: typer.Context, name: JobArg, as_json: JsonFlag = False) -> None:
    """Let a job run on its schedule again."""
    _switch(ctx, name, enabled=True, as_json=as_json)


@jobs_app.command("disable")
def jobs_disable(ctx: typer.Context, name: JobArg, as_json: JsonFlag = False) -> None:
    """Pause a job: it keeps its settings and backups, and runs no more until enabled."""
    _switch(ctx, name, enabled=False, as_json=as_json)


def _switch(ctx: typer.Context, name: str, *, enabled: bool, as_json: bool) -> None:
    job = _service(open_app(ctx)).update_job(name, enabled=enabled)
    if as_json:
        print_json(_json(job))
        return
    console.print(f"Job {escape(name)} {'enabled' if enabled else 'disabled'}.", highlight=False)
