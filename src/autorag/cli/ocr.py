"""``autorag ocr``: OCR jobs of the workspace, their pages, and the review of results
below the quality bar."""

from __future__ import annotations

import getpass
from contextlib import nullcontext
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from autorag.cli._common import console, local_time, open_app, print_json
from autorag.errors import InvalidInput
from autorag.ocr import service, store

app = typer.Typer(
    help="OCR of scanned pages and images: jobs, per-page results, approve or reject.\n\n"
    "Scans and images, uploaded or found by `autorag refresh`, are read by OCR in "
    "background workers (`autorag serve`, `autorag worker`, `autorag refresh --ocr-now`). "
    "Text below the quality bar (ocr.review_below_quality, ocr.review_below_credibility) "
    "waits here, status 'review', until approved (indexed) or rejected (never indexed).",
    no_args_is_help=True,
)
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
JobArg = Annotated[int, typer.Argument(min=1, help="The OCR job's id (see `autorag ocr jobs`).")]


@app.command("jobs")
def list_jobs(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(help="Only this status: " + ", ".join(store.JOB_STATUSES) + "."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 100,
    as_json: JsonFlag = False,
) -> None:
    """List OCR jobs, newest first, with progress and scores."""
    if status is not None and status not in store.JOB_STATUSES:
        raise InvalidInput(f"unknown status {status!r} (known: {', '.join(store.JOB_STATUSES)})")
    context = open_app(ctx)
    jobs, _total = store.list_jobs(
        context.catalog.engine, context.info.id, status=status, limit=limit
    )
    if as_json:
        print_json([job_json(job) for job in jobs])
        return
    if not jobs:
        console.print("No OCR jobs.")
        return
    table = Table("id", "status", "pages", "quality", "credibility", "engine", "document")
    for job in jobs:
        table.add_row(
            str(job.id),
            job.status,
            f"{job.pages_done}/{job.pages_total}",
            _score(job.quality),
            _score(job.credibility),
            job.engine or "",
            Text(job.title or job.source_id),
        )
    console.print(table)


@app.command("show")
def show_job(ctx: typer.Context, job_id: JobArg, as_json: JsonFlag = False) -> None:
    """Show one OCR job and each page: status, engine, scores, characters, text."""
    context = open_app(ctx)
    job = store.get_job(context.catalog.engine, job_id, workspace_id=context.info.id)
    pages = store.pages(context.catalog.engine, job_id)
    if as_json:
        print_json({**job_json(job), "pages": [page_json(p) for p in pages]})
        return
    for label, value in _job_lines(job):
        console.print(f"{label:<12} {value}", highlight=False, markup=False)
    for page in pages:
        note = f"  ({page.reason})" if page.reason else ""
        line = (
            f"page {page.page}: {page.status}, {page.engine or '-'}, quality "
            f"{_score(page.confidence)}, credibility {_score(page.credibility)}, "
            f"{page.chars} chars{note}"
        )
        console.print(line, highlight=False, markup=False)
        if page.text:
            console.print(Text(_indent(page.text)))


@app.command("approve")
def approve(ctx: typer.Context, job_id: JobArg) -> None:
    """Index the text of a job waiting for review."""
    context = open_app(ctx)
    job = service.approve(
        context,
        job_id,
        reviewer=_reviewer(),
        user_id=None,
        indexer=context.indexer,
        guard=nullcontext,
    )
    console.print(f"OCR job {job.id}: {job.status}.", highlight=False, markup=False)


@app.command("reject")
def reject(ctx: typer.Context, job_id: JobArg) -> None:
    """Drop the text of a job waiting for review: it is never indexed."""
    context = open_app(ctx)
    job = service.reject(context, job_id, reviewer=_reviewer(), user_id=None)
    console.print(f"OCR job {job.id}: {job.status}.", highlight=False, markup=False)


def job_json(job: store.OcrJob) -> dict[str, Any]:
    return {
        "id": job.id,
        "documentId": job.document_id,
        "title": job.title,
        "sourceId": job.source_id,
        "mode": job.mode,
        "status": job.status,
        "engine": job.engine,
        "pagesDone": job.pages_done,
        "pagesTotal": job.pages_total,
        "quality": job.quality,
        "credibility": job.credibility,
        "reason": job.reason,
        "reviewedBy": job.reviewed_by,
        "reviewedAt": job.reviewed_at.isoformat() if job.reviewed_at else None,
        "createdAt": job.created_at.isoformat(),
        "updatedAt": job.updated_at.isoformat(),
    }


def page_json(page: store.OcrPage) -> dict[str, Any]:
    return {
        "page": page.page,
        "status": page.status,
        "engine": page.engine,
        "confidence": page.confidence,
        "credibility": page.credibility,
        "chars": page.chars,
        "rotation": page.rotation,
        "reason": page.reason,
        "text": page.text,
    }


def _job_lines(job: store.OcrJob) -> list[tuple[str, str]]:
    lines = [
        ("job", str(job.id)),
        ("document", f"{job.document_id} {job.source_id}"),
        ("status", job.status),
        ("mode", job.mode),
        ("progress", f"{job.pages_done}/{job.pages_total} pages"),
        ("quality", _score(job.quality)),
        ("credibility", _score(job.credibility)),
        ("engine", job.engine or "-"),
    ]
    if job.reason:
        lines.append(("reason", job.reason))
    if job.reviewed_by:
        lines.append(("reviewed", f"by {job.reviewed_by} at {local_time(job.reviewed_at)}"))
    return lines


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


def _reviewer() -> str:
    # The CLI runs as the workspace's owner on this machine: the audit names the account.
    try:
        return f"cli:{getpass.getuser()}"
    except OSError:
        return "cli"
