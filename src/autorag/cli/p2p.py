"""``autorag p2p``: peers you trust to query you over SimpleX (seed 000)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from autorag.cli._common import console, current_workspace, print_json
from autorag.p2p.registry import Peer, PeerRegistry

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
        synced = peer.profile_synced_at.isoformat() if peer.profile_synced_at else "never"
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
