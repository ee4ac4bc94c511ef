"""Backups' encryption: AES-256-GCM in authenticated segments, read and written with flat
memory, refusing a truncated, reordered, altered or foreign archive with its own error."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import pytest

from autorag.backup.crypto import (
    HEADER_BYTES,
    SEALED_SEGMENT,
    SEGMENT_SIZE,
    BackupDamaged,
    BackupKeyError,
    DecryptingReader,
    EncryptingWriter,
)
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    PREVIOUS_KEYS_ENV,
    key_fingerprint,
    workspace_keyring,
)

KEY_A = bytes(range(32))
KEY_B = bytes(range(1, 33))


def seal(plaintext: bytes, key: bytes = KEY_A) -> bytes:
    sink = io.BytesIO()
    with EncryptingWriter(sink, key) as writer:
        writer.write(plaintext)
    return sink.getvalue()


def open_all(archive: bytes, keys: tuple[bytes, ...] = (KEY_A,)) -> bytes:
    reader = DecryptingReader(io.BytesIO(archive), keys)
    assert reader.verify_all() == reader.size
    return reader.read()


class Pipe(io.RawIOBase):
    """An unseekable source (a download, a pipe) that returns short reads."""

    def __init__(self, data: bytes, chunk: int = 100_003) -> None:
        self._data = io.BytesIO(data)
        self._chunk = chunk
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.largest_read = max(self.largest_read, len(buffer))
        chunk = self._data.read(min(len(buffer), self._chunk))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    @property
    def consumed(self) -> int:
        return self._data.tell()


SIZES = {
    "empty": 0,
    "one byte": 1,
    "exactly one segment": SEGMENT_SIZE,
    "one segment and a byte": SEGMENT_SIZE + 1,
    "several segments": 3 * SEGMENT_SIZE + 12_345,
}


@pytest.mark.parametrize("size", SIZES.values(), ids=SIZES.keys())
def test_round_trip_of_every_size_seekable_and_not(size: int) -> None:
    plaintext = os.urandom(size)
    archive = seal(plaintext)
    segments = max(1, -(-size // SEGMENT_SIZE))
    assert len(archive) == HEADER_BYTES + size + 16 * segments
    assert size < 16 or plaintext[:16] not in archive
    assert open_all(archive) == plaintext
    reader = DecryptingReader(io.BytesIO(archive), (KEY_A,))
    assert reader.seek(0, io.SEEK_END) == size
    piped = DecryptingReader(Pipe(archive), (KEY_A,))  # type: ignore[arg-type]
    assert b"".join(iter(lambda: piped.read(77_777), b"")) == plaintext
    assert DecryptingReader(Pipe(archive), (KEY_A,)).verify_all() == size  # type: ignore[arg-type]


def test_a_zip_is_written_into_the_writer_and_read_back_through_the_reader() -> None:
    members = {f"dir/file-{n}.bin": os.urandom(n * 300_001) for n in range(5)}
    members["text.txt"] = b"hello " * 200_000
    sink = io.BytesIO()
    with EncryptingWriter(sink, KEY_A) as writer:
        assert not writer.seekable()
        with zipfile.ZipFile(writer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
            for name, data in members.items():
                with zf.open(name, "w") as member:
                    member.write(data)
        assert writer.tell() > 0
    reader = DecryptingReader(io.BytesIO(sink.getvalue()), (KEY_B, KEY_A))
    assert reader.seekable()
    with zipfile.ZipFile(reader) as zf:
        assert zf.testzip() is None
        assert {info.filename: zf.read(info) for info in zf.infolist()} == members


def test_the_writer_holds_at_most_one_segment_of_odd_sized_writes() -> None:
    class Sink(io.BytesIO):
        largest_write = 0

        def write(self, data: bytes) -> int:  # type: ignore[override]
            self.largest_write = max(self.largest_write, len(data))
            return super().write(data)

    sink, written, sizes = Sink(), 0, [1, 65_537, 999_999, 3 * SEGMENT_SIZE + 7, 12_345]
    digest = hashlib.sha256()
    with EncryptingWriter(sink, KEY_A) as writer:
        for count in range(1000):
            if written >= 10 * SEGMENT_SIZE:
                break
            piece = os.urandom(sizes[count % len(sizes)])
            digest.update(piece)
            writer.write(piece)
            written += len(piece)
            sealed = (len(sink.getvalue()) - HEADER_BYTES) // SEALED_SEGMENT
            assert written - sealed * SEGMENT_SIZE <= SEGMENT_SIZE  # the rest went out
            assert writer.tell() == written
    assert sink.largest_write <= SEALED_SEGMENT  # never a whole file's worth at once
    reader = DecryptingReader(io.BytesIO(sink.getvalue()), (KEY_A,))
    assert hashlib.sha256(reader.read()).hexdigest() == digest.hexdigest()


def test_the_reader_holds_at_most_a_couple_of_segments() -> None:
    plaintext = os.urandom(10 * SEGMENT_SIZE + 3)
    pipe = Pipe(seal(plaintext))
    reader = DecryptingReader(pipe, (KEY_A,))  # type: ignore[arg-type]
    out = hashlib.sha256()
    while piece := reader.read(333_333):
        out.update(piece)
        assert pipe.consumed - reader.tell() <= 2 * SEALED_SEGMENT
    assert pipe.largest_read <= SEALED_SEGMENT
    assert out.digest() == hashlib.sha256(plaintext).digest()


# -- refusals -------------------------------------------------------------------------

PLAIN = os.urandom(3 * SEGMENT_SIZE + 500)
ARCHIVE = seal(PLAIN)
_SEGMENT_AT = [HEADER_BYTES + n * SEALED_SEGMENT for n in range(4)]


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def swap_segments(data: bytes, first: int, second: int) -> bytes:
    parts = [data[_SEGMENT_AT[n] : _SEGMENT_AT[n] + SEALED_SEGMENT] for n in range(3)]
    parts[first], parts[second] = parts[second], parts[first]
    return data[:HEADER_BYTES] + b"".join(parts) + data[_SEGMENT_AT[3] :]


DAMAGE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "cut at a segment boundary": (lambda a: a[: _SEGMENT_AT[2]], "segment 2 of 2"),
    "cut mid-segment": (lambda a: a[: _SEGMENT_AT[2] + 1000], "segment 3 of 3"),
    "cut inside a tag": (lambda a: a[: _SEGMENT_AT[2] + 5], "shorter than a 16-byte tag"),
    "cut after the header": (lambda a: a[:HEADER_BYTES], "holds no segment"),
    "two segments swapped": (lambda a: swap_segments(a, 1, 2), "segment 2 of 4"),
    "first segments swapped": (lambda a: swap_segments(a, 0, 1), "header or first segment"),
    "salt flipped": (lambda a: flip(a, 7), "header or first segment"),
    "nonce prefix flipped": (lambda a: flip(a, 25), "header or first segment"),
    "key id flipped": (lambda a: flip(a, 30), "its header was altered"),
    "magic flipped": (lambda a: flip(a, 0), "not an AutoRAG backup"),
    "version changed": (lambda a: flip(a, 4), "format 0"),
    "body byte flipped": (lambda a: flip(a, _SEGMENT_AT[1] + 4242), "segment 2 of 4"),
    "tag byte flipped": (lambda a: flip(a, _SEGMENT_AT[3] - 3), "segment 3 of 4"),
    "last tag flipped": (lambda a: flip(a, len(a) - 1), "segment 4 of 4 (the last)"),
    "not a backup at all": (lambda a: b"PK\x03\x04" + a[4:100], "not an AutoRAG backup"),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_archive_is_refused_saying_where(
    damage: tuple[Callable[[bytes], bytes], str],
) -> None:
    change, words = damage
    with pytest.raises(BackupDamaged, match=re.escape(words)):
        open_all(change(ARCHIVE))


@pytest.mark.parametrize(
    "damage", [DAMAGE["cut at a segment boundary"], DAMAGE["two segments swapped"]]
)
def test_an_unseekable_damaged_archive_fails_when_the_damage_is_read(
    damage: tuple[Callable[[bytes], bytes], str],
) -> None:
    reader = DecryptingReader(Pipe(damage[0](ARCHIVE)), (KEY_A,))  # type: ignore[arg-type]
    assert reader.read(SEGMENT_SIZE) == PLAIN[:SEGMENT_SIZE]
    with pytest.raises(BackupDamaged, match=r"segment 2 .*does not authenticate"):
        reader.read()


def test_an_archive_spliced_from_two_archives_of_the_same_key_is_refused() -> None:
    other = seal(PLAIN)
    spliced = ARCHIVE[: _SEGMENT_AT[1]] + other[_SEGMENT_AT[1] :]
    with pytest.raises(BackupDamaged, match=r"segment [24] of 4 .*does not authenticate"):
        open_all(spliced)


def test_an_archive_of_another_key_names_the_key_it_needs() -> None:
    with pytest.raises(BackupKeyError) as caught:
        open_all(ARCHIVE, (KEY_B,))
    message = caught.value.message
    assert key_fingerprint(KEY_A) in message and key_fingerprint(KEY_B) in message
    assert "AUTORAG_ENCRYPTION_KEY" in message
    assert KEY_A.hex() not in message and KEY_B.hex() not in message
    with pytest.raises(BackupKeyError, match="no key"):
        DecryptingReader(io.BytesIO(ARCHIVE), ())


def test_a_rotated_key_still_opens_its_archives(tmp_path: Path) -> None:
    rotated = {
        ENCRYPTION_KEY_ENV: base64.b64encode(KEY_B).decode(),
        PREVIOUS_KEYS_ENV: base64.b64encode(KEY_A).decode(),
    }
    keyring = workspace_keyring(tmp_path, environ=rotated)
    assert keyring.current == KEY_B
    assert open_all(ARCHIVE, keyring.candidates()) == PLAIN


def test_an_archive_made_with_the_key_file_opens_once_the_environment_key_is_set(
    tmp_path: Path,
) -> None:
    archive = seal(b"made before the key was configured", workspace_keyring(tmp_path, {}).current)
    configured = workspace_keyring(tmp_path, {ENCRYPTION_KEY_ENV: base64.b64encode(KEY_B).decode()})
    assert configured.current == KEY_B
    assert open_all(archive, configured.candidates()) == b"made before the key was configured"
    with pytest.raises(BackupKeyError):
        open_all(archive, (KEY_B,))


def test_an_aborted_write_is_refused_as_truncated() -> None:
    sink = io.BytesIO()
    with pytest.raises(RuntimeError), EncryptingWriter(sink, KEY_A) as writer:
        writer.write(PLAIN)
        raise RuntimeError("the dump failed")
    with pytest.raises(BackupDamaged, match="does not authenticate"):
        open_all(sink.getvalue())
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"more")


def test_the_reader_seeks_like_a_file() -> None:
    reader = DecryptingReader(io.BytesIO(ARCHIVE), (KEY_A,))
    assert reader.seek(-10, io.SEEK_END) == len(PLAIN) - 10
    assert reader.read() == PLAIN[-10:]
    reader.seek(SEGMENT_SIZE - 5)
    assert reader.read(10) == PLAIN[SEGMENT_SIZE - 5 : SEGMENT_SIZE + 5]
    assert reader.seek(3, io.SEEK_CUR) == SEGMENT_SIZE + 8
    reader.seek(len(PLAIN) + 100)
    assert reader.read(10) == b""
    with pytest.raises(OSError, match="negative seek"):
        reader.seek(-1)
    with pytest.raises(zipfile.BadZipFile):  # as from a file too short to be a zip
        zipfile.ZipFile(DecryptingReader(io.BytesIO(seal(b"short")), (KEY_A,)))
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        reader.read(1)
    source: BinaryIO = Pipe(ARCHIVE)  # type: ignore[assignment]
    with pytest.raises(io.UnsupportedOperation):
        DecryptingReader(source, (KEY_A,)).seek(0)
