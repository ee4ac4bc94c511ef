"""Messages kept under SimpleX's size limit: numbered parts and their reassembly (pure).

One chat message carries at most 15 602 encoded bytes and the core does not split
(the brief's §7), so a longer payload goes as parts, each a text message of its own::

    AUTORAG-PART/1 <message id> <n>/<total>\\n<body>

Sizes are measured as the text's JSON encoding in UTF-8, which is how the chat protocol
carries it (a quote or a newline costs two bytes, a control character six). A payload
that fits and does not itself start with the part prefix is sent unchanged.

The receiving side is bounded because parts come from other people: a cap on parts per
message, on bytes per message, on incomplete messages per sender and in all, and a
timeout after which an incomplete message is dropped. Repeated parts are ignored when
identical and drop the message when they differ.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

PART_PREFIX = "AUTORAG-PART/1 "
DEFAULT_MAX_BYTES = 12_000
DEFAULT_MAX_PARTS = 64
DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024
_HEADER = re.compile(r"AUTORAG-PART/1 ([A-Za-z0-9_-]{1,32}) ([1-9][0-9]{0,4})/([1-9][0-9]{0,4})\n")
_RECENT_LIMIT = 1024  # completed message keys remembered so late repeats are ignored

DropHook = Callable[[Hashable, str, str], None]  # (sender, message id, reason)


class ChunkError(ValueError):
    """A payload that cannot be split, or a part that cannot be accepted."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Part:
    message_id: str
    index: int  # 1-based
    total: int
    body: str


def encoded_size(text: str) -> int:
    """Bytes the text takes inside the chat protocol's JSON (UTF-8, escapes counted)."""
    try:
        return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2
    except UnicodeEncodeError:
        raise ChunkError("not-utf8", "text with lone surrogates cannot be sent") from None


def split_message(
    payload: str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_parts: int = DEFAULT_MAX_PARTS,
    message_id: str | None = None,
) -> list[str]:
    """The payload as one message, or as numbered parts each at most ``max_bytes``."""
    if encoded_size(payload) <= max_bytes and not payload.startswith(PART_PREFIX):
        return [payload]
    message_id = message_id or secrets.token_hex(6)
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", message_id):
        raise ChunkError("bad-id", "a message id is 1 to 32 letters, digits, '_' or '-'")
    widest = _header(message_id, max_parts, max_parts)
    budget = max_bytes - encoded_size(widest)
    if budget < 64:
        raise ChunkError("too-small", f"max_bytes {max_bytes} leaves no room for a part")
    bodies = _slices(payload, budget, max_parts)
    return [_header(message_id, i, len(bodies)) + b for i, b in enumerate(bodies, start=1)]


def parse_part(text: str) -> Part | None:
    """The part a message carries, or None for an ordinary message."""
    if not text.startswith(PART_PREFIX):
        return None
    match = _HEADER.match(text)
    if match is None:
        raise ChunkError("bad-part", "a message part with a malformed header")
    index, total = int(match[2]), int(match[3])
    if index > total:
        raise ChunkError("bad-part", f"part {index} of {total}")
    return Part(match[1], index, total, text[match.end() :])


@dataclass
class _Pending:
    total: int
    started: float
    parts: dict[int, str] = field(default_factory=dict)
    size: int = 0


@dataclass
class Reassembler:
    """Collects parts per (sender, message id) and hands back whole messages.

    ``feed`` returns the whole text once every part is in (an ordinary message at once),
    None while parts are missing, and raises ChunkError for a part it refuses (the
    message it belonged to is dropped). ``on_drop`` hears about every dropped message.
    """

    max_parts: int = DEFAULT_MAX_PARTS
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    timeout_s: float = 120.0
    max_pending: int = 64
    max_pending_per_sender: int = 4
    clock: Callable[[], float] = time.monotonic
    on_drop: DropHook | None = None
    _pending: OrderedDict[tuple[Hashable, str], _Pending] = field(default_factory=OrderedDict)
    _recent: deque[tuple[Hashable, str]] = field(default_factory=deque)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def feed(self, sender: Hashable, text: str) -> str | None:
        now = self.clock()
        self.expire(now)
        part = parse_part(text)
        if part is None:
            return text
        if part.total > self.max_parts:
            raise ChunkError("too-large", f"{part.total} parts, at most {self.max_parts}")
        key = (sender, part.message_id)
        if key in self._recent:
            return None  # a late repeat of a message already delivered
        pending = self._pending.get(key) or self._start(key, part.total, now)
        self._add(key, pending, part)
        if len(pending.parts) < pending.total:
            return None
        del self._pending[key]
        self._remember(key)
        return "".join(pending.parts[i] for i in range(1, pending.total + 1))

    def expire(self, now: float | None = None) -> list[tuple[Hashable, str]]:
        """Drop incomplete messages older than the timeout; return their keys."""
        now = self.clock() if now is None else now
        stale = [k for k, p in self._pending.items() if now - p.started > self.timeout_s]
        for key in stale:
            self._drop(key, "timeout")
        return stale

    def _start(self, key: tuple[Hashable, str], total: int, now: float) -> _Pending:
        mine = [k for k in self._pending if k[0] == key[0]]
        if len(mine) >= self.max_pending_per_sender:
            self._drop(mine[0], "evicted")  # a sender crowds out only its own messages
        if len(self._pending) >= self.max_pending:
            self._drop(next(iter(self._pending)), "evicted")
        pending = _Pending(total, now)
        self._pending[key] = pending
        return pending

    def _add(self, key: tuple[Hashable, str], pending: _Pending, part: Part) -> None:
        if part.total != pending.total:
            self._drop(key, "inconsistent")
            raise ChunkError("inconsistent", f"part says {part.total} parts, not {pending.total}")
        known = pending.parts.get(part.index)
        if known is not None:
            if known == part.body:
                return
            self._drop(key, "conflict")
            raise ChunkError("conflict", f"part {part.index} arrived twice with different text")
        size = len(part.body.encode("utf-8", "surrogatepass"))
        if pending.size + size > self.max_total_bytes:
            self._drop(key, "too-large")
            raise ChunkError("too-large", f"message over {self.max_total_bytes} bytes")
        pending.parts[part.index] = part.body
        pending.size += size

    def _drop(self, key: tuple[Hashable, str], reason: str) -> None:
        if self._pending.pop(key, None) is not None and self.on_drop is not None:
            self.on_drop(key[0], key[1], reason)

    def _remember(self, key: tuple[Hashable, str]) -> None:
        self._recent.append(key)
        if len(self._recent) > _RECENT_LIMIT:
            self._recent.popleft()


def _header(message_id: str, index: int, total: int) -> str:
    return f"{PART_PREFIX}{message_id} {index}/{total}\n"


def _slices(payload: str, budget: int, max_parts: int) -> list[str]:
    """Cut the payload into pieces whose encoded size is at most ``budget`` each."""
    pieces: list[str] = []
    start = 0
    while start < len(payload):
        if len(pieces) == max_parts:
            raise ChunkError("too-large", f"the payload needs more than {max_parts} parts")
        end = start + _fitting(payload, start, budget)
        pieces.append(payload[start:end])
        start = end
    return pieces


def _fitting(payload: str, start: int, budget: int) -> int:
    """How many characters from ``start`` fit in ``budget`` bytes (at least one).

    Every character costs at least one byte, so ``budget`` characters is an upper bound;
    shrinking in proportion to the overshoot converges in a few encodings.
    """
    count = min(budget, len(payload) - start)
    cost = encoded_size(payload[start : start + count])
    while cost > budget and count > 1:
        count = max(1, min(count - 1, count * budget // cost))
        cost = encoded_size(payload[start : start + count])
    return count
