"""An archive's pages in and out: a zip export, the import of a folder or zip of markdown
(an Obsidian vault), and a page made from a document of the workspace.

Export: one ``<path>.md`` per page (folders are the path's parts) opening with YAML front
matter (``title``, then the page's own), the files attached to the archive under
``_attachments/``, and the generated ``index.md``; entries in a fixed order with fixed
times, so the same archive always gives the same bytes.

Import reads hostile input: a zip is checked from its central directory before anything
is unpacked (entry count, unpacked size, ratio: the parser guards' limits); entries named
with ``..`` or an absolute path, and symbolic links (in a zip or a folder), are refused
and reported; files that are not UTF-8, or larger than a page may be, are skipped with
the reason. Each page's save is atomic (the service's); the report lists what was
created, updated, left unchanged and skipped.
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from sqlalchemy import Engine

from autorag.dlp.service import DlpService
from autorag.errors import AutoragError, InvalidInput, NotFound
from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.guards import IngestLimits, check_zip_entries, human_size
from autorag.ingest.reading import read_pages
from autorag.wiki import frontmatter, slugs, store
from autorag.wiki.limits import MAX_ATTACHMENT_BYTES
from autorag.wiki.limits import MAX_BODY_BYTES as MAX_PAGE_BYTES
from autorag.wiki.models import Archive, Attachment, ImportReport, Page, PageSummary

if TYPE_CHECKING:
    from autorag.context import AppContext

ATTACHMENTS_DIR = "_attachments"
INDEX_FILE = "index.md"
# Marks the index an export writes: an import skips it (it is made from the pages).
GENERATED_INDEX_KEY = "autorag_generated_index"
# Files kept as the archive's attachments (what pages embed: images, PDFs).
ATTACHMENT_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the zip format's earliest: no clock in the bytes
_FILE_MODE = (stat.S_IFREG | 0o644) << 16


class WikiService(Protocol):
    """What transfer needs of ``wiki.service.WikiService``, which calls it: importing
    that class here, even for types only, is a cycle the import contracts refuse."""

    app: AppContext
    engine: Engine

    def pages(self, archive: Archive) -> list[PageSummary]: ...

    def save_page(
        self,
        archive: Archive,
        path: str,
        *,
        body: str,
        title: str | None = None,
        base_version: int | None,
        by: str,
    ) -> Page: ...

    def index_markdown(self, archive: Archive) -> str: ...

    def attachments(self, archive: Archive) -> list[Attachment]: ...

    def put_attachment(
        self, archive: Archive, name: str, data: bytes, *, by: str, media_type: str | None = None
    ) -> Attachment: ...


# -- export ---------------------------------------------------------------------------
def export_zip(service: WikiService, archive: Archive, out: BinaryIO) -> None:
    """Write the archive as a zip of markdown files to ``out``."""
    pages = sorted(store.full_pages(service.engine, archive.id), key=lambda p: p.path)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        if not any(p.path == "index" for p in pages):  # a page "index" is its own file
            index = {"title": "Index", GENERATED_INDEX_KEY: True}
            _write(zf, INDEX_FILE, frontmatter.compose(index, service.index_markdown(archive)))
        for page in pages:
            _write(zf, f"{page.path}.md", page_markdown(page))
        for attachment in sorted(service.attachments(archive), key=lambda a: a.name):
            found = store.get_attachment(service.engine, archive.id, attachment.name)
            if found is not None:  # unless deleted meanwhile
                _write(zf, f"{ATTACHMENTS_DIR}/{attachment.name}", found[1])


def page_markdown(page: Page) -> str:
    """The page as a file: front matter with its title first, then the body."""
    own = {k: v for k, v in page.front_matter.items() if k != "title"}
    return frontmatter.compose({"title": page.title, **own}, page.body)


def _write(zf: zipfile.ZipFile, name: str, data: str | bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = _FILE_MODE
    zf.writestr(info, data.encode() if isinstance(data, str) else data)


# -- import ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Entry:
    """A file of the source: its name there (``/``-separated), its size, its bytes."""

    name: str
    size: int
    read: Callable[[int], bytes]  # at most this many bytes


@dataclass
class _Import:
    service: WikiService
    archive: Archive
    by: str
    versions: dict[str, int]  # page path -> current version, before the import
    seen: dict[str, str] = field(default_factory=dict)  # page path -> the file it came from
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    attachments: int = 0

    def report(self) -> ImportReport:
        return ImportReport(
            created=self.created,
            updated=self.updated,
            unchanged=self.unchanged,
            skipped=self.skipped,
            attachments=self.attachments,
        )


def import_path(service: WikiService, archive: Archive, source: Path, *, by: str) -> ImportReport:
    """Import a folder, or a zip, of markdown files (an Obsidian vault) into the archive.

    A file's path becomes the page's path (``Projects/Apollo Plan.md`` →
    ``projects/apollo-plan``); its title is the front matter's ``title``, else its first
    ``# heading``, else its file name; ``[[links]]`` are kept as written. A page that
    exists gets a new version only when the file differs from it. Images and PDFs become
    the archive's attachments. A zip that would unpack past the limits is refused before
    anything is read from it (``InvalidInput``, code ``zip_bomb``).
    """
    job = _Import(service, archive, by, {p.path: p.version for p in service.pages(archive)})
    if source.is_symlink():
        raise InvalidInput(f"{source.name} is a symbolic link: give the real path")
    if source.is_dir():
        for entry in sorted(_folder_entries(source, job.skipped), key=lambda e: e.name):
            _import_entry(job, entry)
    elif source.is_file():
        with _open_zip(source, service.app.indexer.limits) as zf:
            for entry in sorted(_zip_entries(zf, job.skipped), key=lambda e: e.name):
                _import_entry(job, entry)
    else:
        raise NotFound(f"no folder or zip at {source}", code="import_source_not_found")
    return job.report()


def _import_entry(job: _Import, entry: _Entry) -> None:
    suffix = PurePosixPath(entry.name).suffix.lower()
    try:
        if entry.name.startswith(f"{ATTACHMENTS_DIR}/"):  # an export's: whatever its type
            _import_attachment(job, entry, ATTACHMENT_TYPES.get(suffix))
        elif suffix == ".md":
            _import_page(job, entry)
        elif suffix in ATTACHMENT_TYPES:
            _import_attachment(job, entry, ATTACHMENT_TYPES[suffix])
        else:
            job.skipped.append((entry.name, "not a markdown file, an image or a PDF"))
    # Gone, swapped for a link, a bad CRC, a corrupt deflate stream, a compression
    # method zipfile does not know...
    except (OSError, zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
        job.skipped.append((entry.name, f"could not be read: {exc}"))


def _import_page(job: _Import, entry: _Entry) -> None:
    skip = job.skipped
    if entry.size > MAX_PAGE_BYTES:
        skip.append((entry.name, f"{human_size(entry.size)}, over the 2 MiB a page may hold"))
        return
    data = entry.read(MAX_PAGE_BYTES + 1)
    if len(data) > MAX_PAGE_BYTES:
        skip.append((entry.name, "over the 2 MiB a page may hold"))
        return
    try:
        text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        skip.append((entry.name, "not UTF-8 text"))
        return
    try:
        path = slugs.normalise_path(entry.name)
        front, body = frontmatter.split(text)
    except InvalidInput as exc:
        skip.append((entry.name, exc.message))
        return
    if front.get(GENERATED_INDEX_KEY) is True and entry.name == INDEX_FILE:
        skip.append((entry.name, "the index an export writes (made again from the pages)"))
        return
    if path in job.seen:
        skip.append((entry.name, f"the same page path as {job.seen[path]} ({path})"))
        return
    job.seen[path] = entry.name
    title = _title(front, body, entry.name)
    _save(job, entry.name, path, title, {k: v for k, v in front.items() if k != "title"}, body)


def _save(job: _Import, name: str, path: str, title: str, front: dict[str, Any], body: str) -> None:
    base = job.versions.get(path)
    markdown = frontmatter.compose(front, body)
    try:  # a save that changes nothing leaves the page at its version: unchanged
        saved = job.service.save_page(
            job.archive, path, body=markdown, title=title, base_version=base, by=job.by
        )
    except AutoragError as exc:  # stale, invalid...: this page only, nothing half-written
        job.skipped.append((name, exc.message))
        return
    if base is None:
        job.created.append(saved.path)
    elif saved.version == base:
        job.unchanged.append(saved.path)
    else:
        job.updated.append(saved.path)


def _title(front: dict[str, Any], body: str, name: str) -> str:
    """The front matter's title, else the first ``# heading``, else the file name."""
    given = front.get("title")
    if isinstance(given, str | int | float) and str(given).strip():
        return str(given).strip()
    for line in body.split("\n"):
        heading = line[2:].strip().rstrip("#").strip() if line.startswith("# ") else ""
        if heading:
            return heading
    return PurePosixPath(name).stem


def _import_attachment(job: _Import, entry: _Entry, media_type: str | None) -> None:
    name = entry.name.removeprefix(f"{ATTACHMENTS_DIR}/")
    if entry.size > MAX_ATTACHMENT_BYTES:
        reason = f"{human_size(entry.size)}, over the {human_size(MAX_ATTACHMENT_BYTES)} limit"
        job.skipped.append((entry.name, reason))
        return
    data = entry.read(MAX_ATTACHMENT_BYTES + 1)
    if len(data) > MAX_ATTACHMENT_BYTES:
        job.skipped.append((entry.name, "over the attachment size limit"))
        return
    try:
        job.service.put_attachment(job.archive, name, data, media_type=media_type, by=job.by)
    except AutoragError as exc:
        job.skipped.append((entry.name, exc.message))
        return
    job.attachments += 1


# -- sources --------------------------------------------------------------------------
def _folder_entries(root: Path, skipped: list[tuple[str, str]]) -> Iterator[_Entry]:
    """The regular files under ``root``; links are never followed, hidden names skipped."""
    for here, folders, files in os.walk(root, followlinks=False):
        base = Path(here)
        for folder in sorted(folders):
            relative = (base / folder).relative_to(root).as_posix()
            if (base / folder).is_symlink():
                skipped.append((relative + "/", "a symbolic link (not followed)"))
                folders.remove(folder)
            elif folder.startswith("."):
                skipped.append((relative + "/", "a hidden folder"))
                folders.remove(folder)
        for file in sorted(files):
            path = base / file
            relative = path.relative_to(root).as_posix()
            try:
                info = path.lstat()
            except OSError as exc:
                skipped.append((relative, f"could not be read: {exc.strerror}"))
                continue
            if stat.S_ISLNK(info.st_mode):
                skipped.append((relative, "a symbolic link (not followed)"))
            elif not stat.S_ISREG(info.st_mode):
                skipped.append((relative, "not a regular file"))
            elif file.startswith("."):
                skipped.append((relative, "a hidden file"))
            else:
                yield _Entry(relative, info.st_size, _file_reader(path))


def _file_reader(path: Path) -> Callable[[int], bytes]:
    def read(limit: int) -> bytes:
        # O_NOFOLLOW: a file swapped for a link after the walk is not followed.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit)

    return read


def _open_zip(source: Path, limits: IngestLimits) -> zipfile.ZipFile:
    """The zip, once its central directory passed the zip-bomb limits (nothing is
    unpacked before)."""
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError):
        raise InvalidInput(
            f"{source.name} is not a zip file (import takes a folder or a zip of markdown)",
            code="not_a_zip",
        ) from None
    try:
        check_zip_entries(source.name, zf.infolist(), limits)
    except ParseError as exc:
        zf.close()
        raise InvalidInput(f"refused: {exc.message}", code="zip_bomb") from None
    return zf


def _zip_entries(zf: zipfile.ZipFile, skipped: list[tuple[str, str]]) -> Iterator[_Entry]:
    for info in zf.infolist():
        if info.is_dir():
            continue
        why = _refused(info)
        if why is not None:
            skipped.append((info.filename, why))
        else:
            yield _Entry(info.filename, info.file_size, _zip_reader(zf, info))


def _refused(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    parts = name.split("/")
    if "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute or Windows path (refused)"
    if any(part in ("..", ".") for part in parts) or "" in parts:
        return "a path that leaves its folder ('..', '.' or '//': refused)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link (refused)"
    if info.flag_bits & 0x1:
        return "encrypted (cannot be read)"
    if any(part.startswith(".") for part in parts):
        return "a hidden file"
    return None


def _zip_reader(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[int], bytes]:
    def read(limit: int) -> bytes:
        # zipfile stops at the entry's declared size and checks its CRC.
        with zf.open(info) as handle:
            return handle.read(limit)

    return read


# -- a page from a document -----------------------------------------------------------
def page_from_document(
    service: WikiService,
    archive: Archive,
    document_ref: str,
    path: str,
    *,
    title: str | None,
    by: str,
) -> Page:
    """A new page holding the text of one of the workspace's documents (as the index
    reads it), with front matter ``source: <source id>``. ``NotFound`` for a document
    that is not this workspace's; DLP, when on, redacts the text first (every member
    reads an archive's pages, whatever DLP exempts their role from)."""
    app = service.app
    document = app.catalog.get_document(app.info.id, document_ref.strip())
    if document.status == "deleting":
        raise NotFound(f"no document {document_ref!r} in this workspace")
    if document.status != "ready":
        raise InvalidInput(
            f"document {document.id} has no text to copy yet (it is {document.status})",
            code="document_not_ready",
        )
    texts = read_pages(app.catalog, app.info, document.id)
    text = "\n\n".join(t.strip("\n") for t in texts if t.strip())
    dlp = DlpService(app.catalog, app.settings.dlp)
    if dlp.settings.enabled:
        text = dlp.scan(text).redacted_text
    name = title if title is not None and title.strip() else document.title
    name = name.strip() or PurePosixPath(document.source_id).stem or f"Document {document.id}"
    markdown = frontmatter.compose({"source": document.source_id}, text)
    return service.save_page(archive, path, body=markdown, title=name, base_version=None, by=by)
