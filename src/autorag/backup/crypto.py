"""Backups encrypted with AES-256-GCM in authenticated segments (the STREAM construction
of Hoang, Reyhanitabar, Rogaway and Vizár), so an archive of any size is written and read
with flat memory, and a truncated, reordered, spliced or altered one fails to decrypt.

Layout::

    header   "ARBK" | version (1 byte) | salt (16) | nonce prefix (7)     28 bytes, the AAD
    key id   the master key's fingerprint: not secret, not in the AAD,   8 bytes
             checked against the key that opens the archive
    segment  AES-GCM(data key, prefix | counter (4, big-endian) | last (1), plaintext, AAD)

The data key is HKDF-SHA256(master key, salt, "autorag backup v1"): a fresh one per
archive. Every segment holds ``SEGMENT_SIZE`` bytes of plaintext except the last, which
holds the rest (0 to ``SEGMENT_SIZE``) and alone is sealed with the last flag set: a
segment moved elsewhere fails its counter, an archive cut after any segment lacks its
last one, and one spliced from another archive fails its data key and header.

The key id lets a refusal say which key an archive needs ("made with key 1a2b…") and tell
a wrong key (no key tried has that id: ``BackupKeyError``) from damage (the key with that
id does not open it: ``BackupDamaged``).
"""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.keyring import (
    ENCRYPTION_KEY_ENV,
    FINGERPRINT_BYTES,
    KEY_BYTES,
    PREVIOUS_KEYS_ENV,
    key_fingerprint,
)

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MAGIC = b"ARBK"
VERSION = 1
SEGMENT_SIZE = 1 << 20  # plaintext bytes per segment
TAG_BYTES = 16
SEALED_SEGMENT = SEGMENT_SIZE + TAG_BYTES
_SALT_BYTES = 16
_PREFIX_BYTES = 7
AAD_BYTES = len(MAGIC) + 1 + _SALT_BYTES + _PREFIX_BYTES  # 28
HEADER_BYTES = AAD_BYTES + FINGERPRINT_BYTES  # 36
_MAX_SEGMENTS = 1 << 32  # the counter's 4 bytes: 4 PiB of plaintext
_HKDF_INFO = b"autorag backup v1"


class BackupKeyError(Unavailable):
    """No key tried opens the archive."""

    code = "backup_key"


class BackupDamaged(InvalidInput):
    """Not a backup, or a truncated or altered one."""

    code = "backup_damaged"


def _data_key(master_key: bytes, salt: bytes) -> AESGCM:
    if len(master_key) != KEY_BYTES:
        raise ValueError(f"a backup key has {KEY_BYTES} bytes, not {len(master_key)}")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=salt, info=_HKDF_INFO)
    return AESGCM(hkdf.derive(master_key))


def _nonce(prefix: bytes, index: int, last: bool) -> bytes:
    if index >= _MAX_SEGMENTS:
        raise ValueError("a backup holds at most 2**32 segments")
    return prefix + index.to_bytes(4, "big") + (b"\x01" if last else b"\x00")


class EncryptingWriter:
    """A writable, unseekable binary stream sealing what is written into ``sink``.

    ``tell()`` is the plaintext written so far (zipfile asks it, and writes data
    descriptors since it cannot seek). ``close()`` seals the last segment: until then
    the archive is incomplete and refused as truncated. Leaving a ``with`` block on an
    exception does not seal it, so a failed backup is never mistaken for a whole one.
    The sink is flushed, not closed: its owner closes it. At most one segment of
    plaintext is held.
    """

    def __init__(self, sink: BinaryIO, key: bytes) -> None:
        self._sink = sink
        salt, self._prefix = os.urandom(_SALT_BYTES), os.urandom(_PREFIX_BYTES)
        self._aad = MAGIC + bytes([VERSION]) + salt + self._prefix
        self._aead = _data_key(key, salt)
        self._pending = bytearray(SEGMENT_SIZE)  # the segment being filled, ``_filled`` bytes
        self._filled = 0
        self._index = 0
        self._written = 0
        self._closed = False
        sink.write(self._aad + bytes.fromhex(key_fingerprint(key)))

    @property
    def closed(self) -> bool:
        return self._closed

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._written

    def write(self, data: bytes) -> int:
        if self._closed:
            raise ValueError("write to a closed backup stream")
        view = memoryview(data).cast("B")
        size = view.nbytes
        while view:
            if self._filled == SEGMENT_SIZE:  # full, and more follows: not the last
                self._seal_pending(last=False)
            take = min(SEGMENT_SIZE - self._filled, len(view))
            self._pending[self._filled : self._filled + take] = view[:take]
            self._filled += take
            view = view[take:]
        self._written += size
        return size

    def flush(self) -> None:
        """Flush the sink (a partial segment cannot be sealed before it is complete)."""
        self._sink.flush()

    def close(self) -> None:
        """Seal the last segment; the archive is complete."""
        if self._closed:
            return
        self._seal_pending(last=True)
        self._closed = True
        self._sink.flush()

    def abort(self) -> None:
        """Stop without sealing the last segment: what was written stays incomplete."""
        self._closed = True
        self._filled = 0

    def __enter__(self) -> EncryptingWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def _seal_pending(self, *, last: bool) -> None:
        nonce = _nonce(self._prefix, self._index, last)
        plaintext = memoryview(self._pending)[: self._filled]  # no copy
        self._sink.write(self._aead.encrypt(nonce, plaintext, self._aad))
        self._filled = 0
        self._index += 1


class DecryptingReader(io.RawIOBase):
    """The plaintext of an archive read from ``source``, authenticated segment by
    segment as it is read; seekable when ``source`` is (zipfile reads the central
    directory at the end first). Opened with the first of ``keys`` that authenticates
    the first segment; BackupKeyError when none does, BackupDamaged when the archive is
    not one, or is truncated or altered (at opening, or when the damaged segment is
    read). Holds one decrypted segment. ``source`` is read from its position at
    opening; it is not closed with the reader.
    """

    def __init__(self, source: BinaryIO, keys: Sequence[bytes]) -> None:
        super().__init__()
        self._source = source
        self._seekable = _is_seekable(source)
        self._base = source.tell() if self._seekable else 0
        self._aad, key_id = _read_header(source)
        self._prefix = self._aad[-_PREFIX_BYTES:]
        self._pos = 0
        self._peeked = b""  # unseekable: the byte read past a segment, to know if it was last
        self._body = self._body_size() if self._seekable else None  # sealed segments' bytes
        self._segments = _count_segments(self._body) if self._body is not None else None
        self._current: tuple[int, bytes, bool] | None = None  # index, plaintext, last
        self._aead = self._choose_key(keys, key_id)
        if self._segments is not None and self._segments > 1:
            self._load(self._segments - 1)  # a cut at a segment boundary refused now

    # -- io.RawIOBase ---------------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._seekable

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not self._seekable:
            raise io.UnsupportedOperation("the backup's source cannot seek")
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:  # OSError as a file's, which zipfile expects
            raise OSError(errno.EINVAL, "negative seek position in a backup")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        chunk = self._take(len(view))
        view[: len(chunk)] = chunk
        return len(chunk)

    def read(self, size: int | None = -1) -> bytes:
        """``size`` bytes, fewer only at the end: zipfile reads a header or the central
        directory with one call and takes a short read for a truncated file."""
        if size is None or size < 0:
            return self.readall()
        parts: list[bytes] = []
        while size > 0 and (chunk := self._take(size)):
            parts.append(chunk)
            size -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _take(self, most: int) -> bytes:
        """Up to ``most`` bytes from the current segment (b"" at the end)."""
        if self.closed:
            raise ValueError("read from a closed backup reader")
        index, offset = divmod(self._pos, SEGMENT_SIZE)
        segment = self._segment(index)
        if segment is None or offset >= len(segment):
            return b""
        chunk = segment if offset == 0 and most >= len(segment) else segment[offset : offset + most]
        self._pos += len(chunk)
        return chunk

    # -- beyond -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The plaintext's size (a seekable source's: known from its length)."""
        if self._body is None or self._segments is None:
            raise io.UnsupportedOperation("the size of an unseekable backup is known at its end")
        return self._body - self._segments * TAG_BYTES

    def verify_all(self) -> int:
        """Authenticate every segment; the plaintext's size. An unseekable source is read
        to its end (from where reading stopped)."""
        if self._segments is None:
            while self.read(SEGMENT_SIZE):
                pass
            return self._pos
        for index in range(self._segments):
            self._load(index)
        return self.size

    # -- segments -----------------------------------------------------------------------
    def _segment(self, index: int) -> bytes | None:
        """Segment ``index``'s plaintext; None past the last segment."""
        current = self._current
        if current is not None and current[0] == index:
            return current[1]
        if self._segments is not None:
            return self._load(index) if index < self._segments else None
        if current is not None and (current[2] or index != current[0] + 1):
            if current[2]:
                return None
            raise io.UnsupportedOperation("an unseekable backup is read in order")
        return self._load(index)

    def _load(self, index: int) -> bytes:
        sealed, last = self._read_sealed(index)
        plaintext = self._open(self._aead, sealed, index, last)
        if plaintext is None:
            raise BackupDamaged(self._damage(index, last))
        self._current = (index, plaintext, last)
        return plaintext

    def _read_sealed(self, index: int) -> tuple[bytes, bool]:
        """Segment ``index``'s sealed bytes and whether it is the last."""
        if self._segments is not None:
            self._source.seek(self._base + HEADER_BYTES + index * SEALED_SEGMENT)
            return _read_exact(self._source, SEALED_SEGMENT), index == self._segments - 1
        sealed = self._peeked + _read_exact(self._source, SEALED_SEGMENT - len(self._peeked))
        self._peeked = _read_exact(self._source, 1) if len(sealed) == SEALED_SEGMENT else b""
        if len(sealed) < TAG_BYTES:
            raise BackupDamaged(
                f"the backup is truncated: segment {index + 1} is cut short "
                f"({len(sealed)} bytes, less than its {TAG_BYTES}-byte tag)"
            )
        return sealed, not self._peeked

    def _open(self, aead: AESGCM, sealed: bytes, index: int, last: bool) -> bytes | None:
        try:
            return aead.decrypt(_nonce(self._prefix, index, last), sealed, self._aad)
        except InvalidTag:
            return None

    def _damage(self, index: int, last: bool) -> str:
        total = f" of {self._segments}" if self._segments is not None else ""
        which = f"segment {index + 1}{total}" + (" (the last)" if last else "")
        return (
            f"the backup is damaged: {which} does not authenticate: the archive was "
            "truncated, reordered or altered"
        )

    def _choose_key(self, keys: Sequence[bytes], key_id: bytes) -> AESGCM:
        """The data key of the first of ``keys`` opening segment 0 (kept as read)."""
        if not keys:
            raise BackupKeyError("there is no key to open the backup with")
        salt = self._aad[len(MAGIC) + 1 : len(MAGIC) + 1 + _SALT_BYTES]
        sealed, last = self._read_sealed(0)
        for key in keys:
            aead = _data_key(key, salt)
            plaintext = self._open(aead, sealed, 0, last)
            if plaintext is not None:
                # The key id is not in the AAD: it is checked here, against the key
                # that opened the archive.
                if bytes.fromhex(key_fingerprint(key)) != key_id:
                    raise BackupDamaged("the backup is damaged: its header was altered")
                self._current = (0, plaintext, last)
                return aead
        raise self._no_key(keys, key_id)

    def _no_key(self, keys: Sequence[bytes], key_id: bytes) -> AutoragError:
        tried = [key_fingerprint(key) for key in keys]
        if key_id.hex() in tried:  # the right key: the archive is what changed
            return BackupDamaged(
                "the backup is damaged: its header or first segment does not authenticate "
                "(the archive was truncated or altered)"
            )
        count = f"{len(tried)} key{'s' if len(tried) != 1 else ''}"
        return BackupKeyError(
            f"none of the {count} tried opens this backup: it was made with key "
            f"{key_id.hex()}, the keys tried are {', '.join(tried)}. Set {ENCRYPTION_KEY_ENV} "
            f"or {PREVIOUS_KEYS_ENV} to the key it was made with (or its header was altered)"
        )

    def _body_size(self) -> int:
        position = self._source.tell()
        end = self._source.seek(0, io.SEEK_END)
        self._source.seek(position)
        return end - self._base - HEADER_BYTES


def _count_segments(body: int) -> int:
    """How many segments ``body`` bytes hold; BackupDamaged when they cannot be whole."""
    segments, rest = divmod(body, SEALED_SEGMENT)
    if rest:
        if rest < TAG_BYTES:
            raise BackupDamaged(
                f"the backup is truncated: its last segment ({rest} bytes) is shorter "
                f"than a {TAG_BYTES}-byte tag"
            )
        segments += 1
    if not segments:
        raise BackupDamaged("the backup is truncated: it holds no segment after its header")
    return segments


def _is_seekable(source: BinaryIO) -> bool:
    try:
        return bool(source.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _read_header(source: BinaryIO) -> tuple[bytes, bytes]:
    """The header (the AAD) and the key id; BackupDamaged when it is not a backup's."""
    header = _read_exact(source, HEADER_BYTES)
    if len(header) < len(MAGIC) + 1 or header[: len(MAGIC)] != MAGIC:
        raise BackupDamaged("not an AutoRAG backup (it does not start with the backup header)")
    version = header[len(MAGIC)]
    if version != VERSION:
        raise BackupDamaged(
            f"the backup is in format {version}, which this AutoRAG does not read "
            f"(it reads format {VERSION}): a newer AutoRAG made it, or it is damaged"
        )
    if len(header) < HEADER_BYTES:
        raise BackupDamaged("the backup is truncated: its header is cut short")
    return header[:AAD_BYTES], header[AAD_BYTES:]


def _read_exact(source: BinaryIO, count: int) -> bytes:
    """Up to ``count`` bytes, fewer only at the end (a pipe may return short reads)."""
    chunks: list[bytes] = []
    wanted = count
    while wanted > 0:
        chunk = source.read(wanted)
        if not chunk:
            break
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)
