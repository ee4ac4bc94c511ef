"""Page images for OCR: PDF pages and image frames, bounded, grayscale; bad files refused
with a clear reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfWriter
from tests.ocr_samples import page_image, scanned_pdf

from autorag.ocr.render import OcrInputError, is_blank, open_pages


def _pdf(path: Path, sizes: list[tuple[float, float]], password: str | None = None) -> Path:
    writer = PdfWriter()
    for width, height in sizes:
        writer.add_blank_page(width, height)
    if password is not None:
        writer.encrypt(password, algorithm="AES-128")
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def test_a_pdf_page_renders_at_300_dpi_in_gray(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "scan.pdf", [page_image(["Hello"])])
    with open_pages(path, dpi=300, max_pixels=40_000_000) as source:
        assert source.pages == 1
        rendered = source.render(1)
    assert rendered.dpi == 300
    assert rendered.image.mode == "L"
    assert abs(rendered.image.width - 2480) <= 2 and abs(rendered.image.height - 3508) <= 2


def test_a_huge_page_renders_at_a_lower_dpi_within_the_pixel_cap(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "poster.pdf", [(14_400, 14_400)])  # 200 x 200 inches
    with open_pages(path, dpi=300, max_pixels=4_000_000) as source:
        rendered = source.render(1)
    assert rendered.dpi == 10
    assert rendered.image.width * rendered.image.height <= 4_000_000


def test_an_encrypted_pdf_is_refused_as_such(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "locked.pdf", [(595, 842)], password="secret")
    with pytest.raises(OcrInputError) as caught, open_pages(path, dpi=300, max_pixels=10**7):
        pass
    assert caught.value.reason == "encrypted"
    assert "password" in caught.value.message


def test_a_damaged_pdf_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    with pytest.raises(OcrInputError) as caught, open_pages(path, dpi=300, max_pixels=10**7):
        pass
    assert caught.value.reason == "corrupt"


def test_a_pdf_without_pages_is_refused(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "empty.pdf", [])
    with pytest.raises(OcrInputError) as caught, open_pages(path, dpi=300, max_pixels=10**7):
        pass
    assert caught.value.reason == "empty"


def test_an_image_over_the_pixel_cap_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    Image.new("1", (8000, 8000), 1).save(path)  # 64 MP, a few kB on disk
    with (
        open_pages(path, dpi=300, max_pixels=40_000_000) as source,
        pytest.raises(OcrInputError) as caught,
    ):
        source.render(1)
    assert caught.value.reason == "too_large"
    assert "8000×8000 px (64 MP), over the 40 MP limit" in caught.value.message


def test_a_decompression_bomb_is_refused_on_opening(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    Image.new("1", (15_000, 15_000), 1).save(path)  # 225 MP: Pillow's own guard trips
    with pytest.raises(OcrInputError) as caught, open_pages(path, dpi=300, max_pixels=10**9):
        pass
    assert caught.value.reason == "too_large"


def test_a_file_that_is_no_image_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fake.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(300))
    with pytest.raises(OcrInputError) as caught, open_pages(path, dpi=300, max_pixels=10**7):
        pass
    assert caught.value.reason == "corrupt"


def test_tiff_frames_are_pages(tmp_path: Path) -> None:
    path = tmp_path / "fax.tiff"
    frames = [page_image([f"Page {n}"]).convert("1") for n in (1, 2, 3)]
    frames[0].save(path, save_all=True, append_images=frames[1:], compression="group4")
    with open_pages(path, dpi=300, max_pixels=40_000_000) as source:
        assert source.pages == 3
        third = source.render(3)
    assert third.image.mode == "L"
    assert not is_blank(third.image)


def test_transparency_becomes_white_paper(tmp_path: Path) -> None:
    path = tmp_path / "logo.png"
    image = Image.new("RGBA", (400, 200), (0, 0, 0, 0))  # transparent black
    image.paste((0, 0, 0, 255), (50, 50, 350, 150))  # an opaque black bar
    image.save(path)
    with open_pages(path, dpi=300, max_pixels=10**7) as source:
        gray = source.render(1).image
    assert gray.getpixel((5, 5)) == 255
    assert gray.getpixel((200, 100)) == 0


def test_sixteen_bit_scans_are_scaled_not_clipped(tmp_path: Path) -> None:
    path = tmp_path / "deep.png"
    image = Image.new("I;16", (300, 100), 60_000)
    image.paste(1_000, (100, 30, 200, 70))
    image.save(path)
    with open_pages(path, dpi=300, max_pixels=10**7) as source:
        gray = source.render(1).image
    assert gray.getpixel((5, 5)) == 255
    assert gray.getpixel((150, 50)) == 0


def test_blank_pages_are_told_apart_from_short_ones() -> None:
    blank = Image.new("L", (2480, 3508), 255)
    assert is_blank(blank)
    specks = blank.copy()
    for x in range(0, 2400, 400):
        specks.putpixel((x, 100), 0)
    assert is_blank(specks)
    assert not is_blank(page_image(["Page 3"]))
