"""Bringing P2P up for ``autorag serve`` (seed 000's start-up sequence).

``start_p2p`` starts simplex-chat, connects to its bot API and then, before any peer
query is accepted:

1. reads ``/_contacts`` and merges each shared profile into the records already
   trusted (stamping ``profileSyncedAt``);
2. reports on stderr each SimpleX contact with no trusted record (it is never added:
   the registry stays the allowlist) and each trusted record SimpleX no longer lists;
3. prints the non-fatal warning when MinSync retrieval is not ``ready``.

Every failure is reported on stderr in one line and P2P stays off (None), so the server
still serves everything else.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autorag.config import P2PSettings
from autorag.context import AppContext
from autorag.errors import AutoragError
from autorag.ingest.readiness import Readiness
from autorag.p2p.registry import MergeReport, PeerRegistry
from autorag.p2p.simplex.client import SimplexClient
from autorag.p2p.simplex.process import SimplexProcess, start_simplex

Report = Callable[[str], None]

REFRESH_HINT = "autorag refresh --method minsync"


@dataclass
class P2PRuntime:
    """What a running peer server needs: the connected client and the registry."""

    client: SimplexClient
    registry: PeerRegistry
    process: SimplexProcess
    user_id: int
    settings: P2PSettings

    async def stop(self) -> None:
        """Close the connection, then end simplex-chat (SIGTERM, then SIGKILL)."""
        await self.client.close()
        await asyncio.to_thread(self.process.stop)


async def start_p2p(
    app: AppContext, settings: P2PSettings | None = None, *, report: Report | None = None
) -> P2PRuntime | None:
    """Start P2P as configured (``app.settings.p2p`` unless given); None when it is off.

    None means: ``p2p.enabled`` is false, the simplex-chat binary is missing, or start-up
    failed; the reason (if any) has been written to stderr (or to ``report``).
    """
    settings = settings or app.settings.p2p
    say = report or _stderr
    if not settings.enabled:
        return None
    try:
        registry = PeerRegistry(app.workspace.simplex_peers_file)
        registry.load()  # repairs its mode; its warnings are logged
    except AutoragError as exc:
        say(f"p2p: off: {exc.message}")
        return None
    process = await _start_process(app, settings, say)
    if process is None:
        return None
    try:
        return await _connect(app, settings, registry, process, say)
    except AutoragError as exc:
        await asyncio.to_thread(process.stop)
        say(f"p2p: off: {exc.message}")
        return None


def db_prefix(app: AppContext, settings: P2PSettings) -> Path:
    """``p2p.simplexDbPrefix`` (relative to the workspace folder), or the default."""
    if settings.simplex_db_prefix is None:
        return app.workspace.simplex_db_prefix
    prefix = settings.simplex_db_prefix.expanduser()
    return prefix if prefix.is_absolute() else app.workspace.root / prefix


def readiness_warning(readiness: Readiness) -> str | None:
    """Seed 000's non-fatal warning, or None when MinSync retrieval is ready."""
    if readiness.state == "ready":
        return None
    return (
        f"warning: MinSync retrieval is {readiness.state}, not ready ({readiness.reason}). "
        "Peer queries answered from an unready index look like empty corpora; "
        f"refresh first with `{REFRESH_HINT}`."
    )


def report_merge(merge: MergeReport, say: Report) -> None:
    # Names come from other people: !r escapes control characters and terminal codes.
    for contact in merge.untrusted:
        say(
            f"p2p: SimpleX contact {contact.contact_id} ({contact.local_display_name!r}) "
            "is not a trusted peer: its queries will be refused "
            f"(to trust it: autorag p2p peers add NAME {contact.contact_id})"
        )
    for peer in merge.missing:
        say(
            f"p2p: trusted peer {peer.name!r} (contact {peer.contact_id}) "
            "is not among simplex-chat's contacts"
        )


async def _start_process(
    app: AppContext, settings: P2PSettings, say: Report
) -> SimplexProcess | None:
    try:
        return await start_simplex(
            binary=settings.simplex_binary,
            db_prefix=db_prefix(app, settings),
            port=settings.ws_port,
            bot_name=settings.bot_name,
            log_file=app.workspace.simplex_log_file,
            start_timeout=settings.start_timeout_s,
        )
    except (AutoragError, OSError) as exc:
        say(f"p2p: off: simplex-chat did not start: {getattr(exc, 'message', exc)}")
        return None


async def _connect(
    app: AppContext,
    settings: P2PSettings,
    registry: PeerRegistry,
    process: SimplexProcess,
    say: Report,
) -> P2PRuntime:
    client = SimplexClient(
        process.url,
        command_timeout=settings.command_timeout_s,
        max_message_bytes=settings.max_message_bytes,
    )
    await client.connect(timeout=settings.start_timeout_s)
    try:
        user_id = await client.active_user_id()
        contacts = await client.contacts(user_id)
        merge = await asyncio.to_thread(registry.merge_profiles, contacts)  # it fsyncs
    except BaseException:
        await client.close()
        raise
    report_merge(merge, say)
    warning = readiness_warning(await _readiness(app))
    if warning is not None:
        say(warning)
    return P2PRuntime(client, registry, process, user_id, settings)


async def _readiness(app: AppContext) -> Readiness:
    try:
        return await asyncio.to_thread(app.readiness)
    except AutoragError as exc:
        return Readiness("unavailable", exc.message)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
