"""The pre-parse guards: readability, size, and zip containers of Office files."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import docx
import pytest

from autorag.ingest.parsers import ParseError, parse_file
from autorag.ingest.parsers.guards import IngestLimits, check_file, human_size

LIMITS = IngestLimits()
MIB = 1024**2


def reason_of(path: Path, limits: IngestLimits = LIMITS) -> str:
    with pytest.raises(ParseError) as caught:
        check_file(path, limits)
    return caught.value.reason


def write_zip(path: Path, members: dict[str, int], *, level: int = 6) -> Path:
    """A zip whose members are that many zero bytes, streamed so nothing big sits in memory."""
    chunk = bytes(MIB)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
        for name, size in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                for start in range(0, size, MIB):
                    member.write(chunk[: min(MIB, size - start)])
    return path


def test_ordinary_files_pass(tmp_path: Path) -> None:
    text = tmp_path / "note.txt"
    text.write_text("hello")
    document = tmp_path / "real.docx"
    docx.Document().save(str(document))
    check_file(text, LIMITS)
    check_file(document, LIMITS)


def test_missing_file_is_unreadable(tmp_path: Path) -> None:
    assert reason_of(tmp_path / "gone.pdf") == "unreadable"


def test_directory_is_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / "folder.pdf"
    folder.mkdir()
    with pytest.raises(ParseError) as caught:
        check_file(folder, LIMITS)
    assert caught.value.reason == "unreadable"
    assert "not a regular file" in caught.value.message


def test_file_without_read_permission_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "secret.txt"
    path.write_text("classified")
    path.chmod(0)
    try:
        if os.geteuid() == 0:
            check_file(path, LIMITS)  # root reads it regardless of the mode bits
        else:
            assert reason_of(path) == "unreadable"
    finally:
        path.chmod(0o600)


def test_oversize_file_is_too_large_with_both_sizes(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 3000)
    with pytest.raises(ParseError) as caught:
        check_file(path, IngestLimits(max_file_bytes=2048))
    assert caught.value.reason == "too_large"
    assert caught.value.message == "big.txt is 2.9 KiB, over the 2.0 KiB limit"


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (100 * MIB, "100.0 MiB"),
        (5 * 1024**4, "5.0 TiB"),
    ],
)
def test_human_size(size: int, text: str) -> None:
    assert human_size(size) == text


def test_zip_bomb_over_the_unpacked_limit(tmp_path: Path) -> None:
    # 600 MB of zeros deflates to well under 1 MB on disk.
    bomb = write_zip(tmp_path / "bomb.docx", {"word/document.xml": 600 * 1000**2})
    assert bomb.stat().st_size < 2 * MIB
    with pytest.raises(ParseError) as caught:
        check_file(bomb, LIMITS)
    assert caught.value.reason == "zip_bomb"
    assert "would unpack to 572.2 MiB, over the 500.0 MiB limit" in caught.value.message


def test_zip_bomb_by_compression_ratio(tmp_path: Path) -> None:
    bomb = write_zip(tmp_path / "ratio.xlsx", {"xl/worksheets/sheet1.xml": 50 * MIB})
    with pytest.raises(ParseError) as caught:
        check_file(bomb, LIMITS)
    assert caught.value.reason == "zip_bomb"
    assert "over the 200:1 limit" in caught.value.message


def test_high_ratio_of_a_small_container_is_harmless(tmp_path: Path) -> None:
    small = write_zip(tmp_path / "small.pptx", {"ppt/slides/slide1.xml": 2 * MIB})
    check_file(small, LIMITS)


def test_zip_bomb_by_entry_count(tmp_path: Path) -> None:
    many = write_zip(tmp_path / "many.pptx", {f"ppt/part{n}.xml": 1 for n in range(30)})
    assert reason_of(many, IngestLimits(max_zip_entries=20)) == "zip_bomb"


def test_text_file_renamed_docx_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "notes.docx"
    path.write_text("just some notes, not a Word document")
    with pytest.raises(ParseError) as caught:
        parse_file(path, limits=LIMITS)
    assert caught.value.reason == "corrupt"
    assert caught.value.message == "notes.docx is not a valid .docx (zip) container"


def test_ole_file_with_office_extension_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "protected.xlsx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(ParseError) as caught:
        check_file(path, LIMITS)
    assert caught.value.reason == "corrupt"
    assert "password-protected" in caught.value.message


def test_parse_file_applies_the_guards(tmp_path: Path) -> None:
    path = tmp_path / "long.md"
    path.write_text("# Title\n" + "text " * 100)
    with pytest.raises(ParseError) as caught:
        parse_file(path, limits=IngestLimits(max_file_bytes=100))
    assert caught.value.reason == "too_large"
