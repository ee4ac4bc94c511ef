"""The server's maintenance mode: while it restores a backup, it answers nothing else.

A restore replaces the catalog and the workspace's files under the running server. For
that, ``Maintenance.restoring`` turns new requests away (503 "the server is restoring a
backup", except the liveness probe, the web UI's page and scripts, and the restore's
own status: none of them reads the catalog), waits for the
requests already running to finish, and only then lets the restore stop the workers and
close the catalog. ``MaintenanceGate`` is the ASGI middleware that counts requests in
and turns them away; the restore's progress is kept here for the status route.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from starlette.types import ASGIApp, Receive, Scope, Send

from autorag.api.errors import problem
from autorag.backup.models import Progress
from autorag.errors import Conflict, Unavailable

RESTORING = "the server is restoring a backup: try again in a few minutes"
RESTORE_STATUS_PATH = "/api/backups/restore/status"
# Answered while restoring: liveness, the web UI (it shows the restore), how far it is.
EXEMPT_PATHS = frozenset({"/healthz", "/", RESTORE_STATUS_PATH})
EXEMPT_PREFIX = "/ui/"
DRAIN_TIMEOUT_S = 60.0  # how long a restore waits for running requests to finish
RETRY_AFTER_S = 30


@dataclass(frozen=True)
class RestoreStatus:
    """Where the current (or the last) restore is."""

    restoring: bool
    started_at: datetime | None = None
    finished_at: datetime | None = None
    step: str | None = None  # the latest Progress step
    done: int = 0
    total: int | None = None
    message: str = ""
    error: str | None = None  # why the last restore failed


class Maintenance:
    """The maintenance flag, the count of requests running, and the restore's status."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0  # requests inside the app, not counting exempt ones
        self._status = RestoreStatus(restoring=False)

    @property
    def active(self) -> bool:
        return self._status.restoring

    @property
    def status(self) -> RestoreStatus:
        return self._status

    @contextmanager
    def request(self) -> Iterator[bool]:
        """Count one request in while it runs; yields False when it must be turned away."""
        with self._cond:
            if self._status.restoring:
                admitted = False
            else:
                admitted = True
                self._running += 1
        try:
            yield admitted
        finally:
            if admitted:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

    @contextmanager
    def restoring(
        self, *, own_requests: int = 1, timeout: float = DRAIN_TIMEOUT_S
    ) -> Iterator[None]:
        """Maintenance for the block: new requests are turned away at once, and the
        block starts when only ``own_requests`` (the restore's own) still run. Requests
        that do not finish within ``timeout`` make it give up (503), nothing touched."""
        with self._cond:
            if self._status.restoring:
                raise Conflict("a restore is already running", code="restore_running")
            self._status = RestoreStatus(
                restoring=True, started_at=datetime.now(UTC), step="waiting"
            )
            deadline = time.monotonic() + timeout
            while self._running > own_requests:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._status = RestoreStatus(restoring=False)
                    raise Unavailable(
                        f"{self._running - own_requests} request(s) still running after "
                        f"{timeout:.0f} s: the restore did not start, try again"
                    )
                self._cond.wait(left)
        error: str | None = None
        try:
            yield
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            with self._cond:
                self._status = replace(
                    self._status, restoring=False, finished_at=datetime.now(UTC), error=error
                )

    def progress(self, step: Progress) -> None:
        """A restore's progress callback: what the status route shows."""
        self._status = replace(
            self._status, step=step.step, done=step.done, total=step.total, message=step.message
        )


class MaintenanceGate:
    """Turns requests away with 503 while the server restores a backup (see the module)."""

    def __init__(self, app: ASGIApp, maintenance: Maintenance) -> None:
        self.app = app
        self.maintenance = maintenance

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _exempt(scope["path"]):
            await self.app(scope, receive, send)
            return
        with self.maintenance.request() as admitted:
            if admitted:
                await self.app(scope, receive, send)
                return
        response = problem(503, "restoring", RESTORING, instance=scope["path"])
        response.headers["retry-after"] = str(RETRY_AFTER_S)
        await response(scope, receive, send)


def _exempt(path: str) -> bool:
    return path in EXEMPT_PATHS or path.startswith(EXEMPT_PREFIX)
