"""``autorag import``: bring datasources (chat exports) into the index."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autorag.cli._common import console, err_console, open_app, print_json
from autorag.datasources import ImportReport, import_kakao
from autorag.ingest.pipeline import IngestOutcome

app = typer.Typer(help="Import datasources (chat exports) into the index.", no_args_is_help=True)


class _ProgressObserver:
    """A progress bar over the chunks an import has to index, shown once there are some.

    Started only then: a file rejected while it is read leaves no empty bar behind.
    """

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("indexing chunks", total=None)
        self.started = False

    def planned(self, to_index: int, unchanged: int, to_delete: int) -> None:
        self.progress.update(self.task, total=to_index)
        if to_index:
            self.progress.start()
            self.started = True

    def done(self, outcome: IngestOutcome) -> None:
        self.progress.advance(self.task)

    def close(self) -> None:
        if self.started:  # stopping an unstarted bar still prints a blank line
            self.progress.stop()


@app.command("kakao")
def kakao(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A KakaoTalk chat export (.txt).")],
    instance: Annotated[
        str,
        typer.Option(
            "--instance",
            help="Name for this chat (lowercase letters, digits, '-', '_'); its chunks are"
            " /kakao/NAME/chunks/chunk-N. Import a newer export under the same name to update.",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Index a KakaoTalk chat export (PC or mobile, Korean or English).

    Re-importing the same export is a no-op; a newer export of the chat updates its chunks.
    """
    context = open_app(ctx)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,  # progress on stderr keeps stdout clean for --json
        disable=as_json,
    )
    observer = _ProgressObserver(progress)
    try:
        report = import_kakao(context, file, instance, observer=observer)
    finally:
        observer.close()
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    _print_report(report)


def _print_report(report: ImportReport) -> None:
    console.print(
        f"KakaoTalk {report.chat} ({report.format}, {report.encoding}) → /kakao/{report.instance}/",
        highlight=False,
    )
    console.print(
        f"messages: {report.messages} (attachments skipped: {report.media}),"
        f" chunks: {report.chunks} — {report.indexed} indexed, {report.unchanged} unchanged,"
        f" {report.removed} removed, {report.failed} failed",
        highlight=False,
    )
    for failure in report.failures[:20]:
        console.print(f"  [red]failed[/red] {failure.source_id}: {failure.error}", highlight=False)
