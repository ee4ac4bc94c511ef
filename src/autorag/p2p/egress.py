"""The egress gate: what a peer query may take away.

Every result's source goes through the source policy (``share`` leaves, ``ask`` waits for
the owner's approval, ``private`` and invalid sources stay); every text that leaves goes
through DLP; sources leave as canonical ids (seed 000), never as local paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from autorag.dlp.service import DlpSession
from autorag.errors import NotFound
from autorag.models import SearchHit
from autorag.p2p.approvals import PendingSource
from autorag.sources.policy import PolicyStore
from autorag.store.catalog.repository import Catalog
from autorag.text import one_line

SNIPPET_CHARS = 1200


@dataclass
class Gated:
    shared: list[PendingSource] = field(default_factory=list)  # may leave now
    pending: list[PendingSource] = field(default_factory=list)  # need the owner's approval
    withheld: int = 0  # private or invalid: never leave


def gate(hits: Sequence[SearchHit], policy: PolicyStore, dlp: DlpSession) -> Gated:
    """Sort ``hits`` by their sources' policy; the texts of those that may leave are
    redacted. Every source considered is marked seen.

    Policy is decided on the id the text was indexed under (the file's real path, seed
    000), never re-derived from a path string that a name could make ambiguous."""
    gated = Gated()
    for hit in hits:
        policy.mark_source_seen(hit.source_id)
        level = policy.resolve_policy(hit.source_id)
        canonical = policy.canonical(hit.source_id)
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


def still_allowed(
    sources: Sequence[PendingSource], policy: PolicyStore, *, approved: bool
) -> list[PendingSource]:
    """Sources kept with an approval request, as the policy stands when the answer is
    sent: a rule tightened while the request waited holds. Those that were ``share``
    must still be; those the owner approved may be ``share`` or ``ask``; none may now be
    ``private`` (nor a source id DLP redacted, which no longer names a source)."""
    levels = ("share", "ask") if approved else ("share",)
    return [s for s in sources if policy.resolve_policy(s.source) in levels]


def as_indexed(hits: Sequence[SearchHit], catalog: Catalog, workspace_id: int) -> list[SearchHit]:
    """The hits whose text is still what the file at their path holds: a local file moved
    away (into a private folder, say), replaced by a link, or changed since it was
    indexed is no evidence for its old id, and its text does not leave under it."""
    return [hit for hit in hits if _unchanged(hit, catalog, workspace_id)]


def _unchanged(hit: SearchHit, catalog: Catalog, workspace_id: int) -> bool:
    try:
        document = catalog.get_document(workspace_id, str(hit.document_id))
    except NotFound:
        return False
    if document.origin != "file":
        return True  # uploads and datasource records: the catalog holds their text
    try:
        info = os.lstat(hit.source)
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    return info.st_size == document.size and info.st_mtime_ns == document.mtime_ns


def redact(items: list[PendingSource], dlp: DlpSession) -> list[PendingSource]:
    """Titles, snippets and even source ids pass DLP: a file may be named after a secret."""
    texts = [t for i in items for t in (i.source, i.title, i.snippet)]
    scanned = [r.redacted_text for r in dlp.scan_many(texts, channel="p2p_egress")]
    return [
        replace(item, source=scanned[3 * n], title=scanned[3 * n + 1], snippet=scanned[3 * n + 2])
        for n, item in enumerate(items)
    ]
