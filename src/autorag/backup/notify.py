"""The failure e-mail: a backup that failed is told to ``backup.notify_email`` over the
SMTP server of ``backup.smtp`` (when one is set), so a broken schedule is not found out
on the day a restore is needed."""

from __future__ import annotations

import logging

from autorag.backup.models import BackupRun
from autorag.config import BackupSettings
from autorag.errors import AutoragError
from autorag.times import as_utc

log = logging.getLogger(__name__)

SUBJECT_ERROR_CHARS = 120  # of the error, in the subject line


def failure_subject(workspace: str, run: BackupRun) -> str:
    error = " ".join((run.error or "unknown error").split())
    short = error if len(error) <= SUBJECT_ERROR_CHARS else error[: SUBJECT_ERROR_CHARS - 1] + "…"
    return f"AutoRAG backup failed on {workspace}: {short}"


def failure_body(workspace: str, run: BackupRun) -> str:
    lines = [
        f"The backup of the workspace {workspace} failed.",
        "",
        f"Run: {run.id} ({run.trigger}{f', job {run.job}' if run.job else ''})",
        f"Destination: {run.destination}",
        f"Started: {as_utc(run.started_at).isoformat(timespec='seconds')}",
        f"Error: {run.error or 'unknown error'}",
        "",
        "Log:",
        *(f"  {line}" for line in run.log),
        "",
        f"See it with `autorag backup show {run.id}`, or the Backups page of the web UI.",
    ]
    return "\n".join(lines)


def send_failure(settings: BackupSettings, workspace: str, run: BackupRun) -> bool:
    """Mail the failed run to ``notify_email``; whether it was sent. Never raises: a mail
    server that is down is logged, and the run's own error stays what it was."""
    # Deferred: the destinations' modules are not needed until a backup fails.
    from autorag.backup.destinations.email import send_email

    if settings.smtp.host is None or not settings.notify_email:
        return False
    try:
        send_email(
            settings.smtp,
            settings.notify_email,
            subject=failure_subject(workspace, run),
            body=failure_body(workspace, run),
            where="the backup failure e-mail",
        )
    except AutoragError as exc:
        log.warning("the backup failure e-mail was not sent: %s", exc.message)
        return False
    return True
