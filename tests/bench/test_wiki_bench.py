"""The wiki's catalog side at size: 10,000 pages holding 50,000 wikilinks.

Measures a page save (page + version + links re-parsed and re-resolved, one transaction),
a page's links and backlinks, and a depth-2 neighbourhood. The search index is left out
(``WikiService(app, index=None)``: no index at all, for this benchmark only), so the
figures are the catalog's; the index's own cost is measured by the search benchmark.

Run with ``pytest -m bench -s tests/bench/test_wiki_bench.py``. Targets: save p50 ≤ 50 ms,
backlinks p95 ≤ 50 ms, neighbourhood (depth 2) p95 ≤ 50 ms.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, select, text

from autorag.context import AppContext, open_context
from autorag.store.catalog.models import utcnow
from autorag.wiki import store
from autorag.wiki.links import key_of, parse_links
from autorag.wiki.models import Archive
from autorag.wiki.service import WikiService
from tests.workspaces import new_workspace

pytestmark = pytest.mark.bench

PAGES = 10_000
LINKS_PER_PAGE = 5
HUBS = 100  # a fifth of the links go to these, as real wikis have a few much-linked pages
SAMPLES = 200
TARGET_MS = 50.0


def _path(n: int) -> str:
    return f"area-{n % 40}/topic-{n // 40}/page-{n}"


def _title(n: int) -> str:
    return f"Page {n} of the handbook"


def _body(n: int, rng: random.Random, edit: int = 0) -> str:
    lines = [f"# {_title(n)}", "", f"Revision {edit}. This page covers item {n}."]
    for i in range(LINKS_PER_PAGE):
        target = rng.randrange(HUBS) if rng.random() < 0.2 else rng.randrange(PAGES)
        if i == 4 and rng.random() < 0.1:
            lines.append(f"Nothing written yet on [[Missing topic {target}]].")
        elif i % 2:
            lines.append(f"See [[{_title(target)}]] for the background of step {i}.")
        else:
            lines.append(f"Related: [[{_path(target)}|step {i}]] explains the details.")
    return "\n".join(lines) + "\n"


@pytest.fixture
def world(tmp_path: Path, catalog_url: str | None) -> Iterator[tuple[WikiService, Archive]]:
    app = open_context(new_workspace(tmp_path / "ws", catalog_url))
    wiki = WikiService(app, index=None)  # the catalog alone: no search index
    archive = wiki.create_archive("handbook", title="Handbook", by="bench")
    began = time.perf_counter()
    _fill(app, archive, random.Random(18))
    print(f"\n[wiki bench] {PAGES:,} pages loaded in {time.perf_counter() - began:.1f} s")
    yield wiki, archive
    app.close()


def _fill(app: AppContext, archive: Archive, rng: random.Random) -> None:
    """The pages, their first versions and their links, written in bulk (the same rows a
    save writes, resolved the same way: by path, then by title)."""
    now = utcnow()
    bodies = [_body(n, rng) for n in range(PAGES)]
    with app.catalog.engine.begin() as conn:
        for batch in store.batches(range(PAGES), 1000):
            conn.execute(
                insert(store.ArchivePageRow),
                [
                    {
                        "archive_id": archive.id,
                        "path": _path(n),
                        "title": _title(n),
                        "title_key": key_of(_title(n)),
                        "body": bodies[n],
                        "front_matter": "{}",
                        "version": 1,
                        "created_at": now,
                        "created_by": "bench",
                        "updated_at": now,
                        "updated_by": "bench",
                    }
                    for n in batch
                ],
            )
        P = store.ArchivePageRow
        rows = conn.execute(select(P.path, P.id).where(P.archive_id == archive.id))
        ids: dict[str, int] = {row[0]: row[1] for row in rows}
        by_title = {key_of(_title(n)): ids[_path(n)] for n in range(PAGES)}
        versions: list[dict[str, object]] = []
        links: list[dict[str, object]] = []
        for n in range(PAGES):
            page_id = ids[_path(n)]
            versions.append(
                {
                    "page_id": page_id,
                    "version": 1,
                    "path": _path(n),
                    "title": _title(n),
                    "body": bodies[n],
                    "front_matter": json.dumps({}),
                    "saved_at": now,
                    "saved_by": "bench",
                    "note": "",
                }
            )
            for link in parse_links(bodies[n]):
                target = ids.get(link.slug or "") or by_title.get(link.key)
                links.append(
                    {
                        "archive_id": archive.id,
                        "source_page_id": page_id,
                        "position": link.position,
                        "target": link.target,
                        "target_key": link.key,
                        "target_slug": link.slug,
                        "target_page_id": target,
                        "label": link.label,
                        "heading": link.heading,
                        "context": link.context,
                    }
                )
        for rows, table in ((versions, store.ArchivePageVersionRow), (links, store.ArchiveLinkRow)):
            for chunk in store.batches(rows, 2000):
                conn.execute(insert(table), chunk)
    assert len(links) == PAGES * LINKS_PER_PAGE
    if app.catalog.engine.dialect.name == "postgresql":
        # What autovacuum does soon after a load this size: the planner's statistics.
        with app.catalog.engine.connect() as conn:
            conn.execute(text("ANALYZE"))
            conn.commit()


def _timed(samples: int, run: Callable[[int], object]) -> list[float]:
    times = []
    for i in range(samples):
        began = time.perf_counter()
        run(i)
        times.append((time.perf_counter() - began) * 1000)
    return times


def _p(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100)[q - 1]


def test_save_backlinks_and_neighbourhood_at_ten_thousand_pages(
    world: tuple[WikiService, Archive], catalog_url: str | None
) -> None:
    wiki, archive = world
    rng = random.Random(7)
    picks = [rng.randrange(PAGES) for _ in range(SAMPLES)]
    hubs = [rng.randrange(HUBS) for _ in range(SAMPLES // 4)]

    versions = dict.fromkeys(picks, 1)
    bodies = [_body(n, rng, edit=i + 1) for i, n in enumerate(picks)]

    def save(i: int) -> None:
        n = picks[i]
        page = wiki.save_page(
            archive, _path(n), body=bodies[i], base_version=versions[n], by="bench"
        )
        versions[n] = page.version

    def links(i: int) -> None:
        found = wiki.links(archive, _path(picks[i]))
        assert found.outgoing

    def hub_links(i: int) -> None:
        assert wiki.links(archive, _path(hubs[i])).backlinks

    def near(i: int) -> None:
        graph = wiki.neighbourhood(archive, _path(picks[i]), depth=2)
        assert len(graph.nodes) > 1

    saves = _timed(SAMPLES, save)
    link_times = _timed(SAMPLES, links)
    hub_times = _timed(len(hubs), hub_links)
    near_times = _timed(SAMPLES, near)
    backend = "postgresql" if catalog_url else "sqlite"
    print(
        f"[wiki bench] {backend}: {PAGES:,} pages, {PAGES * LINKS_PER_PAGE:,} links; "
        f"save p50 {statistics.median(saves):.1f} ms (p95 {_p(saves, 95):.1f}); "
        f"links+backlinks p95 {_p(link_times, 95):.1f} ms "
        f"(p50 {statistics.median(link_times):.1f}; "
        f"hub pages p95 {_p(hub_times, 95):.1f}); neighbourhood depth 2 p95 "
        f"{_p(near_times, 95):.1f} ms (p50 {statistics.median(near_times):.1f})"
    )
    assert statistics.median(saves) <= TARGET_MS
    assert _p(link_times, 95) <= TARGET_MS
    assert _p(near_times, 95) <= TARGET_MS
