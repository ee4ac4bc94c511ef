"""A workspace's archives (its markdown wiki): archives, pages addressed by path, their
history, links and graph, search, export and import, and the page templates.

A page is ``…/pages/{path}``; what hangs on a page follows ``/-/`` (``…/pages/{path}/-/history``),
which no path can hold: a path segment never is ``-``. Those routes are declared before the
page's own, whose ``{path:path}`` would take them.

Reading needs ``archive:read`` (every member). Writing pages needs ``archive:write``
(managers, admins), or being named in the archive's writers
(``autorag.auth.permissions.may_write_archive``); creating, changing and deleting an
archive, ``archive:write``; deleting one destroys data (a password login, or an API key
with the ``admin:protection`` scope). Templates are added and removed by admins.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from typing import IO, Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import WorkspaceDep
from autorag.api.multipart import receive_upload
from autorag.auth.permissions import ARCHIVE_READ, ARCHIVE_WRITE, may_write_archive
from autorag.errors import Forbidden, UnsupportedMediaType
from autorag.store.catalog.repository import Catalog
from autorag.wiki.grants import MAX_WRITERS, checked_writers
from autorag.wiki.graph import MAX_DEPTH
from autorag.wiki.models import (
    Archive,
    ArchiveConfig,
    Graph,
    ImportReport,
    Page,
    PageHit,
    PageLinks,
    PageSummary,
    PageVersion,
    ProposedEdit,
    Template,
)
from autorag.wiki.service import WikiService
from autorag.wiki.tree import PageNode, page_tree
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(prefix="/api/workspaces/{workspace}", tags=["archives"])

ARCHIVES = "/archives"
ARCHIVE = ARCHIVES + "/{name}"
PAGE = ARCHIVE + "/pages/{path:path}"
ON_PAGE = PAGE + "/-"  # what hangs on a page
_EXPORT_CHUNK = 64 * 1024

ArchiveName = Annotated[
    str, Path(description="The archive's name", min_length=1, max_length=63, examples=["handbook"])
]
PagePath = Annotated[
    str,
    Path(description="The page's path: lowercase segments joined by '/'", max_length=400),
]
Reader = Annotated[Principal, Depends(require(ARCHIVE_READ))]
Manager = Annotated[Principal, Depends(require(ARCHIVE_WRITE))]
Admin = Annotated[Principal, Depends(require("workspaces:admin"))]


def _wiki(context: WorkspaceDep) -> WikiService:
    return WikiService(context)


Wiki = Annotated[WikiService, Depends(_wiki)]


def _writable(principal: Principal, context: WorkspaceDep, wiki: Wiki, name: str) -> Archive:
    """The archive, when the caller may write its pages (403 otherwise)."""
    archive = wiki.archive(name)
    if not may_write_archive(
        lambda permission: principal.can(permission, context.info.name),
        principal.username,
        archive.config.writers,
    ):
        raise Forbidden(
            f"not allowed: writing the pages of archive {archive.name!r} needs "
            f"{ARCHIVE_WRITE}, or a manager naming you among its writers"
        )
    return archive


# -- bodies and answers -----------------------------------------------------------------
# camelCase on the wire, like the rest of the API (and the wiki's own dataclasses, through
# CAMEL_CASE); a body's snake_case field names are still accepted.
class CamelIn(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, validate_by_name=True)


class CamelOut(BaseModel):
    model_config = CAMEL_CASE


class ConfigIn(CamelIn):
    """An archive's options; on a change, only those given change."""

    allow_agent_writes: bool | None = Field(
        default=None, description="The assistant's page edits apply at once, unconfirmed"
    )
    local_llm_only: bool | None = Field(
        default=None, description="Only a local model may read this archive's pages"
    )
    writers: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None,
        max_length=MAX_WRITERS,
        description="Members (user names) who may write this archive's pages",
    )

    def applied_to(self, config: ArchiveConfig, catalog: Catalog) -> ArchiveConfig:
        given = self.model_dump(exclude_none=True)
        if "writers" in given:
            given["writers"] = checked_writers(catalog, given["writers"])
        return dataclasses.replace(config, **given)


class ArchiveCreate(CamelIn):
    name: str = Field(
        min_length=1,
        max_length=100,
        description="Lowercase letters, digits, '-' and '_'; up to 63 characters",
    )
    title: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=4000)
    config: ConfigIn | None = None


class ArchivePatch(CamelIn):
    """Only the keys given change."""

    title: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=4000)
    config: ConfigIn | None = None


class ArchiveListOut(CamelOut):
    archives: list[Archive]


class PageListOut(CamelOut):
    pages: list[PageSummary]
    tree: list[PageNode] | None = None  # with ?tree=true: the pages nested by path


class PageSave(CamelIn):
    title: str | None = Field(default=None, max_length=300)
    body: str = Field(description="Markdown, optionally opening with YAML front matter")
    base_version: int | None = Field(
        ge=1,
        description="The version this save edits; null to create the page",
    )
    template: str | None = Field(default=None, max_length=63)


class PagePreview(CamelIn):
    title: str | None = Field(default=None, max_length=300)
    body: str


class PageRename(CamelIn):
    new_path: str = Field(min_length=1, max_length=400)
    base_version: int = Field(ge=1)


class PageRestore(CamelIn):
    version: int = Field(ge=1)
    base_version: int = Field(ge=1)


class FromDocument(CamelIn):
    document: str = Field(
        min_length=1, max_length=4000, description="The document's id, or its source id"
    )
    path: str = Field(min_length=1, max_length=400)
    title: str | None = Field(default=None, max_length=300)


class HistoryOut(CamelOut):
    versions: list[PageVersion]  # newest first, the current one included


class DiffOut(CamelOut):
    from_version: int
    to_version: int
    diff: str  # unified


class IndexOut(CamelOut):
    markdown: str


class SearchOut(CamelOut):
    query: str
    hits: list[PageHit]


class TemplateIn(CamelIn):
    name: str = Field(min_length=1, max_length=100, description="Like an archive's name")
    title: str = Field(min_length=1, max_length=200)
    body: str = Field(max_length=200_000)


class TemplateListOut(CamelOut):
    templates: list[Template]


# -- archives ---------------------------------------------------------------------------
@router.get(ARCHIVES, response_model=ArchiveListOut)
def list_archives(principal: Reader, wiki: Wiki) -> ArchiveListOut:
    """The workspace's archives."""
    return ArchiveListOut(archives=wiki.list_archives())


@router.post(ARCHIVES, status_code=201, response_model=Archive)
def create_archive(
    principal: Manager, body: ArchiveCreate, context: WorkspaceDep, wiki: Wiki
) -> Archive:
    """Create an archive (409 ``archive_exists`` if the name is taken)."""
    config = body.config.applied_to(ArchiveConfig(), context.catalog) if body.config else None
    return wiki.create_archive(
        body.name,
        title=body.title,
        description=body.description,
        config=config,
        by=principal.username,
    )


@router.get(ARCHIVE, response_model=Archive)
def get_archive(principal: Reader, name: ArchiveName, wiki: Wiki) -> Archive:
    return wiki.archive(name)


@router.patch(ARCHIVE, response_model=Archive)
def update_archive(
    principal: Manager, name: ArchiveName, body: ArchivePatch, context: WorkspaceDep, wiki: Wiki
) -> Archive:
    """Change an archive's title, description or options (its writers among them)."""
    current = wiki.archive(name).config
    config = body.config.applied_to(current, context.catalog) if body.config else None
    return wiki.update_archive(name, title=body.title, description=body.description, config=config)


@router.delete(ARCHIVE, status_code=204, response_class=Response)
def delete_archive(
    principal: Annotated[Principal, Depends(require(ARCHIVE_WRITE, protection=True))],
    name: ArchiveName,
    wiki: Wiki,
) -> Response:
    """Delete an archive with its pages, their history and its index (a password login,
    or an API key with the admin:protection scope)."""
    wiki.delete_archive(name)
    return Response(status_code=204)


@router.get(ARCHIVE + "/pages", response_model=PageListOut)
def list_pages(
    principal: Reader,
    name: ArchiveName,
    wiki: Wiki,
    tree: Annotated[bool, Query(description="Also nest the pages by path")] = False,
) -> PageListOut:
    """The archive's pages, by path."""
    pages = wiki.pages(wiki.archive(name))
    return PageListOut(pages=pages, tree=page_tree(pages) if tree else None)


@router.get(ARCHIVE + "/graph", response_model=Graph)
def archive_graph(principal: Reader, name: ArchiveName, wiki: Wiki) -> Graph:
    """Every page and link of the archive; links to pages that do not exist yet are
    ``dangling``."""
    return wiki.graph(wiki.archive(name))


@router.get(ARCHIVE + "/index", response_model=IndexOut)
def archive_index(principal: Reader, name: ArchiveName, wiki: Wiki) -> IndexOut:
    """The archive's index page, generated from its path tree (markdown)."""
    return IndexOut(markdown=wiki.index_markdown(wiki.archive(name)))


@router.get(ARCHIVE + "/search", response_model=SearchOut)
def search_archive(
    principal: Reader,
    name: ArchiveName,
    wiki: Wiki,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="What to look for")],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    mode: Literal["hybrid", "vector", "fts"] = "hybrid",
) -> SearchOut:
    """Search the archive's pages (vectors and full-text, fused)."""
    return SearchOut(query=q, hits=wiki.search(wiki.archive(name), q, k=k, mode=mode))


@router.get(
    ARCHIVE + "/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}, "description": "The pages, zipped"}},
)
def export_archive(principal: Reader, name: ArchiveName, wiki: Wiki) -> StreamingResponse:
    """The archive as a zip of ``.md`` files with front matter, folders as paths."""
    archive = wiki.archive(name)
    spool = tempfile.TemporaryFile()  # noqa: SIM115  (closed once streamed)
    try:
        wiki.export_zip(archive, spool)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return StreamingResponse(
        _stream(spool),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{archive.name}.zip"'},
    )


def _stream(spool: IO[bytes]) -> Iterator[bytes]:
    with spool:
        while piece := spool.read(_EXPORT_CHUNK):
            yield piece


def _zip_only(filename: str) -> str:
    if not filename.lower().endswith(".zip"):
        raise UnsupportedMediaType("import a .zip of markdown files (folders become paths)")
    return "zip"


@router.post(ARCHIVE + "/import", response_model=ImportReport)
async def import_archive(
    principal: Reader,
    request: Request,
    name: ArchiveName,
    context: WorkspaceDep,
    wiki: Wiki,
) -> ImportReport:
    """Import a zip of markdown files (``multipart/form-data``, field ``file``): an
    Obsidian vault or an export. Pages are created or updated by path; what cannot be
    imported is reported as skipped, with why."""
    archive = await run_in_threadpool(_writable, principal, context, wiki, name)
    limit = int(context.settings.server.max_upload_mb * 1024**2)
    received = await receive_upload(
        request, context.workspace.incoming_uploads_dir, limit, file_type=_zip_only
    )
    try:
        return await run_in_threadpool(
            wiki.import_path, archive, received.path, by=principal.username
        )
    finally:
        received.path.unlink(missing_ok=True)


@router.post(ARCHIVE + "/from-document", status_code=201, response_model=Page)
def page_from_document(
    principal: Reader, name: ArchiveName, body: FromDocument, context: WorkspaceDep, wiki: Wiki
) -> Page:
    """A new page holding an indexed document's text."""
    archive = _writable(principal, context, wiki, name)
    return wiki.page_from_document(
        archive, body.document, body.path, title=body.title, by=principal.username
    )


# -- what hangs on a page (before the page's own routes: {path:path} would take them) ----
@router.get(ON_PAGE + "/history", response_model=HistoryOut)
def page_history(principal: Reader, name: ArchiveName, path: PagePath, wiki: Wiki) -> HistoryOut:
    return HistoryOut(versions=wiki.history(wiki.archive(name), path))


@router.get(ON_PAGE + "/versions/{version}", response_model=PageVersion)
def page_version(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    version: Annotated[int, Path(ge=1, le=2**31)],
    wiki: Wiki,
) -> PageVersion:
    return wiki.version(wiki.archive(name), path, version)


@router.get(ON_PAGE + "/diff", response_model=DiffOut)
def page_diff(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    wiki: Wiki,
    from_version: Annotated[int, Query(alias="from", ge=1, le=2**31)],
    to_version: Annotated[int | None, Query(alias="to", ge=1, le=2**31)] = None,
) -> DiffOut:
    """The unified diff between two versions (``to``: the current one by default)."""
    archive = wiki.archive(name)
    to = to_version if to_version is not None else wiki.page(archive, path).version
    return DiffOut(
        from_version=from_version, to_version=to, diff=wiki.diff(archive, path, from_version, to)
    )


@router.post(ON_PAGE + "/restore", response_model=Page)
def restore_page(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    body: PageRestore,
    context: WorkspaceDep,
    wiki: Wiki,
) -> Page:
    """A new version holding an old one's content (409 ``stale_version`` when the page
    moved past ``baseVersion``)."""
    archive = _writable(principal, context, wiki, name)
    return wiki.restore(
        archive, path, body.version, base_version=body.base_version, by=principal.username
    )


@router.post(ON_PAGE + "/rename", response_model=Page)
def rename_page(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    body: PageRename,
    context: WorkspaceDep,
    wiki: Wiki,
) -> Page:
    """Move a page to a new path; links naming the old path or title keep resolving."""
    archive = _writable(principal, context, wiki, name)
    return wiki.rename_page(
        archive, path, body.new_path, base_version=body.base_version, by=principal.username
    )


@router.post(ON_PAGE + "/preview", response_model=ProposedEdit)
def preview_page(
    principal: Reader, name: ArchiveName, path: PagePath, body: PagePreview, wiki: Wiki
) -> ProposedEdit:
    """What a save would change (a diff), without saving."""
    return wiki.preview_save(wiki.archive(name), path, body=body.body, title=body.title)


@router.get(ON_PAGE + "/links", response_model=PageLinks)
def page_links(principal: Reader, name: ArchiveName, path: PagePath, wiki: Wiki) -> PageLinks:
    """The page's links out, its backlinks (with the sentence around each), and its
    dangling links (to pages not written yet)."""
    return wiki.links(wiki.archive(name), path)


@router.get(ON_PAGE + "/graph", response_model=Graph)
def page_graph(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    wiki: Wiki,
    depth: Annotated[int, Query(ge=1, le=MAX_DEPTH, description="Links away from the page")] = 1,
) -> Graph:
    """The pages and links around the page, up to ``depth`` links away."""
    return wiki.neighbourhood(wiki.archive(name), path, depth=depth)


# -- a page -----------------------------------------------------------------------------
@router.get(PAGE, response_model=Page)
def get_page(principal: Reader, name: ArchiveName, path: PagePath, wiki: Wiki) -> Page:
    """A page by path, or by a name links use for it (its title, an old path)."""
    return wiki.page(wiki.archive(name), path)


@router.put(
    PAGE,
    response_model=Page,
    responses={
        200: {"description": "Updated"},
        201: {"description": "Created"},
        409: {"description": "page_exists, or stale_version with currentVersion"},
    },
)
def save_page(
    principal: Reader,
    name: ArchiveName,
    path: PagePath,
    body: PageSave,
    response: Response,
    context: WorkspaceDep,
    wiki: Wiki,
) -> Page:
    """Create (``baseVersion`` null: 201) or update (the version edited: 200) a page. A
    save built on an older version is refused: 409 ``stale_version`` with
    ``currentVersion``."""
    archive = _writable(principal, context, wiki, name)
    page = wiki.save_page(
        archive,
        path,
        body=body.body,
        title=body.title,
        base_version=body.base_version,
        by=principal.username,
        template=body.template,
    )
    response.status_code = 201 if body.base_version is None else 200
    return page


@router.delete(PAGE, status_code=204, response_class=Response)
def delete_page(
    principal: Reader, name: ArchiveName, path: PagePath, context: WorkspaceDep, wiki: Wiki
) -> Response:
    archive = _writable(principal, context, wiki, name)
    wiki.delete_page(archive, path, by=principal.username)
    return Response(status_code=204)


# -- templates --------------------------------------------------------------------------
@router.get("/archive-templates", response_model=TemplateListOut)
def list_templates(principal: Reader, wiki: Wiki) -> TemplateListOut:
    """Templates for new pages: person, project, meeting, decision, and admins' own."""
    return TemplateListOut(templates=wiki.templates())


@router.post("/archive-templates", status_code=201, response_model=Template)
def add_template(principal: Admin, body: TemplateIn, wiki: Wiki) -> Template:
    return wiki.add_template(body.name, body.title, body.body, by=principal.username)


@router.delete("/archive-templates/{name}", status_code=204, response_class=Response)
def remove_template(
    principal: Admin,
    name: Annotated[str, Path(min_length=1, max_length=63)],
    wiki: Wiki,
) -> Response:
    wiki.remove_template(name)
    return Response(status_code=204)
