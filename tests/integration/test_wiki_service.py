"""The wiki service on a real catalog (SQLite and PostgreSQL) with the real page index:
archives, saves with optimistic concurrency, history, wikilinks and their resolution,
the graph, templates, attachments, and the bad input it must refuse whole."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from tests.workspaces import NewCatalog, new_workspace

from autorag.context import AppContext, open_context
from autorag.errors import AutoragError, Conflict, InvalidInput, NotFound, StaleVersion
from autorag.wiki import store
from autorag.wiki.indexing import PageIndex
from autorag.wiki.models import Archive, Page
from autorag.wiki.service import WikiService

_names = itertools.count()


@pytest.fixture(scope="module")
def app(new_catalog: NewCatalog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppContext]:
    context = open_context(new_workspace(tmp_path_factory.mktemp("wiki"), new_catalog()))
    yield context
    context.close()


@pytest.fixture(scope="module")
def wiki(app: AppContext) -> WikiService:
    return WikiService(app)  # the real PageIndex


@pytest.fixture
def archive(wiki: WikiService) -> Archive:
    return wiki.create_archive(f"notes-{next(_names)}", title="Notes", by="ann")


def new(wiki: WikiService, archive: Archive, path: str, body: str, **kw: Any) -> Page:
    return wiki.save_page(archive, path, body=body, base_version=None, by="ann", **kw)


def link_rows(app: AppContext, archive: Archive) -> list[tuple[Any, ...]]:
    L = store.ArchiveLinkRow
    query = select(L.source_page_id, L.target, L.target_page_id).where(L.archive_id == archive.id)
    with app.catalog.engine.connect() as conn:
        return sorted(tuple(row) for row in conn.execute(query.order_by(L.id)))


def count(app: AppContext, table: Any) -> int:
    with app.catalog.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


# -- archives -----------------------------------------------------------------------------
def test_archives_are_the_workspaces_own(app: AppContext, wiki: WikiService) -> None:
    made = wiki.create_archive(
        " Team-Handbook ", title="Team handbook", description="How we work", by="ann"
    )
    assert (made.name, made.title, made.created_by) == ("team-handbook", "Team handbook", "ann")
    assert wiki.archive("team-handbook") == wiki.archive(made.id) == wiki.archive(str(made.id))
    assert "team-handbook" in [a.name for a in wiki.list_archives()]
    with pytest.raises(Conflict) as exists:
        wiki.create_archive("team-handbook", by="ann")
    assert exists.value.code == "archive_exists"
    with pytest.raises(InvalidInput):
        wiki.create_archive("archive:1", by="ann")
    changed = wiki.update_archive(made, title="Handbook", description="")
    assert (changed.title, changed.description) == ("Handbook", "")
    # Another workspace of the same catalog does not see it, by name or by id.
    other = WikiService(app.for_workspace(app.catalog.ensure_workspace("other")))
    for ref in ("team-handbook", made.id):
        with pytest.raises(NotFound) as missing:
            other.archive(ref)
        assert missing.value.code == "archive_not_found"
    with pytest.raises(NotFound):
        other.pages(made)


# -- saves, versions, history -----------------------------------------------------------
def test_create_update_and_the_version_check(
    app: AppContext, wiki: WikiService, archive: Archive
) -> None:
    page = new(wiki, archive, "Projects/Apollo", "---\nstatus: active\n---\n# Apollo\nFirst.\n")
    assert (page.path, page.title, page.version) == ("projects/apollo", "Apollo", 1)
    assert page.front_matter == {"status": "active"} and page.body == "# Apollo\nFirst.\n"
    with pytest.raises(Conflict) as exists:
        new(wiki, archive, "projects/apollo", "again")
    assert exists.value.code == "page_exists"

    second = wiki.save_page(
        archive, "projects/apollo", body="---\nstatus: done\n---\n# Apollo\nSecond.\n",
        base_version=1, by="bob",
    )  # fmt: skip
    assert (second.id, second.version, second.updated_by, second.title) == (
        page.id,
        2,
        "bob",
        "Apollo",
    )
    with pytest.raises(StaleVersion) as stale:
        wiki.save_page(archive, "projects/apollo", body="late", base_version=1, by="eve")
    assert (stale.value.code, stale.value.current_version, stale.value.status) == (
        "stale_version", 2, 409,
    )  # fmt: skip
    same = wiki.save_page(
        archive, "projects/apollo", body="---\nstatus: done\n---\n# Apollo\nSecond.\n",
        base_version=2, by="eve",
    )  # fmt: skip
    assert same == second  # nothing changed: no new version

    history = wiki.history(archive, "projects/apollo")
    assert [(v.version, v.saved_by) for v in history] == [(2, "bob"), (1, "ann")]
    diff = wiki.diff(archive, "projects/apollo", 1, 2)
    assert diff.startswith("--- projects/apollo (version 1)\n+++ projects/apollo (version 2)\n")
    assert "-status: active\n+status: done\n" in diff and "-First.\n+Second.\n" in diff

    restored = wiki.restore(archive, "projects/apollo", 1, base_version=2, by="ann")
    assert (restored.version, restored.body, restored.front_matter) == (
        3, "# Apollo\nFirst.\n", {"status": "active"},
    )  # fmt: skip
    assert wiki.history(archive, "projects/apollo")[0].note == "restored from version 1"
    with pytest.raises(NotFound) as missing:
        wiki.version(archive, "projects/apollo", 9)
    assert missing.value.code == "version_not_found"

    # The index followed every save: the page's document holds its current version.
    state = _state(app, archive, "projects/apollo")
    assert state.document_id is not None and state.indexed_version == 3
    assert [hit.path for hit in wiki.search(archive, "Apollo first", k=3)] == ["projects/apollo"]
    # A last line typed without its newline is the same line once one follows it.
    typed = new(wiki, archive, "typed", "Hermes is our kite.")
    grown = wiki.preview_save(archive, "typed", body="Hermes is our kite.\nIt flies.\n")
    assert " Hermes is our kite.\n+It flies.\n" in grown.diff and typed.version == 1
    assert "-Hermes is our kite." not in grown.diff


def _state(app: AppContext, archive: Archive, path: str) -> store.PageState:
    with app.catalog.engine.connect() as conn:
        state = store.page_state(conn, archive.id, path=path)
    assert state is not None
    return state


def test_a_title_comes_from_the_argument_the_front_matter_the_heading_or_the_path(
    wiki: WikiService, archive: Archive
) -> None:
    assert new(wiki, archive, "a", "x", title="  Given   title ").title == "Given title"
    assert new(wiki, archive, "b", "---\ntitle: From YAML\n---\n# Heading").title == "From YAML"
    assert new(wiki, archive, "c", "```\n# not this\n```\n# The heading\n").title == "The heading"
    assert new(wiki, archive, "notes/launch-day_plan", "no heading").title == "Launch day plan"


def test_preview_is_a_dry_run(app: AppContext, wiki: WikiService, archive: Archive) -> None:
    proposed = wiki.preview_save(archive, "Ideas", body="# Ideas\nOne [[Thing]].\n")
    assert (proposed.action, proposed.base_version, proposed.path) == ("create", None, "ideas")
    assert "+One [[Thing]].\n" in proposed.diff
    assert wiki.pages(archive) == []
    new(wiki, archive, "ideas", "# Ideas\nOne.\n")
    update = wiki.preview_save(archive, "ideas", body="# Ideas\nTwo.\n")
    assert (update.action, update.base_version, update.title) == ("update", 1, "Ideas")
    assert "-One.\n+Two.\n" in update.diff
    assert wiki.page(archive, "ideas").version == 1


# -- links ----------------------------------------------------------------------------
def test_links_resolve_by_path_title_and_alias_and_follow_every_change(
    app: AppContext, wiki: WikiService, archive: Archive
) -> None:
    apollo = new(
        wiki, archive, "projects/apollo",
        "# Apollo\nLed by [[Ada Lovelace|Ada]]. See [[people/grace#Bio]] and [[Budget]].",
    )  # fmt: skip
    links = wiki.links(archive, "projects/apollo")
    assert [(link.target, link.target_page_id) for link in links.outgoing] == [
        ("Ada Lovelace", None), ("people/grace", None), ("Budget", None),
    ]  # fmt: skip
    assert len(links.dangling) == 3
    # A page by that title appears: the dangling link resolves.
    ada = new(wiki, archive, "people/ada", "Works on [[Apollo]].", title="Ada Lovelace")
    grace = new(wiki, archive, "people/grace", "Bio.", title="Grace")
    outgoing = wiki.links(archive, "projects/apollo").outgoing
    assert [link.target_path for link in outgoing] == ["people/ada", "people/grace", None]
    assert [link.heading for link in outgoing] == [None, "Bio", None]
    backlinks = wiki.links(archive, "Ada Lovelace").backlinks
    assert [(link.source_path, link.label, link.context) for link in backlinks] == [
        ("projects/apollo", "Ada", "Led by Ada."),
    ]
    # Renamed: the same page, its old path still names it, links keep pointing at it.
    moved = wiki.rename_page(archive, "people/ada", "team/ada", base_version=1, by="bob")
    assert (moved.id, moved.path, moved.version) == (ada.id, "team/ada", 2)
    assert wiki.page(archive, "people/ada").id == ada.id
    assert wiki.links(archive, "projects/apollo").outgoing[0].target_path == "team/ada"
    assert wiki.history(archive, "team/ada")[0].note == "renamed from people/ada"
    # Retitled: the old title keeps naming it.
    wiki.save_page(archive, "team/ada", body="Works on [[Apollo]].", title="Ada King",
                   base_version=2, by="bob")  # fmt: skip
    assert wiki.page(archive, "ada lovelace").id == ada.id
    assert wiki.links(archive, "projects/apollo").outgoing[0].target_page_id == ada.id
    # Deleted: links to it turn dangling; a new page by that path takes them over.
    wiki.delete_page(archive, "people/grace", by="ann")
    assert wiki.links(archive, "projects/apollo").outgoing[1].target_page_id is None
    newer = new(wiki, archive, "people/grace", "Again.", title="Grace Hopper")
    assert wiki.links(archive, "projects/apollo").outgoing[1].target_page_id == newer.id
    assert newer.id != grace.id
    with pytest.raises(Conflict) as taken:
        wiki.rename_page(archive, "projects/apollo", "people/grace", base_version=1, by="x")
    assert taken.value.code == "page_exists"
    assert wiki.page(archive, "projects/apollo").id == apollo.id


def test_self_links_and_cycles_are_stored_and_the_graph_handles_them(
    wiki: WikiService, archive: Archive
) -> None:
    a = new(wiki, archive, "a", "Me: [[a]]. Next [[b]].", title="A")
    b = new(wiki, archive, "b", "Next [[c]].", title="B")
    c = new(wiki, archive, "c", "Back to [[A]]. And [[Nowhere]].", title="C")
    assert [link.source_path for link in wiki.links(archive, "a").backlinks] == ["a", "c"]
    whole = wiki.graph(archive)
    assert {n.key for n in whole.nodes} == {
        f"page:{a.id}", f"page:{b.id}", f"page:{c.id}", "dangling:nowhere",
    }  # fmt: skip
    edges = {(e.source, e.target) for e in whole.edges}
    assert (f"page:{a.id}", f"page:{a.id}") in edges and (f"page:{c.id}", f"page:{a.id}") in edges
    assert [n.title for n in whole.nodes if n.dangling] == ["Nowhere"]
    near = wiki.neighbourhood(archive, "b", depth=1)
    assert {n.page_id for n in near.nodes if not n.dangling} == {a.id, b.id, c.id}
    assert {n.page_id for n in wiki.neighbourhood(archive, "a", depth=0).nodes} == {a.id}
    assert len(wiki.neighbourhood(archive, "a", depth=3).nodes) == 4
    with pytest.raises(InvalidInput):
        wiki.neighbourhood(archive, "a", depth=4)


def test_the_index_page_is_the_tree_of_paths(wiki: WikiService, archive: Archive) -> None:
    new(wiki, archive, "projects/apollo", "x", title="Apollo")
    new(wiki, archive, "projects", "x", title="All projects")
    new(wiki, archive, "people/ada", "x", title="Ada | Lovelace")
    assert wiki.index_markdown(archive) == (
        "# Notes: index\n\n"
        "- people/\n"
        "  - [[people/ada|Ada / Lovelace]]\n"
        "- [[projects|All projects]]\n"
        "  - [[projects/apollo|Apollo]]\n"
    )


# -- bad input: refused whole ---------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "error", "code"),
    [
        ("../../etc/passwd", "x", InvalidInput, "invalid_page_path"),
        ("notes/<script>", "x", InvalidInput, "invalid_page_path"),
        ("ok", "x" * (10 * 1024 * 1024), InvalidInput, "page_too_large"),
        ("ok", "---\ntitle: [unclosed\n---\nx", InvalidInput, "invalid_front_matter"),
        ("ok", "---\n- a list\n---\nx", InvalidInput, "invalid_front_matter"),
        ("ok", "NUL \x00 here", InvalidInput, "invalid_input"),
        ("ok", "[[x]] " * 5001, InvalidInput, "too_many_links"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    app: AppContext, wiki: WikiService, archive: Archive, path: str, body: str,
    error: type[AutoragError], code: str,
) -> None:  # fmt: skip
    new(wiki, archive, "ok", "Links to [[other]].")
    before = (count(app, store.ArchivePageVersionRow), link_rows(app, archive))
    with pytest.raises(error) as caught:
        wiki.save_page(archive, path, body=body, base_version=1, by="eve")
    assert caught.value.code == code
    with pytest.raises(error):
        wiki.preview_save(archive, path, body=body)
    assert (count(app, store.ArchivePageVersionRow), link_rows(app, archive)) == before
    assert wiki.page(archive, "ok").body == "Links to [[other]]."


def test_other_bad_input(wiki: WikiService, archive: Archive) -> None:
    with pytest.raises(InvalidInput):
        new(wiki, archive, "x", "body", title="bad\ttitle\x07")
    with pytest.raises(InvalidInput):
        wiki.save_page(archive, "x", body="b", base_version=0, by="x")
    with pytest.raises(NotFound) as missing:
        wiki.save_page(archive, "x", body="b", base_version=1, by="x")
    assert missing.value.code == "page_not_found"
    with pytest.raises(NotFound):
        wiki.page(archive, "nothing here")


def test_two_racing_saves_on_one_base_one_wins(
    app: AppContext, wiki: WikiService, archive: Archive
) -> None:
    new(wiki, archive, "race", "start")
    fast = WikiService(app, index=None)  # the race is the catalog's; the index is not in it
    for round_ in range(3):
        base = wiki.page(archive, "race").version
        results = _race(
            lambda who, base=base, n=round_: fast.save_page(
                archive, "race", body=f"{who} {n} links [[{who}]]", base_version=base, by=who
            )
        )
        won = [r for r in results if isinstance(r, Page)]
        lost = [r for r in results if isinstance(r, StaleVersion)]
        assert len(won) == 1 and len(lost) == 1, results
        assert lost[0].current_version == base + 1
        page = wiki.page(archive, "race")
        assert (page.version, page.updated_by) == (base + 1, won[0].updated_by)
        targets = [link.target for link in wiki.links(archive, "race").outgoing]
        assert targets == [won[0].updated_by]  # the winner's links, only
    assert [v.version for v in wiki.history(archive, "race")] == [4, 3, 2, 1]


def test_two_racing_creates_one_wins(app: AppContext, archive: Archive) -> None:
    fast = WikiService(app, index=None)
    results = _race(lambda who: fast.save_page(archive, "new", body=who, base_version=None, by=who))
    assert [r.code for r in results if isinstance(r, Conflict)] == ["page_exists"]
    assert sorted(type(r).__name__ for r in results) == ["Conflict", "Page"]
    assert [v.version for v in fast.history(archive, "new")] == [1]


def test_the_version_check_is_one_atomic_statement(
    app: AppContext, wiki: WikiService, archive: Archive
) -> None:
    page = new(wiki, archive, "atomic", "one")
    with app.catalog.engine.begin() as conn:
        assert store.update_page(conn, page.id, 1, {"body": "two"})
        assert not store.update_page(conn, page.id, 1, {"body": "three"})  # base 1 is gone
    assert wiki.page(archive, "atomic").body == "two"


def test_pages_created_at_once_resolve_each_others_links(app: AppContext, archive: Archive) -> None:
    fast = WikiService(app, index=None)
    pages = {"ann": ("north", "[[south]] lies below"), "bob": ("south", "[[north]] lies above")}
    results = _race(
        lambda who: fast.save_page(
            archive, pages[who][0], body=pages[who][1], base_version=None, by=who
        )
    )
    assert all(isinstance(r, Page) for r in results), results
    for path in ("north", "south"):
        assert fast.links(archive, path).dangling == []


def _race(save: Callable[[str], Page]) -> list[Page | AutoragError]:
    """``save`` run by two threads let go at once: each one's page or error."""
    barrier = threading.Barrier(2)
    results: list[Page | AutoragError] = []

    def run(who: str) -> None:
        barrier.wait()
        try:
            results.append(save(who))
        except AutoragError as exc:
            results.append(exc)

    threads = [threading.Thread(target=run, args=(who,)) for who in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# -- the index: after the commit, caught up when it failed -----------------------------
class _FailsOnce(PageIndex):
    """The real index, whose first put fails (an embedding server that went away)."""

    failed = False

    def put(self, archive: Archive, page: Page) -> int:
        if not self.failed:
            self.failed = True
            raise AutoragError("embedding server unreachable", code="unavailable")
        return super().put(archive, page)


def test_a_failed_index_update_leaves_the_page_saved_and_caught_up_later(
    app: AppContext, wiki: WikiService, archive: Archive
) -> None:
    flaky = WikiService(app, index=_FailsOnce(app))
    page = flaky.save_page(
        archive, "tide", body="High tide at the lighthouse is at noon.", base_version=None, by="a"
    )
    assert wiki.page(archive, "tide") == page
    assert _state(app, archive, "tide").indexed_version == 0
    assert wiki.search(archive, "lighthouse tide", k=3) == []
    assert flaky.reindex_pages(archive) == 1
    assert _state(app, archive, "tide").indexed_version == 1
    assert [hit.path for hit in wiki.search(archive, "lighthouse tide", k=3)] == ["tide"]
    assert flaky.reindex_pages(archive) == 0


def test_renames_and_deletes_keep_the_index_true(wiki: WikiService, archive: Archive) -> None:
    new(wiki, archive, "boat", "The red canoe sleeps in the barn.", title="Boat")
    wiki.rename_page(archive, "boat", "fleet/canoe", base_version=1, by="a")
    assert [h.path for h in wiki.search(archive, "red canoe barn", k=5)] == ["fleet/canoe"]
    wiki.delete_page(archive, "fleet/canoe", by="a")
    assert wiki.search(archive, "red canoe barn", k=5) == []


def test_deleting_an_archive_removes_everything(app: AppContext, wiki: WikiService) -> None:
    archive = wiki.create_archive(f"gone-{next(_names)}", by="ann")
    new(wiki, archive, "a", "To [[b]].")
    new(wiki, archive, "b", "To [[a]].")
    wiki.put_attachment(archive, "img/x.png", b"\x89PNG", by="ann")
    wiki.delete_archive(archive.name)
    with pytest.raises(NotFound):
        wiki.archive(archive.id)
    for table in (store.ArchivePageRow, store.ArchiveAttachmentRow):
        with app.catalog.engine.connect() as conn:
            left = conn.execute(
                select(func.count()).select_from(table).where(table.archive_id == archive.id)
            ).scalar_one()
        assert left == 0
    assert link_rows(app, archive) == []


# -- templates and attachments --------------------------------------------------------
def test_templates(wiki: WikiService, archive: Archive) -> None:
    names = [t.name for t in wiki.templates()]
    assert names[:4] == ["person", "project", "meeting", "decision"]
    meeting = new(wiki, archive, "meetings/kickoff", "", template="meeting")
    assert meeting.title == "Kickoff" and meeting.body.startswith("# Kickoff\n")
    assert meeting.front_matter["type"] == "meeting"
    custom = wiki.add_template(
        f"retro{next(_names)}",
        "Retro",
        "---\nkind: retro\n---\n# {{title}}\n## Went well\n",
        by="m",
    )
    page = new(wiki, archive, "retro", "", title="Sprint 9", template=custom.name)
    assert (page.body, page.front_matter) == ("# Sprint 9\n## Went well\n", {"kind": "retro"})
    assert new(wiki, archive, "kept", "Own text", template="person").body == "Own text"
    with pytest.raises(Conflict):
        wiki.add_template("person", "Mine", "x", by="m")
    with pytest.raises(InvalidInput):
        wiki.add_template("Bad Name!", "x", "x", by="m")
    with pytest.raises(InvalidInput):
        wiki.add_template("badyaml", "x", "---\n[unclosed\n---\n", by="m")
    with pytest.raises(InvalidInput) as builtin:
        wiki.remove_template("person")
    assert builtin.value.code == "builtin_template"
    wiki.remove_template(custom.name)
    with pytest.raises(NotFound):
        new(wiki, archive, "again", "", template=custom.name)


def test_attachments(wiki: WikiService, archive: Archive) -> None:
    made = wiki.put_attachment(archive, "Images/Diagram.PNG", b"\x89PNG data", by="ann")
    assert (made.name, made.media_type, made.size) == ("images/diagram.png", "image/png", 9)
    assert wiki.attachment(archive, "images/diagram.png") == ("image/png", b"\x89PNG data")
    wiki.put_attachment(archive, "images/diagram.png", b"new", by="bob")
    assert [(a.name, a.size, a.created_by) for a in wiki.attachments(archive)] == [
        ("images/diagram.png", 3, "bob"),
    ]
    with pytest.raises(InvalidInput) as big:
        wiki.put_attachment(archive, "big.bin", b"\0" * (10 * 1024 * 1024 + 1), by="ann")
    assert big.value.code == "attachment_too_large"
    with pytest.raises(InvalidInput):
        wiki.put_attachment(archive, "../escape.png", b"x", by="ann")
    with pytest.raises(NotFound):
        wiki.attachment(archive, "nope.png")


def test_two_uploads_of_one_name_at_once_both_land(wiki: WikiService, archive: Archive) -> None:
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def upload(who: str) -> None:
        barrier.wait()
        try:
            wiki.put_attachment(archive, "race.png", who.encode(), by=who)
        except Exception as exc:  # a unique-constraint clash would be a 500
            errors.append(exc)

    threads = [threading.Thread(target=upload, args=(who,)) for who in ("ann", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    [kept] = wiki.attachments(archive)
    assert wiki.attachment(archive, "race.png") == ("image/png", kept.created_by.encode())


def test_writers_are_existing_users_the_first_unknown_named(app: AppContext) -> None:
    from autorag.auth.service import create_user
    from autorag.wiki.grants import checked_writers

    create_user(app.catalog, "wren", "a long enough password", "member")
    assert checked_writers(app.catalog, [" wren ", "wren"]) == ("wren",)
    with pytest.raises(InvalidInput) as unknown:
        checked_writers(app.catalog, ["wren", "ghost-1", "ghost-2"])
    assert unknown.value.code == "unknown_user" and "'ghost-1'" in unknown.value.message
    assert "ghost-2" not in unknown.value.message


def test_the_migration_added_the_workspace_kind(app: AppContext, tmp_path: Path) -> None:
    from autorag.store.catalog.models import WorkspaceRow

    with app.catalog.engine.connect() as conn:
        kind = conn.execute(
            select(WorkspaceRow.kind).where(WorkspaceRow.id == app.info.id)
        ).scalar_one()
    assert kind == "workspace"
