"""Uploads: file-name sanitising and content sniffing."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.samples import write_csv, write_docx, write_pdf, write_pptx, write_xlsx

from autorag.errors import InvalidInput, UnsupportedMediaType
from autorag.ingest.parsers.guards import IngestLimits
from autorag.ingest.uploads import (
    sanitize_filename,
    sniff,
    upload_source_id,
    upload_type,
)
from autorag.sources import normalize_source

LIMITS = IngestLimits()
SHA = "ab" * 32


# -- file names -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../x.pdf", "x.pdf"),
        ("..\\..\\windows\\evil.docx", "evil.docx"),
        ("C:\\Users\\me\\Q3 report.pdf", "Q3 report.pdf"),
        ("/etc/passwd.txt", "passwd.txt"),
        ("..", "upload"),
        ("", "upload"),
        ("...pdf", "pdf"),
        (".hidden.md", "hidden.md"),
        ("a\x00b\x1fc.txt", "abc.txt"),
        ("gnp.\u202etxt", "gnp.txt"),  # a right-to-left override cannot disguise the type
        ('con<>:"|?*.csv', "con_______.csv"),
        ("%2e%2e%2fpasswd.txt", "_2e_2e_2fpasswd.txt"),
        ("  spaced   out  .md", "spaced out.md"),
        ("ｒｅｐｏｒｔ．ｐｄｆ", "report.pdf"),  # fullwidth forms fold, so the type is seen
    ],
)
def test_sanitize_filename(raw: str, expected: str) -> None:
    assert sanitize_filename(raw) == expected


def test_sanitize_bounds_length_and_keeps_extension() -> None:
    name = sanitize_filename("x" * 500 + ".docx")
    assert len(name) <= 120 and name.endswith(".docx")


@given(st.text(max_size=300))
def test_any_client_name_gives_a_canonical_source_id(raw: str) -> None:
    name = sanitize_filename(raw)
    assert name and "/" not in name and "\\" not in name and not name.startswith(".")
    source_id = upload_source_id("default", SHA, name)
    assert normalize_source(source_id, []) == source_id
    assert source_id.startswith(f"/uploads/default/{SHA[:12]}/")


@pytest.mark.parametrize("name", ["x.exe", "x", "x.pdf.exe", "x.doc", "x.zip"])
def test_only_allowlisted_extensions(name: str) -> None:
    with pytest.raises(UnsupportedMediaType):
        upload_type(name)


def test_extension_case_and_aliases() -> None:
    assert upload_type("A.PDF") == "pdf"
    assert upload_type("a.htm") == "html" and upload_type("a.markdown") == "md"


# -- sniffing -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("samples")
    files = {
        "pdf": write_pdf(folder / "a.pdf", ["Hello from a PDF page."]),
        "docx": write_docx(folder / "a.docx", ["Hello from a document."]),
        "pptx": write_pptx(folder / "a.pptx", ["Hello. From a slide."]),
        "xlsx": write_xlsx(folder / "a.xlsx", ["a", "b"], [["1", "2"]]),
        "csv": write_csv(folder / "a.csv", ["a", "b"], [["1", "2"]]),
    }
    data = {kind: path.read_bytes() for kind, path in files.items()}
    data["txt"] = "Plain text, naïve café.\n".encode()
    data["md"] = b"# Title\n\nSome *markdown*.\n"
    data["html"] = b"<!doctype html><html><body><p>Hi</p></body></html>"
    return data


def _sniff(tmp_path: Path, content: bytes, doc_type: str) -> None:
    path = tmp_path / f"upload.{doc_type}"
    path.write_bytes(content)
    sniff(path, doc_type, LIMITS)


BINARY = ("pdf", "docx", "pptx", "xlsx")
TEXT = ("txt", "md", "csv", "html")


@pytest.mark.parametrize("content_type", BINARY + TEXT)
@pytest.mark.parametrize("claimed", BINARY + TEXT)
def test_sniffing_matrix(
    tmp_path: Path, samples: dict[str, bytes], content_type: str, claimed: str
) -> None:
    """Every sample passes under its own extension; binary types only under their own,
    and text passes as any text type (HTML needs a tag)."""
    content = samples[content_type]
    accepted = (
        content_type == claimed
        or (content_type in TEXT and claimed in ("txt", "md", "csv"))
        or (content_type == "html" and claimed == "html")
    )
    if accepted:
        _sniff(tmp_path, content, claimed)
    else:
        with pytest.raises(UnsupportedMediaType):
            _sniff(tmp_path, content, claimed)


@pytest.mark.parametrize(
    ("content", "claimed"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "pdf"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "txt"),
        (b"\x7fELF\x02\x01\x01" + bytes(64), "csv"),
        ("UTF-16 text".encode("utf-16"), "txt"),  # text, but with NUL bytes
        (b"ok so far" + b"\x00" * 3, "md"),
        (bytes(range(1, 32)) * 50, "txt"),  # control characters, no NUL
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512), "docx"),  # OLE: old or encrypted
        (b"PK\x03\x04 truncated zip", "xlsx"),
        (b"just words, no markup", "html"),
    ],
)
def test_wrong_content_under_a_right_extension(
    tmp_path: Path, content: bytes, claimed: str
) -> None:
    with pytest.raises(UnsupportedMediaType):
        _sniff(tmp_path, content, claimed)


def test_latin1_text_is_text(tmp_path: Path) -> None:
    _sniff(tmp_path, "Élève à l'école, déjà vu.\n".encode("latin-1") * 20, "txt")


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_without_the_main_part_is_not_office(tmp_path: Path) -> None:
    plain = _zip({"[Content_Types].xml": b"<x/>", "readme.txt": b"hi"})
    with pytest.raises(UnsupportedMediaType, match=r"word/document\.xml"):
        _sniff(tmp_path, plain, "docx")
    pptx_parts = _zip({"[Content_Types].xml": b"<x/>", "ppt/presentation.xml": b"<p/>"})
    with pytest.raises(UnsupportedMediaType):
        _sniff(tmp_path, pptx_parts, "docx")
    _sniff(tmp_path, pptx_parts, "pptx")


def test_a_zip_bomb_named_docx_is_refused(tmp_path: Path) -> None:
    bomb = _zip({"[Content_Types].xml": b"<x/>", "word/document.xml": bytes(50 * 1024**2)})
    assert len(bomb) < 200_000
    with pytest.raises(InvalidInput) as caught:
        _sniff(tmp_path, bomb, "docx")
    assert caught.value.code == "zip_bomb" and caught.value.status == 400
