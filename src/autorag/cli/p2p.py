"""``autorag p2p``: peers you trust to query you over SimpleX (seed 000)."""

from __future__ import annotations

import asyncio
import getpass
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from autorag.chat.service import ChatService
from autorag.cli._common import (
    console,
    current_workspace,
    err_console,
    local_time,
    open_app,
    print_json,
)
from autorag.context import AppContext
from autorag.dlp.service import DlpService
from autorag.errors import Unavailable
from autorag.p2p import wire
from autorag.p2p.approvals import Decision, approvals_of
from autorag.p2p.node import PeerNode
from autorag.p2p.registry import Peer, PeerRegistry
from autorag.p2p.startup import start_p2p

app = typer.Typer(help="Peer-to-peer queries over SimpleX.", no_args_is_help=True)
peers_app = typer.Typer(help="Trusted peers: the allowlist for peer queries (simplex-peers.json).")
app.add_typer(peers_app, name="peers")

NameArg = Annotated[str, typer.Argument(help="Your local name for the peer.")]


@peers_app.callback(invoke_without_command=True)
def list_peers(
    ctx: typer.Context,
    rank: Annotated[
        str | None,
        typer.Option("--rank", help="Order by match with your name and note and their profile."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """List trusted peers (local name, contactId, shared display name, note, last sync)."""
    if ctx.invoked_subcommand is not None:
        return
    registry = _registry(ctx)
    scored = registry.rank(rank) if rank is not None else [(p, None) for p in registry.peers()]
    if as_json:
        print_json([_peer_json(peer, score) for peer, score in scored])
        return
    if not scored:
        console.print("No trusted peers. Add one with `autorag p2p peers add NAME CONTACT_ID`.")
        return
    table = Table("name", "contactId", "displayName", "note", "synced")
    if rank is not None:
        table.add_column("score")
    for peer, score in scored:
        synced = local_time(peer.profile_synced_at) or "never"
        cells = [peer.name, str(peer.contact_id), peer.profile.display_name, peer.description]
        cells += [synced, *([f"{score:.2f}"] if score is not None else [])]
        # Text, not str: a peer chooses its display name, and markup in it must stay text.
        table.add_row(*map(Text, cells))
    console.print(table)


@peers_app.command("add")
def add(
    ctx: typer.Context,
    name: NameArg,
    contact_id: Annotated[int, typer.Argument(min=0, help="The SimpleX contactId.")],
    note: Annotated[str, typer.Option("--note", help="Your note about this peer.")] = "",
) -> None:
    """Trust a SimpleX contact: its queries will be answered (per source policy)."""
    peer = _registry(ctx).add(name, contact_id, note)
    console.print(f"Trusted {peer.name!r} (contact {peer.contact_id}).", highlight=False)


@peers_app.command("rm")
def remove(ctx: typer.Context, name: NameArg) -> None:
    """Stop trusting a peer (SimpleX keeps the contact)."""
    peer = _registry(ctx).remove(name)
    console.print(f"Removed {peer.name!r} (contact {peer.contact_id}).", highlight=False)


@peers_app.command("note")
def note(
    ctx: typer.Context,
    name: NameArg,
    text: Annotated[str, typer.Argument(help="The note (replaces the old one).")],
) -> None:
    """Set your note about a peer (used by --rank)."""
    peer = _registry(ctx).set_note(name, text)
    console.print(f"Note on {peer.name!r} updated.", highlight=False)


def _registry(ctx: typer.Context) -> PeerRegistry:
    registry = PeerRegistry(current_workspace(ctx).simplex_peers_file)
    registry.load()  # what it repaired is logged on stderr
    return registry


def _peer_json(peer: Peer, score: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": peer.name,
        "contactId": peer.contact_id,
        "profile": peer.profile.to_json(),
        "profileSyncedAt": peer.profile_synced_at,
        "description": peer.description,
    }
    if score is not None:
        out["score"] = score
    return out


# -- approvals ---------------------------------------------------------------------------------
@app.command("requests")
def list_requests(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Peer queries waiting for your approval: who asked, what, and which sources."""
    approvals = approvals_of(open_app(ctx))
    listed = approvals.pending()
    for path, why in approvals.unreadable():  # on stderr: --json output stays clean
        err_console.print(f"[yellow]skipped[/yellow] {path.name}: {why}", highlight=False)
    if as_json:
        print_json([{**r.to_json(), "status": s} for r, s in listed])
        return
    if not listed:
        console.print("No peer queries are waiting for approval.")
        return
    table = Table("id", "peer", "query", "sources", "status", "expires")
    for request, status in listed:
        sources = "\n".join(s.source for s in request.sources)
        cells = [request.id, request.peer, request.query, sources, status]
        table.add_row(*map(Text, [*cells, local_time(request.expires_at)]))
    console.print(table)


@app.command("approve")
def approve(
    ctx: typer.Context, request_id: Annotated[str, typer.Argument(help="Request id.")]
) -> None:
    """Let the results waiting in this request go to the peer (the server sends them)."""
    _decide(ctx, request_id, "approve")


@app.command("deny")
def deny(
    ctx: typer.Context, request_id: Annotated[str, typer.Argument(help="Request id.")]
) -> None:
    """Keep the results waiting in this request here; the peer gets the rest, if any."""
    _decide(ctx, request_id, "deny")


def _decide(ctx: typer.Context, request_id: str, decision: Decision) -> None:
    request = approvals_of(open_app(ctx)).decide(request_id, decision, by=getpass.getuser())
    done = {"approve": "approved", "deny": "denied"}[decision]
    console.print(Text(f"{done} request {request.id} from {request.peer}"))


# -- asking ------------------------------------------------------------------------------------
@app.command("ask")
def ask(
    ctx: typer.Context,
    peer: Annotated[str, typer.Argument(help="The peer's local name.")],
    query: Annotated[str, typer.Argument(help="Your question.")],
    k: Annotated[int, typer.Option("-k", min=1, max=20, help="Results wanted.")] = 5,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 120.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Ask a trusted peer over SimpleX, starting simplex-chat for the time of the question.

    While `autorag serve` runs with P2P on, it owns the SimpleX connection: ask through
    its API instead (POST /api/p2p/ask)."""
    app = open_app(ctx)
    reply = asyncio.run(_ask(app, peer, query, k, timeout, quiet=as_json))
    if as_json:
        print_json(reply.model_dump(exclude_none=True))
        return
    _print_reply(reply)


async def _ask(
    app: AppContext, peer: str, query: str, k: int, timeout: float, *, quiet: bool
) -> wire.Reply:
    settings = app.settings.p2p.model_copy(update={"enabled": True})
    runtime = await start_p2p(app, settings)
    if runtime is None:
        raise Unavailable("P2P could not start (see the line above)")
    node = PeerNode(
        app, runtime, ChatService.for_context(app), DlpService(app.catalog, app.settings.dlp)
    )
    serving = asyncio.create_task(node.run())
    try:
        pending = None if quiet else _say_pending
        return await node.ask(peer, query, k=k, timeout_s=timeout, on_pending=pending)
    finally:
        serving.cancel()
        await runtime.stop()


def _say_pending(reply: wire.Reply) -> None:
    err_console.print("the peer's owner must approve some results; waiting…", style="dim")


def _print_reply(reply: wire.Reply) -> None:
    if reply.answer:
        console.print(reply.answer, highlight=False, markup=False)
    for n, result in enumerate(reply.results, 1):
        where = f", page {result.page}" if result.page else ""
        console.print(Text(f"  [{n}] {result.source}{where}: {result.title}"))
    if reply.diagnostic is not None:
        diagnostic = reply.diagnostic
        console.print(
            Text(f"{diagnostic.severity}: {diagnostic.code} {diagnostic.message}".strip())
        )
