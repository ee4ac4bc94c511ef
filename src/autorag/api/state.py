"""The server's state: every long-lived part of a running server, in one typed object.

``running_server`` builds and starts the parts in the order they need each other, and
stops them in reverse: the hold on the workspace (``autorag.backup.presence``: a restore
from the command line refuses while a server runs), the context (catalog, stores), the
authentication state, the services (chat, DLP, the search limiter), the background
workers, the backup scheduler, the event dispatcher (webhooks, push), the model router's
polling, and last P2P, which answers peers through the chat and DLP services. Routes
reach the parts through the dependencies in ``autorag.api.deps``.

A restore through the API (``restore_backup``) replaces the catalog and the files under
the running server: in maintenance (``autorag.api.maintenance``), with the workers and
the scheduler stopped and the catalog closed, then reopened and started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import queue
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anyio import CapacityLimiter
from starlette.concurrency import run_in_threadpool

from autorag.api.maintenance import Maintenance
from autorag.auth.ratelimit import LoginGuard
from autorag.auth.tokens import TokenSigner, load_or_create_secret
from autorag.backup.models import BackupRun, RestoreReport
from autorag.backup.presence import hold_workspace
from autorag.backup.scheduler import BackupScheduler
from autorag.backup.service import BackupService
from autorag.chat.service import ChatService
from autorag.context import AppContext, open_context
from autorag.dlp.service import DlpService
from autorag.errors import AutoragError
from autorag.jobs.delivery_process import ServerDelivery
from autorag.jobs.worker import WorkerPool
from autorag.p2p.approvals import approvals_of
from autorag.p2p.node import PeerNode
from autorag.p2p.peer_search import PeerSearch
from autorag.p2p.startup import start_p2p
from autorag.workspace import Workspace

log = logging.getLogger(__name__)

BACKUP_STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class AuthState:
    """How requests are authenticated: tokens, the login limits, the trusted proxies."""

    signer: TokenSigner
    login_guard: LoginGuard
    trusted_proxies: frozenset[str]  # whose X-Forwarded-For names the client


@dataclass
class ServerState:
    """What a running server holds, from start-up to shutdown. ``auth`` and ``workers``
    are replaced after a restore (the key files and the catalog may be others)."""

    context: AppContext
    auth: AuthState
    chat: ChatService
    dlp: DlpService  # one per server: its pattern cache is shared by every request
    search_limiter: CapacityLimiter
    workers: WorkerPool
    p2p: PeerNode | None  # None: P2P is off, or did not start (said on stderr)
    maintenance: Maintenance
    backups: ServerBackups
    events: ServerDelivery | None = None  # delivers the event log (webhooks, push)
    overrides: dict[str, Any] = field(default_factory=dict)  # settings given to the server


@asynccontextmanager
async def running_server(
    workspace: Workspace,
    *,
    warm: bool = False,
    maintenance: Maintenance | None = None,
    **overrides: Any,
) -> AsyncIterator[ServerState]:
    """The state of a server on ``workspace``, started; stopped in reverse at exit.
    ``warm``: load the model and indexes in the background (``server.warm_up``);
    ``maintenance``: the one the app's ``MaintenanceGate`` honours."""
    async with AsyncExitStack() as stack:
        stack.enter_context(hold_workspace(workspace))
        context = open_context(workspace, **overrides)
        stack.callback(context.close)
        auth = auth_state(context)
        chat = ChatService.for_context(context)
        dlp = DlpService(context.catalog, context.settings.dlp)
        limiter = search_slots(context.settings.server.search_threads)
        workers = start_workers(context)
        if warm and context.settings.server.warm_up:
            threading.Thread(target=context.warm_up, name="warm-up", daemon=True).start()
        backups = ServerBackups(context)
        backups.start()
        state = ServerState(
            context, auth, chat, dlp, limiter, workers, None, maintenance or Maintenance(),
            backups, overrides=overrides,
        )  # fmt: skip
        stack.push_async_callback(run_in_threadpool, lambda: state.workers.stop())
        stack.push_async_callback(run_in_threadpool, backups.stop)
        state.events = server_delivery(context, overrides)
        stack.push_async_callback(run_in_threadpool, lambda: _stop_events(state))
        chat.router.start_polling(context.settings.llm.poll_seconds)
        stack.callback(chat.router.stop_polling)
        state.p2p = await stack.enter_async_context(peer_node(context, chat, dlp))
        yield state


def _stop_events(server: ServerState) -> None:
    if server.events is not None:
        server.events.stop()
        server.events = None


def server_delivery(context: AppContext, overrides: dict[str, Any]) -> ServerDelivery | None:
    """The server's event delivery, started; None when ``events.deliver_in_server`` is
    off (deliveries left to ``autorag worker`` processes). ``overrides``: the settings
    the server was given, for its delivery process to open the same catalog alike."""
    events = context.settings.events
    if not events.deliver_in_server:
        return None
    delivery = ServerDelivery(context, overrides, process=events.delivery_process)
    delivery.start()
    return delivery


def start_workers(context: AppContext) -> WorkerPool:
    workers = WorkerPool(context, workers=context.settings.server.workers)
    workers.start()
    return workers


def auth_state(context: AppContext) -> AuthState:
    """The signing secret (created on first use) and the limits ``server`` sets."""
    server = context.settings.server
    secret = load_or_create_secret(context.workspace.data_dir)
    for proxy in server.trusted_proxies:
        ipaddress.ip_network(proxy, strict=False)  # a typo fails the start, not a login
    return AuthState(
        TokenSigner(secret, server.token_ttl_minutes * 60),
        LoginGuard(server.login_attempts_per_minute),
        frozenset(server.trusted_proxies),
    )


def search_slots(threads: int) -> CapacityLimiter:
    """The limiter of HTTP searches: ``threads`` at once, or one per core (at least 2)."""
    return CapacityLimiter(threads or max(2, os.cpu_count() or 2))


@asynccontextmanager
async def peer_node(
    context: AppContext, chat: ChatService, dlp: DlpService
) -> AsyncIterator[PeerNode | None]:
    """With ``p2p.enabled``: simplex-chat started, peers merged, queries served, and the
    agent's ``peer_search`` skill registered. When the binary is missing or start-up
    fails the server says so once (``start_p2p``) and serves everything else: None."""
    runtime = await start_p2p(context)
    if runtime is None:
        yield None
        return
    node = PeerNode(
        context,
        runtime,
        chat,
        dlp,
        query_timeout_s=context.settings.p2p.query_timeout_s,
        approvals=approvals_of(context),
    )
    chat.register_skill(PeerSearch(node, context.settings.p2p.peers_asked))
    serving = asyncio.create_task(node.run())
    try:
        yield node
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await serving
        await runtime.stop()


# -- backups ------------------------------------------------------------------------------
class ServerBackups:
    """The server's part of backups: the scheduler running the jobs, and the backups a
    person starts here (each in a thread of its own)."""

    def __init__(self, context: AppContext) -> None:
        self.context = context
        self._scheduler: BackupScheduler | None = None
        self._started: list[threading.Thread] = []  # backups started here, while they run

    def service(self) -> BackupService:
        """A service for one use (the keyring read again: a rotated key is used)."""
        return BackupService.for_context(self.context)

    def start(self) -> None:
        """Schedule the enabled jobs (the scheduler first fails the runs a killed
        process left ``running``)."""
        self._scheduler = BackupScheduler(BackupService.for_context(self.context))
        self._scheduler.start()

    def stop(self, timeout: float = BACKUP_STOP_TIMEOUT_S) -> None:
        """No more scheduled runs start; a backup started here may finish (up to
        ``timeout``: one still running then is marked interrupted at the next start)."""
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        deadline = time.monotonic() + timeout
        for thread in self._started:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._started = [thread for thread in self._started if thread.is_alive()]

    def reload(self) -> None:
        """The jobs changed: schedule them again."""
        if self._scheduler is not None:
            self._scheduler.reload()

    def trigger(
        self, *, destination: str | None, job: str | None, include_vectors: bool | None
    ) -> BackupRun:
        """Start a backup in the background; its run once it holds the mutex, or the
        reason it could not start (``Conflict`` while another backup runs)."""
        service = self.service()
        started: queue.Queue[BackupRun | Exception] = queue.Queue()

        def work() -> None:
            try:
                service.run(
                    destination=destination,
                    job=job,
                    trigger="manual",
                    include_vectors=include_vectors,
                    on_start=started.put,
                )
            except Exception as exc:  # before it started: the request's answer
                started.put(exc)
                if not isinstance(exc, AutoragError):
                    log.exception("the backup started from the API stopped")

        thread = threading.Thread(target=work, name="backup", daemon=True)
        self._started = [t for t in self._started if t.is_alive()] + [thread]
        thread.start()
        first = started.get()
        if isinstance(first, Exception):
            raise first
        return first


# The server keeps the settings it started with: the catalog's address, the vector store,
# the models and its own limits are not changed under running requests.
SETTINGS_RESTORED = (
    "the restore changed autorag.toml: restart the server for the restored settings to take effect"
)


def restore_backup(server: ServerState, ref: int | str) -> RestoreReport:
    """Restore a backup under the running server: in maintenance (new requests 503,
    running ones finished first), the scheduler and the workers stopped and the catalog
    closed; afterwards (restored or not: a restore is all or nothing) everything is
    opened and started again on what is there."""
    config = server.context.workspace.config_file
    started_with = _read(config)
    with server.maintenance.restoring():
        server.backups.stop()
        server.workers.stop()
        _stop_events(server)
        server.context.reset()
        try:
            service = server.backups.service()
            report = service.restore(ref, progress=server.maintenance.progress, in_server=True)
        finally:
            _reopen(server)
    if _read(config) != started_with:
        report = replace(report, warnings=(*report.warnings, SETTINGS_RESTORED))
    return report


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _reopen(server: ServerState) -> None:
    context = server.context
    context.reopen()  # connections opened during the restore may see the replaced files
    server.auth = auth_state(context)  # the restored signing secret, if another
    server.dlp.invalidate()
    server.workers = start_workers(context)
    server.events = server_delivery(context, server.overrides)
    server.backups.start()
