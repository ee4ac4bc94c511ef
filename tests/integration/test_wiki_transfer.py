"""An archive in and out (wiki/transfer.py): an Obsidian-style vault imported, exported
as a zip and imported again into a second archive gives the same pages and links;
hostile zips and folders are refused or skipped with the reason; a page made from one
of the workspace's documents."""

from __future__ import annotations

import io
import os
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.workspaces import new_workspace

from autorag.context import AppContext, open_context
from autorag.errors import InvalidInput, NotFound
from autorag.ingest.minsync import refresh
from autorag.ingest.reading import read_page, read_pages
from autorag.ops import workspaces as ws
from autorag.wiki.models import Archive
from autorag.wiki.service import WikiService

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
VAULT: dict[str, str] = {
    "Home.md": (
        "---\ntitle: Home\ntags: [start, hub]\n---\n"
        "Start with [[Apollo Plan]], then [[projects/apollo-plan|the plan]].\n"
        "The treasurer is [[Ada Lovelace#Role]]. Not written yet: [[Budget 2027]].\n"
        "![[attachments/diagram.png]]\n"
    ),
    "Projects/Apollo Plan.md": "# Apollo Plan\n\nLaunch in May; ask [[Ada Lovelace|Ada]].\n",
    "People/Ada.md": (
        "---\ntitle: Ada Lovelace\nrole: treasurer\n---\n## Role\n\nKeeps the accounts. "
        "Back to [[Home]].\n"
    ),
    "People/Nested/Deep Note.md": "A note without a heading, linking [[Home#Start]].\n",
}


@pytest.fixture(scope="module")
def app(
    tmp_path_factory: pytest.TempPathFactory, module_catalog_url: str | None
) -> Iterator[AppContext]:
    root = tmp_path_factory.mktemp("transfer")
    docs = root / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text(
        "# Refund policy\n\nRefunds are accepted within thirty days of purchase.\n"
    )
    context = open_context(new_workspace(root / "kb", module_catalog_url, search_paths=[str(docs)]))
    refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    yield context
    context.close()


@pytest.fixture(scope="module")
def wiki(app: AppContext) -> WikiService:
    return WikiService(app)


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for name, text in VAULT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "attachments").mkdir()
    (root / "attachments" / "diagram.png").write_bytes(PNG)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}")
    (root / "todo.txt").write_text("not a page")
    return root


def _pages(wiki: WikiService, archive: Archive) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        s.path: (p.title, p.body, p.front_matter)
        for s in wiki.pages(archive)
        for p in [wiki.page(archive, s.path)]
    }


def _links(wiki: WikiService, archive: Archive) -> dict[str, list[tuple[Any, ...]]]:
    return {
        s.path: [
            (link.target, link.target_path, link.label, link.heading)
            for link in wiki.links(archive, s.path).outgoing
        ]
        for s in wiki.pages(archive)
    }


def _export(wiki: WikiService, archive: Archive, where: Path) -> Path:
    out = io.BytesIO()
    wiki.export_zip(archive, out)
    where.write_bytes(out.getvalue())
    return where


def test_a_vault_round_trips_through_an_export(
    wiki: WikiService, vault: Path, tmp_path: Path
) -> None:
    first = wiki.create_archive("vault-a", by="tester")
    report = wiki.import_path(first, vault, by="tester")
    assert sorted(report.created) == [
        "home", "people/ada", "people/nested/deep-note", "projects/apollo-plan",
    ]  # fmt: skip
    assert report.attachments == 1 and not report.updated
    assert dict(report.skipped) == {".obsidian/": "a hidden folder", "todo.txt": (
        "not a markdown file, an image or a PDF"
    )}  # fmt: skip
    pages = _pages(wiki, first)
    assert pages["home"][0] == "Home" and pages["home"][2] == {"tags": ["start", "hub"]}
    assert pages["projects/apollo-plan"][0] == "Apollo Plan"  # its first heading
    assert pages["people/ada"][:1] + pages["people/ada"][2:] == (
        "Ada Lovelace", {"role": "treasurer"},
    )  # fmt: skip
    assert pages["people/nested/deep-note"][0] == "Deep Note"  # its file name
    links = _links(wiki, first)
    assert links["home"] == [
        ("Apollo Plan", "projects/apollo-plan", None, None),
        ("projects/apollo-plan", "projects/apollo-plan", "the plan", None),
        ("Ada Lovelace", "people/ada", None, "Role"),
        ("Budget 2027", None, None, None),
        ("attachments/diagram.png", None, None, None),  # an embed: a link to no page
    ]

    exported = _export(wiki, first, tmp_path / "a.zip")
    with zipfile.ZipFile(exported) as zf:
        names = zf.namelist()
        ada = zf.read("people/ada.md").decode()
    assert names == [
        "index.md", "home.md", "people/ada.md", "people/nested/deep-note.md",
        "projects/apollo-plan.md", "_attachments/attachments/diagram.png",
    ]  # fmt: skip
    assert ada.startswith("---\ntitle: Ada Lovelace\nrole: treasurer\n---\n## Role")
    assert _export(wiki, first, tmp_path / "again.zip").read_bytes() == exported.read_bytes()

    second = wiki.create_archive("vault-b", by="tester")
    again = wiki.import_path(second, exported, by="tester")
    assert sorted(again.created) == sorted(report.created) and again.attachments == 1
    assert [name for name, _ in again.skipped] == ["index.md"]  # the generated index
    assert _pages(wiki, second) == pages
    assert _links(wiki, second) == links
    assert wiki.attachment(second, "attachments/diagram.png") == ("image/png", PNG)


def test_importing_again_updates_only_what_changed(wiki: WikiService, vault: Path) -> None:
    archive = wiki.create_archive("vault-c", by="tester")
    wiki.import_path(archive, vault, by="tester")
    (vault / "Home.md").write_text(VAULT["Home.md"].replace("Start with", "Begin with"))
    report = wiki.import_path(archive, vault, by="tester")
    assert report.updated == ["home"] and not report.created
    assert sorted(report.unchanged) == [
        "people/ada",
        "people/nested/deep-note",
        "projects/apollo-plan",
    ]
    assert [v.version for v in wiki.history(archive, "home")] == [2, 1]
    assert wiki.history(archive, "people/ada")[0].version == 1


def _zip(path: Path, entries: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def test_a_hostile_zip_is_refused_entry_by_entry(wiki: WikiService, tmp_path: Path) -> None:
    archive = wiki.create_archive("hostile", by="tester")
    source = _zip(
        tmp_path / "hostile.zip",
        {
            "../escape.md": b"# Out",
            "/etc/absolute.md": b"# Abs",
            "a\\windows.md": b"# Win",
            "latin1.md": "caf\u00e9".encode("latin-1"),
            "big.md": b"x" * (2 * 1024**2 + 1),
            "bad-yaml.md": b"---\n[unclosed\n---\nbody",
            "Same Name.md": b"one",
            "same-name.md": b"two",
            "ok.md": b"# Fine\n\nA fine page.",
        },
        links={"link.md": "/etc/passwd"},
    )
    report = wiki.import_path(archive, source, by="tester")
    assert sorted(report.created) == ["ok", "same-name"]
    reasons = dict(report.skipped)
    assert "refused" in reasons["../escape.md"] and "refused" in reasons["/etc/absolute.md"]
    assert "refused" in reasons["a\\windows.md"]
    assert reasons["link.md"] == "a symbolic link (refused)"
    assert reasons["latin1.md"] == "not UTF-8 text"
    assert "2 MiB" in reasons["big.md"]
    assert "YAML" in reasons["bad-yaml.md"]
    assert "same page path" in reasons["same-name.md"]


def test_a_damaged_zip_entry_is_skipped_and_the_rest_imported(
    wiki: WikiService, tmp_path: Path
) -> None:
    archive = wiki.create_archive("damaged", by="tester")
    path = tmp_path / "damaged.zip"
    text = "".join(f"line {i}: the tide tables for week {i % 52}.\n" for i in range(400))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("corrupt.md", text)
        out.writestr("fine.md", "# Fine\n\nStill here.")
    with zipfile.ZipFile(path) as zipped:
        entry = zipped.getinfo("corrupt.md")
    data = bytearray(path.read_bytes())
    start = entry.header_offset + 30 + len(entry.filename) + len(entry.extra)
    middle = start + entry.compress_size // 2
    data[middle : middle + 64] = b"\xff" * 64  # the deflate stream, not the headers
    path.write_bytes(bytes(data))
    report = wiki.import_path(archive, path, by="tester")
    assert report.created == ["fine"]
    assert "could not be read" in dict(report.skipped)["corrupt.md"]


def test_a_zip_bomb_is_refused_before_anything_is_written(
    wiki: WikiService, tmp_path: Path
) -> None:
    archive = wiki.create_archive("bomb", by="tester")
    source = _zip(tmp_path / "bomb.zip", {"a.md": b"# A", "zeros.md": bytes(40 * 1024**2)})
    with pytest.raises(InvalidInput) as refused:
        wiki.import_path(archive, source, by="tester")
    assert refused.value.code == "zip_bomb" and "compresses" in refused.value.message
    assert wiki.pages(archive) == []
    (tmp_path / "not.zip").write_bytes(b"plain text, no zip")
    with pytest.raises(InvalidInput) as not_zip:
        wiki.import_path(archive, tmp_path / "not.zip", by="tester")
    assert not_zip.value.code == "not_a_zip"


def test_a_folder_s_links_are_not_followed(wiki: WikiService, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "page.md").write_text("# Page")
    os.symlink(outside / "secret.md", folder / "linked.md")
    os.symlink(outside, folder / "linked-dir")
    archive = wiki.create_archive("links", by="tester")
    report = wiki.import_path(archive, folder, by="tester")
    assert report.created == ["page"]
    assert dict(report.skipped) == {
        "linked-dir/": "a symbolic link (not followed)",
        "linked.md": "a symbolic link (not followed)",
    }
    with pytest.raises(NotFound):
        wiki.import_path(archive, tmp_path / "missing", by="tester")


def test_a_page_from_a_document(app: AppContext, wiki: WikiService) -> None:
    archive = wiki.create_archive("from-docs", by="tester")
    document = app.catalog.list_documents(app.info.id)[0]
    page = wiki.page_from_document(archive, str(document.id), "policies/refunds", by="tester")
    assert (page.path, page.title) == ("policies/refunds", "Refund policy")
    assert page.front_matter == {"source": document.source_id}
    assert "thirty days" in page.body
    hits = wiki.search(archive, "refund within thirty days", k=3)
    assert hits and hits[0].path == "policies/refunds"
    # Read once, the pages are the ones read one by one.
    first = read_page(app.catalog, app.info, document.id)
    one_by_one = [
        read_page(app.catalog, app.info, document.id, page=n).text
        for n in range(1, first.page_count + 1)
    ]
    assert read_pages(app.catalog, app.info, document.id) == one_by_one
    with pytest.raises(NotFound):
        wiki.page_from_document(archive, "999999", "nope", by="tester")
    other = WikiService(app.for_workspace(ws.create_workspace(app.catalog, "other")))
    elsewhere = other.create_archive("elsewhere", by="tester")
    with pytest.raises(NotFound):  # another workspace's document is not found from here
        other.page_from_document(elsewhere, str(document.id), "stolen", by="tester")
