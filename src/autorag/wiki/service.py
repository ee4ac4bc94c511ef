"""The wiki service: a workspace's archives, their pages, versions, links and templates.

Every face (routes, commands, the agent's skills) goes through ``WikiService``; it takes
the application context scoped to one workspace and returns the dataclasses of
``autorag.wiki.models``. A save writes the page, its new version and its links in one
catalog transaction (the version check is one atomic ``UPDATE … WHERE version = base``);
the search index is updated after the commit, and a page whose index update failed is
caught up by its next save or by ``reindex_pages``.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import mimetypes
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from autorag.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, StaleVersion
from autorag.store.catalog.models import utcnow
from autorag.wiki import frontmatter, graph, store
from autorag.wiki.limits import MAX_ATTACHMENT_BYTES, MAX_BODY_BYTES
from autorag.wiki.links import ParsedLink, key_of, mask_code, parse_links
from autorag.wiki.models import (
    Archive,
    ArchiveConfig,
    Attachment,
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
from autorag.wiki.slugs import _shown, check_name, is_path, normalise_path
from autorag.wiki.tree import page_tree

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.wiki.indexing import PageIndex

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 300
MAX_DESCRIPTION_CHARS = 5000
MAX_TEMPLATE_BYTES = 64 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEADING = re.compile(r"^ {0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,60}/[a-z0-9][a-z0-9!#$&^_.+-]{0,60}")
ArchiveRef = Archive | str | int

BUILTIN_TEMPLATES: dict[str, Template] = {
    t.name: t
    for t in (
        Template(
            "person",
            "Person",
            "---\ntype: person\nrole: ''\norganisation: ''\nemail: ''\n---\n# {{title}}\n\n"
            "## Role\n\n## Contact\n\n## Works on\n\n## Notes\n",
        ),
        Template(
            "project",
            "Project",
            "---\ntype: project\nstatus: active\nowner: ''\nstarted: ''\n---\n# {{title}}\n\n"
            "## Goal\n\n## Status\n\n## People\n\n## Decisions\n\n## Links\n",
        ),
        Template(
            "meeting",
            "Meeting",
            "---\ntype: meeting\ndate: ''\nattendees: []\n---\n# {{title}}\n\n"
            "## Agenda\n\n## Notes\n\n## Decisions\n\n## Action items\n",
        ),
        Template(
            "decision",
            "Decision",
            "---\ntype: decision\nstatus: proposed\ndate: ''\ndeciders: []\n---\n# {{title}}\n\n"
            "## Context\n\n## Decision\n\n## Alternatives considered\n\n## Consequences\n",
        ),
    )
}


class _Index(Enum):
    DEFAULT = "default"  # the real PageIndex on this context


@dataclass(frozen=True)
class _Content:
    """A save's content once checked: what the page will hold."""

    title: str
    body: str  # without the front matter
    front_matter: dict[str, Any]
    links: list[ParsedLink]


class WikiService:
    """The archives of the context's workspace.

    ``index``: where pages are indexed for search; the default is the archive's own
    namespace (``PageIndex``). ``None`` means no index at all: only for measuring the
    catalog side alone (the wiki benchmark) — pages saved so are not searchable.
    """

    def __init__(self, app: AppContext, *, index: PageIndex | _Index | None = _Index.DEFAULT):
        self.app = app
        self.engine = app.catalog.engine
        self.workspace_id = app.info.id
        if index is _Index.DEFAULT:
            from autorag.wiki.indexing import PageIndex

            index = PageIndex(app)
        self._index: PageIndex | None = index

    # -- archives -----------------------------------------------------------------------
    def create_archive(
        self,
        name: str,
        *,
        title: str = "",
        description: str = "",
        config: ArchiveConfig | None = None,
        by: str = "",
    ) -> Archive:
        return store.insert_archive(
            self.engine,
            self.workspace_id,
            check_name(name),
            title=_archive_title(title),
            description=_description(description),
            config=config or ArchiveConfig(),
            by=by,
        )

    def list_archives(self) -> list[Archive]:
        return store.list_archives(self.engine, self.workspace_id)

    def archive(self, ref: ArchiveRef) -> Archive:
        """An archive of this workspace by name or id (never another workspace's), with
        its page count."""
        return self._archive(ref, counted=True)

    def _archive(self, ref: ArchiveRef, *, counted: bool = False) -> Archive:
        """``archive``; uncounted (``page_count`` 0) unless asked: the service's own
        lookups need only the archive."""
        if isinstance(ref, Archive):
            ref = ref.id
        found: Archive | None = None
        ws = self.workspace_id
        if isinstance(ref, int) and not isinstance(ref, bool):
            found = store.find_archive(self.engine, ws, archive_id=ref, counted=counted)
        elif isinstance(ref, str):
            name = ref.strip().lower()
            found = store.find_archive(self.engine, ws, name=name, counted=counted)
            if found is None and name.isdigit() and len(name) < 12:
                found = store.find_archive(self.engine, ws, archive_id=int(name), counted=counted)
        if found is None:
            raise NotFound(f"no archive {_shown(ref)} in this workspace", code="archive_not_found")
        return found

    def update_archive(
        self,
        ref: ArchiveRef,
        *,
        title: str | None = None,
        description: str | None = None,
        config: ArchiveConfig | None = None,
    ) -> Archive:
        archive = self._archive(ref)
        values: dict[str, Any] = {}
        if title is not None:
            values["title"] = _archive_title(title)
        if description is not None:
            values["description"] = _description(description)
        if config is not None:
            values["config"] = store.config_json(config)
        if values:
            store.update_archive(self.engine, archive.id, values)
        return self.archive(archive.id)

    def delete_archive(self, ref: ArchiveRef) -> None:
        """The archive with its pages, versions, links, aliases, attachments and search
        index. The index goes first: if that fails, nothing is deleted."""
        archive = self._archive(ref)
        if self._index is not None:
            store.forget_index(self.engine, archive.id)
            self._index.drop(archive)
        store.delete_archive(self.engine, archive.id)

    # -- pages --------------------------------------------------------------------------
    def pages(self, archive: ArchiveRef) -> list[PageSummary]:
        return store.list_pages(self.engine, self._archive(archive).id)

    def page(self, archive: ArchiveRef, ref: str) -> Page:
        """A page by its path, or by a name as links write it: a title (any case), an old
        path or an old title."""
        return self._state(self._archive(archive), ref).page

    def save_page(
        self,
        archive: ArchiveRef,
        path: str,
        *,
        body: str,
        title: str | None = None,
        base_version: int | None,
        by: str,
        template: str | None = None,
        note: str = "",
    ) -> Page:
        """Create (``base_version`` None) or update the page at ``path``; ``body`` may open
        with YAML front matter. A save that changes nothing returns the page as it is.
        ``note`` goes with the new version in the page's history (a synthesis run names
        itself and its sources there)."""
        target = self._archive(archive)
        path = normalise_path(path)
        base = _base(base_version)
        current = self._current(target.id, path)
        if base is None:
            if current is not None:
                raise _page_exists(path)
            content = self._content(path, body, title, template=template, current=None)
            return self._create(target, path, content, by=by, note=note)
        if current is None:
            raise NotFound(f"no page {path!r} in this archive", code="page_not_found")
        if current.page.version != base:
            raise _stale(path, current.page.version)
        content = self._content(path, body, title, template=None, current=current)
        return self._update(target, current, content, base=base, by=by, note=note)

    def preview_save(
        self, archive: ArchiveRef, path: str, *, body: str, title: str | None = None
    ) -> ProposedEdit:
        """What ``save_page`` would do, without doing it: the diff against the page now."""
        target = self._archive(archive)
        path = normalise_path(path)
        current = self._current(target.id, path)
        content = self._content(path, body, title, template=None, current=current)
        new_text = frontmatter.compose(content.front_matter, content.body)
        if current is None:
            old_text, old_label, new_label = "", "(new page)", f"{path} (new)"
        else:
            old_text = _markdown(current.page)
            old_label = f"{path} (version {current.page.version})"
            new_label = f"{path} (proposed)"
        return ProposedEdit(
            archive_id=target.id,
            archive=target.name,
            path=path,
            action="create" if current is None else "update",
            title=content.title,
            body=new_text,
            diff=_diff(old_text, new_text, old_label, new_label),
            base_version=None if current is None else current.page.version,
        )

    def rename_page(
        self, archive: ArchiveRef, path: str, new_path: str, *, base_version: int, by: str
    ) -> Page:
        """Move a page to ``new_path``: the same page (id, history, backlinks); its old
        path keeps naming it."""
        target = self._archive(archive)
        state = self._at(target.id, normalise_path(path))
        new = normalise_path(new_path)
        base = _base(base_version)
        if base != state.page.version:
            raise _stale(state.page.path, state.page.version)
        if new == state.page.path:
            return state.page
        old = state.page.path
        now = utcnow()
        try:
            with self.engine.begin() as conn:
                store.lock_archive(conn, target.id)
                if not store.update_page(
                    conn, state.page.id, base, {"path": new, "updated_at": now, "updated_by": by}
                ):
                    raise self._stale_in(conn, state.page)
                page = replace(
                    state.page, path=new, version=base + 1, updated_at=now, updated_by=by
                )
                self._record(conn, page, note=f"renamed from {old}")
                store.add_alias(conn, target.id, page.id, "path", old)
                store.reresolve(conn, target.id, slugs={old, new})
        except IntegrityError:
            raise _page_exists(new) from None
        self._index_page(target, page, state.document_id)
        return page

    def delete_page(self, archive: ArchiveRef, path: str, *, by: str) -> None:
        """The page and its versions; links to it turn dangling (or find another page by
        that name)."""
        target = self._archive(archive)
        state = self._at(target.id, normalise_path(path))
        with self.engine.begin() as conn:
            store.lock_archive(conn, target.id)
            aliases = store.aliases_of(conn, state.page.id)
            store.delete_page(conn, state.page.id)
            store.reresolve(
                conn,
                target.id,
                slugs={state.page.path, *(key for kind, key in aliases if kind == "path")},
                keys={state.title_key, *(key for kind, key in aliases if kind == "title")},
            )
        log.info("archive %s: page %s deleted by %s", target.name, state.page.path, by or "-")
        if self._index is not None and state.document_id is not None:
            try:
                self._index.remove(target, state.document_id)
            except Exception:  # the page is gone; its stale passages are skipped by search
                log.warning("page %s: its search passages were not removed", state.page.path)

    def reindex_pages(self, archive: ArchiveRef) -> int:
        """Index again the pages whose index is behind their version; how many."""
        target = self._archive(archive)
        behind = store.behind_index(self.engine, target.id)
        for state in behind:
            self._index_page(target, state.page, state.document_id)
        return len(behind)

    # -- history ------------------------------------------------------------------------
    def history(self, archive: ArchiveRef, path: str) -> list[PageVersion]:
        """Every version of the page, newest (the current one) first."""
        state = self._state(self._archive(archive), path)
        return store.versions(self.engine, state.page.id)

    def version(self, archive: ArchiveRef, path: str, n: int) -> PageVersion:
        state = self._state(self._archive(archive), path)
        return self._version(state.page, n)

    def diff(self, archive: ArchiveRef, path: str, old: int, new: int) -> str:
        """A unified diff of the page's markdown (front matter included), old to new."""
        state = self._state(self._archive(archive), path)
        before, after = self._version(state.page, old), self._version(state.page, new)
        return _diff(
            frontmatter.compose(before.front_matter, before.body),
            frontmatter.compose(after.front_matter, after.body),
            f"{before.path} (version {before.version})",
            f"{after.path} (version {after.version})",
        )

    def restore(
        self, archive: ArchiveRef, path: str, version: int, *, base_version: int, by: str
    ) -> Page:
        """A new version holding an old version's title, body and front matter."""
        target = self._archive(archive)
        state = self._state(target, path)
        old = self._version(state.page, version)
        base = _base(base_version)
        if base != state.page.version:
            raise _stale(state.page.path, state.page.version)
        content = _Content(old.title, old.body, old.front_matter, parse_links(old.body))
        return self._update(
            target, state, content, base=base, by=by, note=f"restored from version {version}"
        )

    # -- links and graph ----------------------------------------------------------------
    def links(self, archive: ArchiveRef, path: str) -> PageLinks:
        target = self._archive(archive)
        page = self._state(target, path).page
        outgoing = store.outgoing(self.engine, page.id)
        backlinks = store.backlinks(self.engine, page.id)
        dangling = [link for link in outgoing if link.target_page_id is None]
        return PageLinks(outgoing, backlinks, dangling)

    def graph(self, archive: ArchiveRef) -> Graph:
        return graph.whole(self.engine, self._archive(archive).id)

    def neighbourhood(self, archive: ArchiveRef, path: str, depth: int = 1) -> Graph:
        target = self._archive(archive)
        page = self._state(target, path).page
        return graph.neighbourhood(self.engine, page.id, depth)

    def index_markdown(self, archive: ArchiveRef) -> str:
        """The archive's index page: its paths as a tree, each page a ``[[path|Title]]``."""
        target = self._archive(archive)
        return _index_markdown(target, store.list_pages(self.engine, target.id))

    # -- templates ----------------------------------------------------------------------
    def templates(self) -> list[Template]:
        return [*BUILTIN_TEMPLATES.values(), *store.list_templates(self.engine, self.workspace_id)]

    def template(self, name: str) -> Template:
        key = name.strip().lower() if isinstance(name, str) else ""
        if key in BUILTIN_TEMPLATES:
            return BUILTIN_TEMPLATES[key]
        for template in store.list_templates(self.engine, self.workspace_id):
            if template.name == key:
                return template
        raise NotFound(f"no template {_shown(name)}", code="template_not_found")

    def add_template(self, name: str, title: str, body: str, *, by: str) -> Template:
        key = check_name(name, what="template", code="invalid_template_name")
        if key in BUILTIN_TEMPLATES:
            raise Conflict(f"{key!r} is a built-in template", code="template_exists")
        if (
            not isinstance(body, str)
            or len(body.encode("utf-8", "surrogatepass")) > MAX_TEMPLATE_BYTES
        ):
            raise InvalidInput(
                f"a template is text of at most {MAX_TEMPLATE_BYTES // 1024} KB",
                code="invalid_template",
            )
        frontmatter.split(_no_nul(body))  # its front matter must be valid YAML
        template = Template(key, _title(title or key), body, builtin=False)
        store.insert_template(self.engine, self.workspace_id, template, by=by)
        return template

    def remove_template(self, name: str) -> None:
        key = name.strip().lower() if isinstance(name, str) else ""
        if key in BUILTIN_TEMPLATES:
            raise InvalidInput(
                f"{key!r} is a built-in template and cannot be removed", code="builtin_template"
            )
        store.delete_template(self.engine, self.workspace_id, key)

    # -- attachments --------------------------------------------------------------------
    def attachments(self, archive: ArchiveRef) -> list[Attachment]:
        return store.list_attachments(self.engine, self._archive(archive).id)

    def attachment(self, archive: ArchiveRef, name: str) -> tuple[str, bytes]:
        """``(media type, bytes)`` of one of the archive's files."""
        found = store.get_attachment(self.engine, self._archive(archive).id, normalise_path(name))
        if found is None:
            raise NotFound(f"no attachment {_shown(name)}", code="attachment_not_found")
        return found

    def put_attachment(
        self,
        archive: ArchiveRef,
        name: str,
        data: bytes,
        *,
        by: str,
        media_type: str | None = None,
    ) -> Attachment:
        """Keep (or replace) a file with the archive; its media type from its name when
        not given."""
        target = self._archive(archive)
        key = normalise_path(name)
        if len(data) > MAX_ATTACHMENT_BYTES:
            raise PayloadTooLarge(
                f"an attachment may be at most {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB",
                code="attachment_too_large",
            )
        kind = (media_type or mimetypes.guess_type(key)[0] or "application/octet-stream").lower()
        if not _MEDIA_TYPE.fullmatch(kind):
            raise InvalidInput(f"{_shown(media_type)} is not a media type", code="invalid_input")
        return store.put_attachment(
            self.engine,
            target.id,
            key,
            media_type=kind,
            data=bytes(data),
            sha256=hashlib.sha256(data).hexdigest(),
            by=by,
        )

    # -- search, import, export (the search slice's engines) ----------------------------
    def search(
        self, archive: ArchiveRef, query: str, *, k: int = 10, mode: str = "hybrid"
    ) -> list[PageHit]:
        target = self._archive(archive)
        if self._index is None:
            return []
        return self._index.search(target, query, k=k, mode=mode)

    def export_zip(self, archive: ArchiveRef, out: BinaryIO) -> None:
        from autorag.wiki import transfer

        transfer.export_zip(self, self._archive(archive), out)

    def import_path(self, archive: ArchiveRef, source: Path, *, by: str) -> ImportReport:
        from autorag.wiki import transfer

        return transfer.import_path(self, self._archive(archive), source, by=by)

    def page_from_document(
        self,
        archive: ArchiveRef,
        document_ref: str,
        path: str,
        *,
        title: str | None = None,
        by: str,
    ) -> Page:
        from autorag.wiki import transfer

        return transfer.page_from_document(
            self, self._archive(archive), document_ref, path, title=title, by=by
        )

    # -- internals ----------------------------------------------------------------------
    def _current(self, archive_id: int, path: str) -> store.PageState | None:
        with self.engine.connect() as conn:
            return store.page_state(conn, archive_id, path=path)

    def _at(self, archive_id: int, path: str) -> store.PageState:
        state = self._current(archive_id, path)
        if state is None:
            raise NotFound(f"no page {path!r} in this archive", code="page_not_found")
        return state

    def _state(self, archive: Archive, ref: str) -> store.PageState:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInput("name a page by its path or title", code="invalid_page_path")
        slug = is_path(ref)
        with self.engine.connect() as conn:
            state = store.page_state(conn, archive.id, path=slug) if slug else None
            if state is None:
                page_id = store.find_page_id(conn, archive.id, slug=slug, key=key_of(ref))
                if page_id is not None:
                    state = store.page_state(conn, archive.id, page_id=page_id)
        if state is None:
            raise NotFound(f"no page {_shown(ref)} in this archive", code="page_not_found")
        return state

    def _version(self, page: Page, n: int) -> PageVersion:
        found = store.version(self.engine, page.id, n) if _is_int(n) else None
        if found is None:
            raise NotFound(
                f"page {page.path!r} has no version {_shown(n)}", code="version_not_found"
            )
        return found

    def _content(
        self,
        path: str,
        markdown: str,
        title: str | None,
        *,
        template: str | None,
        current: store.PageState | None,
    ) -> _Content:
        """Check a save's input and work out what the page will hold."""
        if not isinstance(markdown, str):
            raise InvalidInput("a page's body is text", code="invalid_input")
        size = len(markdown.encode("utf-8", "surrogatepass"))
        if size > MAX_BODY_BYTES:
            raise PayloadTooLarge(
                f"a page may be at most {MAX_BODY_BYTES // (1024 * 1024)} MB "
                f"(this one is {size / (1024 * 1024):.1f} MB)",
                code="page_too_large",
            )
        markdown = _no_nul(markdown)
        chosen = _title(title) if title is not None else None
        if template is not None and current is None and not markdown.strip():
            shape = self.template(template)
            markdown = shape.body.replace("{{title}}", chosen or _title_from_path(path))
        front, body = frontmatter.split(markdown)
        if chosen is None:
            named = front.get("title")
            if isinstance(named, str) and named.strip():
                chosen = _title(named)
            elif current is not None:
                chosen = current.page.title
            else:
                chosen = _title(_first_heading(body) or _title_from_path(path))
        return _Content(chosen, body, front, parse_links(body))

    def _create(
        self, archive: Archive, path: str, content: _Content, *, by: str, note: str = ""
    ) -> Page:
        now = utcnow()
        values = {
            "path": path,
            "title": content.title,
            "title_key": key_of(content.title),
            "body": content.body,
            "front_matter": _json(content.front_matter),
            "version": 1,
            "created_at": now,
            "created_by": by,
            "updated_at": now,
            "updated_by": by,
        }
        try:
            with self.engine.begin() as conn:
                store.lock_archive(conn, archive.id)
                page_id = store.insert_page(conn, archive.id, values)
                page = Page(
                    page_id, archive.id, path, content.title, content.body,
                    content.front_matter, 1, now, by, now, by,
                )  # fmt: skip
                self._record(conn, page, note=note)
                store.replace_links(conn, archive.id, page_id, content.links)
                store.reresolve(conn, archive.id, slugs={path}, keys={key_of(content.title)})
        except IntegrityError:
            raise _page_exists(path) from None
        self._index_page(archive, page, None)
        return page

    def _update(
        self,
        archive: Archive,
        current: store.PageState,
        content: _Content,
        *,
        base: int,
        by: str,
        note: str,
    ) -> Page:
        old = current.page
        if (content.title, content.body, content.front_matter) == (
            old.title,
            old.body,
            old.front_matter,
        ):
            if current.indexed_version < old.version:
                self._index_page(archive, old, current.document_id)
            return old
        now = utcnow()
        new_key = key_of(content.title)
        values = {
            "title": content.title,
            "title_key": new_key,
            "body": content.body,
            "front_matter": _json(content.front_matter),
            "updated_at": now,
            "updated_by": by,
        }
        with self.engine.begin() as conn:
            store.lock_archive(conn, archive.id)
            if not store.update_page(conn, old.id, base, values):
                raise self._stale_in(conn, old)
            page = replace(
                old,
                title=content.title,
                body=content.body,
                front_matter=content.front_matter,
                version=base + 1,
                updated_at=now,
                updated_by=by,
            )
            self._record(conn, page, note=note)
            store.replace_links(conn, archive.id, old.id, content.links)
            if new_key != current.title_key:
                store.add_alias(conn, archive.id, old.id, "title", current.title_key)
                store.reresolve(conn, archive.id, keys={current.title_key, new_key})
        self._index_page(archive, page, current.document_id)
        return page

    def _record(self, conn: Connection, page: Page, *, note: str) -> None:
        store.insert_version(
            conn,
            page.id,
            page.version,
            {
                "path": page.path,
                "title": page.title,
                "body": page.body,
                "front_matter": _json(page.front_matter),
                "saved_at": page.updated_at,
                "saved_by": page.updated_by,
                "note": note,
            },
        )

    def _stale_in(self, conn: Connection, page: Page) -> StaleVersion | NotFound:
        version = store.current_version(conn, page.id)
        if version is None:
            return NotFound(f"no page {page.path!r} in this archive", code="page_not_found")
        return _stale(page.path, version)

    def _index_page(self, archive: Archive, page: Page, old_document_id: int | None) -> None:
        """After the commit: the page into the search index. A failure leaves the page
        saved and marked behind (``indexed_version``), for the next save to catch up."""
        if self._index is None:
            return
        try:
            document_id = self._index.put(archive, page)
            if not store.mark_indexed(self.engine, page.id, page.version, document_id):
                self._put_newest(archive, page)
            if old_document_id is not None and old_document_id != document_id:
                self._index.remove(archive, old_document_id)
        except Exception:  # the save stands; the index catches up later
            log.warning(
                "archive %s: page %s (version %d) saved but not indexed; it is indexed "
                "again on its next save or by reindex_pages",
                archive.name,
                page.path,
                page.version,
                exc_info=True,
            )

    def _put_newest(self, archive: Archive, page: Page) -> None:
        """A newer version of ``page`` was indexed while this one was, and this one's put
        may have landed last: put the newest version back on top."""
        assert self._index is not None
        with self.engine.connect() as conn:
            newest = store.page_state(conn, archive.id, page_id=page.id)
        if newest is not None and newest.page.version > page.version:
            self._index.put(archive, newest.page)


# -- helpers ----------------------------------------------------------------------------
def _json(value: dict[str, Any]) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def _markdown(page: Page) -> str:
    return frontmatter.compose(page.front_matter, page.body)


def _diff(old: str, new: str, old_label: str, new_label: str) -> str:
    # Lines compared without their ends: a last line with or without a newline is the
    # same line to a reader (a page typed without one is not shown removed and re-added).
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        fromfile=old_label,
        tofile=new_label,
        lineterm="",
    )
    return "".join(line + "\n" for line in lines)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _base(base_version: int | None) -> int | None:
    if base_version is None:
        return None
    if not _is_int(base_version) or base_version < 1:
        raise InvalidInput(
            "base_version is the page version the edit starts from (1 or more), or null "
            "to create the page",
            code="invalid_input",
        )
    return base_version


def _stale(path: str, current: int) -> StaleVersion:
    return StaleVersion(
        f"page {path!r} changed since that version: it is at version {current}; "
        "reload it and apply the edit again",
        current_version=current,
    )


def _page_exists(path: str) -> Conflict:
    return Conflict(f"a page {path!r} exists already", code="page_exists")


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise InvalidInput("the text holds a NUL character", code="invalid_input")
    return text


def _title(raw: object) -> str:
    if not isinstance(raw, str):
        raise InvalidInput("a title is text", code="invalid_page_title")
    title = " ".join(raw.split())
    if not title:
        raise InvalidInput("a title cannot be empty", code="invalid_page_title")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(
            f"a title may be at most {MAX_TITLE_CHARS} characters", code="invalid_page_title"
        )
    if _CONTROL.search(title):
        raise InvalidInput("a title cannot hold control characters", code="invalid_page_title")
    return title


def _archive_title(raw: str) -> str:
    return "" if isinstance(raw, str) and not raw.strip() else _title(raw)


def _description(raw: str) -> str:
    if not isinstance(raw, str) or len(raw) > MAX_DESCRIPTION_CHARS:
        raise InvalidInput(
            f"a description is text of at most {MAX_DESCRIPTION_CHARS} characters",
            code="invalid_input",
        )
    return _no_nul(raw.strip())


def _title_from_path(path: str) -> str:
    """``projects/apollo-launch`` → ``Apollo launch``."""
    words = re.sub(r"[-_.]+", " ", path.rsplit("/", 1)[-1]).strip()
    return (words[:1].upper() + words[1:]) or path


def _first_heading(body: str) -> str | None:
    match = _HEADING.search(mask_code(body))
    if match is None:
        return None
    start, end = match.span(1)
    heading = " ".join(body[start:end].split())
    return heading[:MAX_TITLE_CHARS] or None


def _index_markdown(archive: Archive, pages: Iterable[PageSummary]) -> str:
    """The page tree depth-first: a folder with no page as ``name/``, a page as a link."""
    lines = [f"# {archive.title or archive.name}: index", ""]
    stack = list(reversed(page_tree(pages)))
    while stack:
        node = stack.pop()
        if node.page is None:
            entry = f"{node.name}/"
        else:
            label = node.page.title.replace("|", "/").replace("]]", "] ]")
            entry = f"[[{node.path}|{label}]]"
        lines.append(f"{'  ' * node.path.count('/')}- {entry}")
        stack.extend(reversed(node.children))
    if len(lines) == 2:
        lines.append("No pages yet.")
    return "\n".join(lines) + "\n"
