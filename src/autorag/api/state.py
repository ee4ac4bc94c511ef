"""The server's state: every long-lived part of a running server, in one typed object.

``running_server`` builds and starts the parts in the order they need each other, and
stops them in reverse: the context (catalog, stores), the authentication state, the
services (chat, DLP, the search limiter), the background workers, the model router's
polling, and last P2P, which answers peers through the chat and DLP services. Routes
reach the parts through the dependencies in ``autorag.api.deps``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import threading
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from anyio import CapacityLimiter
from starlette.concurrency import run_in_threadpool

from autorag.auth.ratelimit import LoginGuard
from autorag.auth.tokens import TokenSigner, load_or_create_secret
from autorag.chat.service import ChatService
from autorag.context import AppContext, open_context
from autorag.dlp.service import DlpService
from autorag.jobs.worker import WorkerPool
from autorag.p2p.approvals import approvals_of
from autorag.p2p.node import PeerNode
from autorag.p2p.peer_search import PeerSearch
from autorag.p2p.startup import start_p2p
from autorag.workspace import Workspace


@dataclass(frozen=True)
class AuthState:
    """How requests are authenticated: tokens, the login limits, the trusted proxies."""

    signer: TokenSigner
    login_guard: LoginGuard
    trusted_proxies: frozenset[str]  # whose X-Forwarded-For names the client


@dataclass(frozen=True)
class ServerState:
    """What a running server holds, from start-up to shutdown."""

    context: AppContext
    auth: AuthState
    chat: ChatService
    dlp: DlpService  # one per server: its pattern cache is shared by every request
    search_limiter: CapacityLimiter
    workers: WorkerPool
    p2p: PeerNode | None  # None: P2P is off, or did not start (said on stderr)


@asynccontextmanager
async def running_server(
    workspace: Workspace, *, warm: bool = False, **overrides: Any
) -> AsyncIterator[ServerState]:
    """The state of a server on ``workspace``, started; stopped in reverse at exit.
    ``warm``: load the model and indexes in the background (``server.warm_up``)."""
    async with AsyncExitStack() as stack:
        context = open_context(workspace, **overrides)
        stack.callback(context.close)
        auth = auth_state(context)
        chat = ChatService.for_context(context)
        dlp = DlpService(context.catalog, context.settings.dlp)
        limiter = search_slots(context.settings.server.search_threads)
        workers = WorkerPool(context, workers=context.settings.server.workers)
        workers.start()
        if warm and context.settings.server.warm_up:
            threading.Thread(target=context.warm_up, name="warm-up", daemon=True).start()
        stack.push_async_callback(run_in_threadpool, workers.stop)
        chat.router.start_polling(context.settings.llm.poll_seconds)
        stack.callback(chat.router.stop_polling)
        node = await stack.enter_async_context(peer_node(context, chat, dlp))
        yield ServerState(context, auth, chat, dlp, limiter, workers, node)


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
