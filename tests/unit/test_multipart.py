"""The streaming multipart receiver: the ``file`` part written to disk as it arrives."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from autorag.api.multipart import MultipartReceiver
from autorag.errors import InvalidInput, MalformedUpload, PayloadTooLarge, UnsupportedMediaType

BOUNDARY = "----autorag-test-boundary"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def _body(*parts: tuple[str, str | None, bytes], close: bool = True) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        out += (
            (
                f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + data
            + b"\r\n"
        )
    return out + (f"--{BOUNDARY}--\r\n".encode() if close else b"")


def _feed(receiver: MultipartReceiver, body: bytes, piece: int) -> None:
    for start in range(0, len(body), piece):
        receiver.feed(body[start : start + piece])


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_receiver_writes_the_file_part_whatever_the_pieces(tmp_path: Path, piece: int) -> None:
    data = bytes(range(256)) * 40 + f"\r\n--{BOUNDARY[:-3]}".encode()  # a near-boundary
    body = _body(("note", None, b"ignored"), ("file", "../../r.txt", data))
    receiver = MultipartReceiver(CONTENT_TYPE, tmp_path, max_bytes=1 << 20)
    _feed(receiver, body, piece)
    received = receiver.finish()
    assert received.path.read_bytes() == data
    assert received.size == len(data)
    assert received.sha256 == hashlib.sha256(data).hexdigest()
    assert received.filename == "../../r.txt"
    assert received.path.parent == tmp_path and received.path.suffix == ".txt"


def test_receiver_streams_to_disk_as_it_goes(tmp_path: Path) -> None:
    data = b"x" * (4 << 20)
    body = _body(("file", "big.txt", data))
    receiver = MultipartReceiver(CONTENT_TYPE, tmp_path, max_bytes=8 << 20)
    _feed(receiver, body[: 2 << 20], 64 * 1024)
    (partial,) = tmp_path.iterdir()
    assert partial.stat().st_size > (1 << 20)  # on disk before the body has ended
    _feed(receiver, body[2 << 20 :], 64 * 1024)
    assert receiver.finish().size == len(data)


def test_receiver_stops_past_the_limit_and_discards(tmp_path: Path) -> None:
    body = _body(("file", "big.txt", b"y" * 5000))
    receiver = MultipartReceiver(CONTENT_TYPE, tmp_path, max_bytes=4096)
    with pytest.raises(PayloadTooLarge) as caught:
        _feed(receiver, body, 1000)
    assert caught.value.status == 413
    receiver.discard()
    assert list(tmp_path.iterdir()) == []


def test_filename_star_is_decoded(tmp_path: Path) -> None:
    body = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        "filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve%20r%C3%A9sum%C3%A9.txt\r\n\r\n"
        f"hello\r\n--{BOUNDARY}--\r\n"
    ).encode()
    receiver = MultipartReceiver(CONTENT_TYPE, tmp_path, max_bytes=1024)
    receiver.feed(body)
    assert receiver.finish().filename == "naïve résumé.txt"


@pytest.mark.parametrize(
    ("content_type", "error"),
    [
        ("application/json", UnsupportedMediaType),
        (None, UnsupportedMediaType),
        ("multipart/form-data", MalformedUpload),
    ],
)
def test_receiver_needs_multipart_with_a_boundary(
    tmp_path: Path, content_type: str | None, error: type[Exception]
) -> None:
    with pytest.raises(error):
        MultipartReceiver(content_type, tmp_path, max_bytes=1024)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (_body(("file", "a.txt", b"hello"), close=False), "malformed_multipart"),
        (b"this is not multipart at all", "malformed_multipart"),
        (_body(("note", None, b"no file here")), "missing_file"),
        (_body(("file", "a.txt", b"1"), ("file", "b.txt", b"2")), "too_many_files"),
        (_body(("document", "a.txt", b"1")), "unexpected_field"),
        (_body(("file", "a.exe", b"MZ")), "unsupported_media_type"),
        (
            f"--{BOUNDARY}\r\nX-Nothing: here\r\n\r\nx\r\n--{BOUNDARY}--\r\n".encode(),
            "malformed_multipart",
        ),
    ],
)
def test_receiver_rejects_bad_bodies(tmp_path: Path, body: bytes, code: str) -> None:
    receiver = MultipartReceiver(CONTENT_TYPE, tmp_path, max_bytes=1024)
    with pytest.raises(InvalidInput) as caught:
        receiver.feed(body)
        receiver.finish()
    receiver.discard()
    assert caught.value.code == code
    assert list(tmp_path.iterdir()) == []
