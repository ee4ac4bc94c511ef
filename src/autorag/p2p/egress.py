"""The egress gate: what a peer query may take away.

Every result's source goes through the source policy (``share`` leaves, ``ask`` waits for
the owner's approval, ``private`` and invalid sources stay); every text that leaves goes
through DLP; sources leave as canonical ids (seed 000), never as local paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from autorag.dlp.service import DlpSession
from autorag.models import SearchHit
from autorag.p2p.approvals import PendingSource
from autorag.sources.policy import PolicyStore
from autorag.text import one_line

SNIPPET_CHARS = 1200


@dataclass
class Gated:
    shared: list[PendingSource] = field(default_factory=list)  # may leave now
    pending: list[PendingSource] = field(default_factory=list)  # need the owner's approval
    withheld: int = 0  # private or invalid: never leave


def gate(hits: Sequence[SearchHit], policy: PolicyStore, dlp: DlpSession) -> Gated:
    """Sort ``hits`` by their sources' policy; the texts of those that may leave are
    redacted. Every source considered is marked seen."""
    gated = Gated()
    for hit in hits:
        policy.mark_source_seen(hit.source)
        level = policy.resolve_policy(hit.source)
        canonical = policy.canonical(hit.source)
        if level == "private" or canonical is None:
            gated.withheld += 1
            continue
        item = PendingSource(
            canonical, hit.title, one_line(hit.text, SNIPPET_CHARS), hit.score, hit.page
        )
        (gated.shared if level == "share" else gated.pending).append(item)
    gated.shared = redact(gated.shared, dlp)
    gated.pending = redact(gated.pending, dlp)
    return gated


def redact(items: list[PendingSource], dlp: DlpSession) -> list[PendingSource]:
    """Titles, snippets and even source ids pass DLP: a file may be named after a secret."""
    texts = [t for i in items for t in (i.source, i.title, i.snippet)]
    scanned = [r.redacted_text for r in dlp.scan_many(texts, channel="p2p_egress")]
    return [
        replace(item, source=scanned[3 * n], title=scanned[3 * n + 1], snippet=scanned[3 * n + 2])
        for n, item in enumerate(items)
    ]
