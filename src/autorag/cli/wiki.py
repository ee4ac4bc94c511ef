"""``autorag wiki``: the workspace's archives, markdown wikis with [[links]] and history."""

from __future__ import annotations

import dataclasses
import getpass
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from autorag.cli._common import console, err_console, local_time, open_app, plural, print_json
from autorag.errors import InvalidInput, StaleVersion

if TYPE_CHECKING:
    from autorag.wiki.models import Link
    from autorag.wiki.service import WikiService
    from autorag.wiki.tree import PageNode

app = typer.Typer(
    help="Archives: the workspace's markdown wikis, with links between pages, backlinks and"
    " history.\n\n"
    "An archive holds pages addressed by a path (projects/apollo). A page links to others "
    "with \\[\\[Title]] or \\[\\[path]]; every save keeps the previous version. Pages are searched "
    "like documents, and the assistant can read them (autorag ask --archive NAME).\n\n"
    "Example:\n\n"
    '  autorag wiki create handbook --title "Team handbook"\n\n'
    '  echo "Launch is in May. See \\[\\[Checklist]]." | autorag wiki new handbook '
    'projects/apollo --title "Apollo"\n\n'
    "  autorag wiki show handbook projects/apollo --backlinks",
    no_args_is_help=True,
)
templates_app = typer.Typer(
    help="Templates for new pages: person, project, meeting, decision, and your own.",
    no_args_is_help=True,
)
app.add_typer(templates_app, name="templates")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ArchiveArg = Annotated[str, typer.Argument(help="The archive's name (see `autorag wiki ls`).")]
PathArg = Annotated[
    str, typer.Argument(help="The page's path (projects/apollo), or its title in quotes.")
]
TitleOpt = Annotated[str | None, typer.Option("--title", "-t", help="The page's title.")]


def _who() -> str:
    return f"{getpass.getuser()} (command line)"


def _wiki(ctx: typer.Context) -> WikiService:
    from autorag.wiki.service import WikiService  # deferred: `autorag --help` stays fast

    return WikiService(open_app(ctx))


def _json(value: Any) -> Any:
    """A wiki value keyed as the API answers it (camelCase: ``pageCount``, ``updatedAt``)."""
    from autorag.wiki.wire import as_json  # deferred: `autorag --help` stays fast

    return as_json(value)


def _read_stdin(what: str) -> str:
    if sys.stdin.isatty():
        raise InvalidInput(f"pipe {what} into the command: autorag wiki new … < page.md")
    return sys.stdin.read()


# -- archives ---------------------------------------------------------------------------
@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits, '-' and '_'.")],
    title: Annotated[str, typer.Option("--title", "-t", help="What people call it.")] = "",
    description: Annotated[str, typer.Option(help="What it is for.")] = "",
    writers: Annotated[
        list[str] | None,
        typer.Option(
            "--writer", help="A member (user name) who may write its pages; repeat for more."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create an archive in the current workspace.

    Managers and admins write every archive's pages; members read them.

    A member named with --writer writes this archive's pages too.

    autorag wiki create handbook --title "Team handbook" --writer alice
    """
    from autorag.wiki.grants import checked_writers
    from autorag.wiki.models import ArchiveConfig

    wiki = _wiki(ctx)
    config = ArchiveConfig(writers=checked_writers(wiki.app.catalog, writers or []))
    archive = wiki.create_archive(
        name, title=title, description=description, config=config, by=_who()
    )
    if as_json:
        print_json(_json(archive))
        return
    console.print(f"Created archive {archive.name!r}.", highlight=False)


@app.command("ls")
def list_pages(
    ctx: typer.Context,
    archive: Annotated[
        str | None, typer.Argument(help="The archive; without it, the archives are listed.")
    ] = None,
    tree: Annotated[bool, typer.Option("--tree", help="Nest the pages by path.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List the archives, or the pages of one.

    autorag wiki ls handbook --tree
    """
    wiki = _wiki(ctx)
    if archive is None:
        archives = wiki.list_archives()
        if as_json:
            print_json(_json(archives))
            return
        if not archives:
            console.print("No archives yet: autorag wiki create NAME --title TITLE")
            return
        table = Table("name", "title", "pages", "updated")
        for one in archives:
            table.add_row(one.name, one.title, str(one.page_count), local_time(one.updated_at))
        console.print(table)
        return
    found = wiki.archive(archive)
    pages = wiki.pages(found)
    if as_json:
        print_json(_json(pages))
        return
    if not pages:
        console.print(f"No pages in {found.name!r} yet: autorag wiki new {found.name} PATH")
        return
    if tree:
        from autorag.wiki.tree import page_tree

        root = Tree(f"[bold]{escape(found.title or found.name)}[/bold]")
        _grow(root, page_tree(pages))
        console.print(root)
        return
    table = Table("path", "title", "version", "updated", "by")
    for page in pages:
        table.add_row(
            page.path, page.title, str(page.version), local_time(page.updated_at), page.updated_by
        )
    console.print(table)


def _grow(branch: Tree, nodes: list[PageNode]) -> None:
    for node in nodes:
        label = escape(node.name)
        if node.page is not None:
            label = f"{label}  [dim]{escape(node.page.title)}[/dim]"
        _grow(branch.add(label), node.children)


@app.command("writers")
def writers(
    ctx: typer.Context,
    archive: ArchiveArg,
    add: Annotated[
        list[str] | None, typer.Option("--add", help="A member to let write; repeat for more.")
    ] = None,
    remove: Annotated[
        list[str] | None, typer.Option("--remove", help="A member to take it from.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List, or change, the members who may write an archive's pages.

    Managers and admins write every archive; a member only one that names them here.

    autorag wiki writers handbook --add alice --remove bob
    """
    from autorag.wiki.grants import checked_writers

    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    names = found.config.writers
    if add or remove:
        kept = [name for name in (*names, *(add or [])) if name not in (remove or [])]
        config = dataclasses.replace(found.config, writers=checked_writers(wiki.app.catalog, kept))
        names = wiki.update_archive(found.name, config=config).config.writers
    if as_json:
        print_json(list(names))
        return
    if not names:
        console.print(f"No members named: managers and admins write {found.name!r}.")
        return
    console.print(f"Writers of {found.name!r}: {', '.join(names)}.", highlight=False)


@app.command("rm")
def remove(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: Annotated[
        str | None, typer.Argument(help="The page; without it, the whole archive is deleted.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a page (its history goes with it), or a whole archive."""
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    if path is None:
        if not yes:
            typer.confirm(
                f"Delete archive {found.name!r} with its {plural(found.page_count, 'page')}?",
                abort=True,
            )
        wiki.delete_archive(found.name)
        console.print(f"Deleted archive {found.name!r}.", highlight=False)
        return
    page = wiki.page(found, path)
    if not yes:
        typer.confirm(f"Delete page {page.path!r} and its history?", abort=True)
    wiki.delete_page(found, page.path, by=_who())
    console.print(f"Deleted page {page.path!r}.", highlight=False)


# -- pages ------------------------------------------------------------------------------
@app.command("new")
def new_page(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: Annotated[str, typer.Argument(help="Where the page lives: projects/apollo.")],
    title: TitleOpt = None,
    template: Annotated[
        str | None,
        typer.Option(help="Start from a template (see `autorag wiki templates list`)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a page from the markdown on standard input (YAML front matter allowed).

    autorag wiki new handbook projects/apollo --title "Apollo" < apollo.md

    With --template and nothing piped in, the page starts as the template.
    """
    body = "" if template is not None and sys.stdin.isatty() else _read_stdin("the page")
    wiki = _wiki(ctx)
    page = wiki.save_page(
        wiki.archive(archive),
        path,
        body=body,
        title=title,
        base_version=None,
        by=_who(),
        template=template,
    )
    if as_json:
        print_json(_json(page))
        return
    console.print(f"Created {page.path!r} ({page.title}).", highlight=False)


@app.command("show")
def show(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: PathArg,
    backlinks: Annotated[
        bool, typer.Option("--backlinks", help="Also list the pages that link here.")
    ] = False,
    history: Annotated[bool, typer.Option("--history", help="Also list its versions.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Print a page: its front matter and markdown.

    autorag wiki show handbook projects/apollo --backlinks --history
    """
    from autorag.wiki import frontmatter

    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    page = wiki.page(found, path)
    links = wiki.links(found, page.path) if backlinks else None
    versions = wiki.history(found, page.path) if history else None
    if as_json:
        data: dict[str, Any] = _json(page)
        if links is not None:
            data["backlinks"] = _json(links.backlinks)
        if versions is not None:
            data["history"] = [_version_json(v) for v in versions]
        print_json(data)
        return
    who = f"{page.updated_by}, {local_time(page.updated_at)}"
    console.rule(f"{escape(page.title)}  [dim]{page.path} · version {page.version} · {who}[/dim]")
    console.print(frontmatter.compose(page.front_matter, page.body), markup=False, highlight=False)
    if links is not None:
        console.rule("Backlinks")
        _links_table(links.backlinks, "from", lambda link: link.source_path)
    if versions is not None:
        console.rule("History")
        _versions_table(versions)


def _version_json(version: Any) -> dict[str, Any]:
    return {k: v for k, v in _json(version).items() if k not in ("body", "frontMatter")}


@app.command("edit")
def edit(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: PathArg,
    title: TitleOpt = None,
) -> None:
    """Edit a page in $EDITOR (or $VISUAL); saving the file and quitting saves the page.

    If someone saved the page meanwhile, nothing is overwritten.

    Your text then stays in the file the command names, to merge by hand.
    """
    from autorag.wiki import frontmatter

    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    page = wiki.page(found, path)
    before = frontmatter.compose(page.front_matter, page.body)
    fd, name = tempfile.mkstemp(prefix=f"autorag-{page.path.replace('/', '-')}-", suffix=".md")
    draft = Path(name)  # mkstemp's file is the user's alone (0600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(before)
    keep = False
    try:
        _run_editor(draft)
        after = draft.read_text(encoding="utf-8")
        if after == before and title is None:
            console.print("No changes.")
            return
        try:
            saved = wiki.save_page(
                found, page.path, body=after, title=title, base_version=page.version, by=_who()
            )
        except StaleVersion as exc:
            keep = True
            raise StaleVersion(
                f"{page.path!r} was saved by someone else while you edited (now version "
                f"{exc.current_version}, you started from {page.version}); nothing was "
                f"overwritten. Your text is kept in {draft}: run `autorag wiki edit` again "
                "and merge it in.",
                current_version=exc.current_version,
            ) from None
        except InvalidInput:
            keep = True
            err_console.print(f"Your text is kept in {draft}.", highlight=False, markup=False)
            raise
    finally:
        if not keep:
            draft.unlink(missing_ok=True)
    if saved.version == page.version:
        console.print("No changes.")
    else:
        console.print(f"Saved {saved.path!r}: version {saved.version}.", highlight=False)


def _run_editor(draft: Path) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        code = subprocess.call([*shlex.split(editor), str(draft)])
    except OSError as exc:
        raise InvalidInput(f"cannot start the editor {editor!r}: {exc.strerror}") from None
    if code != 0:
        raise InvalidInput(f"the editor {editor!r} exited with {code}: the page is unchanged")


@app.command("history")
def history(
    ctx: typer.Context, archive: ArchiveArg, path: PathArg, as_json: JsonFlag = False
) -> None:
    """List a page's versions, newest first."""
    wiki = _wiki(ctx)
    versions = wiki.history(wiki.archive(archive), path)
    if as_json:
        print_json([_version_json(v) for v in versions])
        return
    _versions_table(versions)


def _versions_table(versions: list[Any]) -> None:
    table = Table("version", "saved", "by", "title", "note")
    for version in versions:
        table.add_row(
            str(version.version),
            local_time(version.saved_at),
            version.saved_by,
            version.title,
            version.note,
        )
    console.print(table)


@app.command("diff")
def diff(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: PathArg,
    old: Annotated[int, typer.Argument(min=1, help="The older version.")],
    new: Annotated[
        int | None, typer.Argument(min=1, help="The newer version (default: the current one).")
    ] = None,
) -> None:
    """Show what changed between two versions of a page (a unified diff).

    autorag wiki diff handbook projects/apollo 1 3
    """
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    newer = new if new is not None else wiki.page(found, path).version
    text = wiki.diff(found, path, old, newer)
    if not text:
        console.print(f"Versions {old} and {newer} are the same.")
        return
    for line in text.splitlines():
        style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
        console.print(line, style=style, markup=False, highlight=False)


@app.command("restore")
def restore(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: PathArg,
    version: Annotated[int, typer.Argument(min=1, help="The version to bring back.")],
    as_json: JsonFlag = False,
) -> None:
    """Bring back an old version of a page, as a new version (nothing is lost)."""
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    current = wiki.page(found, path)
    page = wiki.restore(found, current.path, version, base_version=current.version, by=_who())
    if as_json:
        print_json(_json(page))
        return
    console.print(
        f"Restored version {version} of {page.path!r} as version {page.version}.", highlight=False
    )


@app.command("rename")
def rename(
    ctx: typer.Context,
    archive: ArchiveArg,
    path: PathArg,
    new_path: Annotated[str, typer.Argument(help="The page's new path.")],
    as_json: JsonFlag = False,
) -> None:
    """Move a page to a new path; links naming its old path or title keep working."""
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    current = wiki.page(found, path)
    page = wiki.rename_page(found, current.path, new_path, base_version=current.version, by=_who())
    if as_json:
        print_json(_json(page))
        return
    console.print(f"Renamed {current.path!r} to {page.path!r}.", highlight=False)


@app.command("links")
def links(
    ctx: typer.Context, archive: ArchiveArg, path: PathArg, as_json: JsonFlag = False
) -> None:
    """A page's links out, its backlinks, and its links to pages not written yet."""
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    result = wiki.links(found, wiki.page(found, path).path)
    if as_json:
        print_json(_json(result))
        return
    console.rule("Links to")
    _links_table(result.outgoing, "to", lambda link: link.target_path or link.target)
    console.rule("Backlinks")
    _links_table(result.backlinks, "from", lambda link: link.source_path)
    console.rule("Not written yet")
    _links_table(result.dangling, "named", lambda link: link.target)


def _links_table(found: list[Link], column: str, page_of: Any) -> None:
    if not found:
        console.print("[dim]none[/dim]")
        return
    table = Table(column, "context")
    for link in found:
        table.add_row(escape(str(page_of(link))), escape(link.context))
    console.print(table)


@app.command("search")
def search(
    ctx: typer.Context,
    archive: ArchiveArg,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="How many passages.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, vector or fts (full-text).")] = "hybrid",
    as_json: JsonFlag = False,
) -> None:
    """Search an archive's pages (vectors and full-text, fused).

    autorag wiki search handbook "launch checklist" --json
    """
    if mode not in ("hybrid", "vector", "fts"):
        raise InvalidInput(f"--mode: {mode!r} is not one of hybrid, vector, fts")
    if not query.strip():
        raise InvalidInput("the query is empty: say what to look for")
    wiki = _wiki(ctx)
    hits = wiki.search(wiki.archive(archive), query, k=k, mode=mode)
    if as_json:
        print_json(_json(hits))
        return
    if not hits:
        console.print("No pages match.")
        return
    for number, hit in enumerate(hits, 1):
        console.print(f"[bold]{number}. {escape(hit.title)}[/bold]  [dim]{hit.path}[/dim]")
        console.print(" ".join(hit.text.split())[:300], markup=False, highlight=False)


@app.command("from-doc")
def from_doc(
    ctx: typer.Context,
    archive: ArchiveArg,
    document: Annotated[str, typer.Argument(help="The document's id or source id.")],
    path: Annotated[str, typer.Argument(help="The new page's path.")],
    title: TitleOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a page holding an indexed document's text (see `autorag docs list`).

    autorag wiki from-doc handbook 42 projects/apollo-spec
    """
    wiki = _wiki(ctx)
    page = wiki.page_from_document(wiki.archive(archive), document, path, title=title, by=_who())
    if as_json:
        print_json(_json(page))
        return
    console.print(f"Created {page.path!r} ({page.title}) from document {document}.")


# -- export and import ------------------------------------------------------------------
@app.command("export")
def export(
    ctx: typer.Context,
    archive: ArchiveArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="The zip file to write.")],
) -> None:
    """Write an archive as a zip of .md files with front matter (folders are paths).

    autorag wiki export handbook -o handbook.zip
    """
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    partial = output.with_name(output.name + ".part")
    try:
        with partial.open("wb") as out:
            wiki.export_zip(found, out)
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    console.print(f"Wrote {plural(found.page_count, 'page')} to {output}.", highlight=False)


@app.command("import")
def import_(
    ctx: typer.Context,
    archive: ArchiveArg,
    source: Annotated[
        Path, typer.Argument(help="A folder of .md files (an Obsidian vault) or a .zip of one.")
    ],
    as_json: JsonFlag = False,
) -> None:
    """Import a folder or a zip of markdown files (an Obsidian vault) into an archive.

    A file's path becomes the page's path; its \\[\\[links]] and front matter are kept.

    A page already there is updated when the file differs; what cannot be imported is listed.

    autorag wiki import handbook ~/ObsidianVault
    """
    source = source.expanduser()
    if not source.exists():
        raise InvalidInput(f"{source}: no such folder or file")
    wiki = _wiki(ctx)
    found = wiki.archive(archive)
    with err_console.status(f"Importing {source} …"):
        report = wiki.import_path(found, source, by=_who())
    if as_json:
        print_json(_json(report))
        return
    console.print(
        f"Imported into {found.name!r}: {len(report.created)} created, "
        f"{len(report.updated)} updated, {len(report.unchanged)} unchanged, "
        f"{len(report.skipped)} skipped, {plural(report.attachments, 'attachment')}.",
        highlight=False,
    )
    if report.skipped:
        table = Table("skipped", "why")
        for name, why in report.skipped:
            table.add_row(escape(name), escape(why))
        console.print(table)


# -- templates --------------------------------------------------------------------------
@templates_app.command("list")
def list_templates(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the templates new pages can start from."""
    templates = _wiki(ctx).templates()
    if as_json:
        print_json(_json(templates))
        return
    table = Table("name", "title", "kind")
    for template in templates:
        table.add_row(template.name, template.title, "built in" if template.builtin else "added")
    console.print(table)


@templates_app.command("add")
def add_template(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits, '-' and '_'.")],
    title: Annotated[str, typer.Option("--title", "-t", help="What people call it.")],
) -> None:
    """Add a template from the markdown on standard input ({{title}} becomes the page's).

    autorag wiki templates add recipe --title "Recipe" < recipe.md
    """
    template = _wiki(ctx).add_template(name, title, _read_stdin("the template"), by=_who())
    console.print(f"Added template {template.name!r}.", highlight=False)


@templates_app.command("rm")
def remove_template(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The template's name.")],
) -> None:
    """Remove a template you added (built-in ones stay)."""
    _wiki(ctx).remove_template(name)
    console.print(f"Removed template {name!r}.", highlight=False)


# `autorag wiki --help` lists the commands in the order a user meets them.
_ORDER = [
    *("create", "new", "show", "edit", "ls", "search", "links", "history", "diff"),
    *("restore", "rename", "rm", "export", "import", "from-doc", "writers"),
]
app.registered_commands.sort(key=lambda command: _ORDER.index(command.name or ""))
