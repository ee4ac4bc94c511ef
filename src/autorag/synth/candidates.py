"""The candidate search pass: which of the archive's pages may already cover an entity.

No model: the page whose title (or alias, or path) is the entity's name comes first, then
the best full-text matches for the name and the words its claims share. The overview page
is never a candidate (it links every page by title, so it would match every entity).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from autorag.errors import InvalidInput, NotFound
from autorag.synth.base import OVERVIEW_PATH, Candidate
from autorag.text.keywords import keywords
from autorag.wiki.models import Page
from autorag.wiki.service import ArchiveRef, WikiService

SEARCH_K = 3
MAX_CANDIDATES = 4  # the exact match and the search's best three
MAX_CLAIM_WORDS = 8  # claim words added to the name in the query
MAX_QUERY_CHARS = 300


def find_candidates(
    wiki: WikiService, archive: ArchiveRef, name: str, claims: Sequence[str]
) -> tuple[Candidate, ...]:
    """The pages that may already cover ``name``: its own page first (a title, alias or
    path match, score 0.0 unless the search found it too), then full-text hits, best
    first. Pages are read as they are now (version, body, front matter)."""
    found: dict[str, Candidate] = {}
    own = _own_page(wiki, archive, name)
    query = search_query(name, claims)
    hits = wiki.search(archive, query, k=SEARCH_K, mode="fts") if query else []
    scores = {hit.path: hit.score for hit in hits}
    if own is not None:
        found[own.path] = _candidate(own, scores.get(own.path, 0.0))
    for hit in hits:
        if hit.path in found or hit.path == OVERVIEW_PATH:
            continue
        try:
            page = wiki.page(archive, hit.path)
        except NotFound:  # deleted or renamed since it was indexed
            continue
        found[page.path] = _candidate(page, hit.score)
    return tuple(found.values())[:MAX_CANDIDATES]


def search_query(name: str, claims: Sequence[str]) -> str:
    """The name and the words its claims repeat most (the full-text search ORs its
    words and ranks by BM25, so the name's rarer words weigh most)."""
    named = keywords(name)
    counts = Counter(w for claim in claims for w in keywords(claim) if w not in named)
    extra = [w for w, _ in counts.most_common(MAX_CLAIM_WORDS) if len(w) > 2 and not w.isdigit()]
    return " ".join([*named, *extra])[:MAX_QUERY_CHARS].strip()


def _own_page(wiki: WikiService, archive: ArchiveRef, name: str) -> Page | None:
    try:
        page = wiki.page(archive, name)  # a path, a title, an alias or an old title
    except (NotFound, InvalidInput):
        return None
    return None if page.path == OVERVIEW_PATH else page


def _candidate(page: Page, score: float) -> Candidate:
    return Candidate(
        path=page.path,
        title=page.title,
        version=page.version,
        body=page.body,
        score=score,
        front_matter=dict(page.front_matter),
    )
