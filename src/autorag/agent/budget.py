"""The orchestrator's watchdogs: wallclock and token budgets, loops, unknown tools,
tool-output and context size, and the per-user concurrency limit.

Each is a small object the orchestrator consults between steps; none of them knows
about models or HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from autorag.errors import RateLimited
from autorag.llm.base import ChatMessage, Usage

AbortReason = Literal[
    "none",
    "wallclock",
    "token_budget",
    "context_overflow",
    "loop_detected",
    "aborted",
    "done",
    "unknown_tool_breaker",
]
# Rough bytes per token of English prose and JSON: used when a server reports no usage.
BYTES_PER_TOKEN = 4
TRUNCATION_MARK = "\n[… output truncated]"
_MARK_EXTRA_BYTES = len(TRUNCATION_MARK.encode()) - len(TRUNCATION_MARK)


@dataclass
class Budget:
    """Wallclock and tokens spent by one answer, against their limits."""

    wallclock_s: float
    token_limit: int
    started: float = field(default_factory=time.monotonic)
    usage: Usage = field(default_factory=Usage)

    def charge(self, usage: Usage) -> None:
        self.usage = self.usage + usage

    def exceeded(self) -> AbortReason | None:
        if self.elapsed_s() >= self.wallclock_s:
            return "wallclock"
        if self.usage.total >= self.token_limit:
            return "token_budget"
        return None

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        return max(0.0, self.wallclock_s - self.elapsed_s())


def estimate_tokens(text: str) -> int:
    return (len(text.encode()) + BYTES_PER_TOKEN - 1) // BYTES_PER_TOKEN


def estimate_prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    return sum(estimate_tokens(m.content) + 4 for m in messages)


class LoopDetector:
    """The same skill with the same arguments asked for ``repeats`` times is a loop."""

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        self._seen: Counter[str] = Counter()

    def record(self, name: str, arguments: Mapping[str, Any]) -> bool:
        key = name + json.dumps(_normalized(arguments), sort_keys=True, default=str)
        self._seen[key] += 1
        return self._seen[key] >= self.repeats


def _normalized(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Case and spacing do not make a query new."""
    return {
        k: " ".join(v.lower().split()) if isinstance(v, str) else v for k, v in arguments.items()
    }


class UnknownToolBreaker:
    """Trips after ``consecutive`` unknown skills in a row or ``total`` in one answer."""

    def __init__(self, consecutive: int = 3, total: int = 5) -> None:
        self.consecutive_limit = consecutive
        self.total_limit = total
        self.consecutive = 0
        self.total = 0

    def unknown(self) -> bool:
        """Count one unknown skill; True when the breaker trips."""
        self.consecutive += 1
        self.total += 1
        return self.consecutive >= self.consecutive_limit or self.total >= self.total_limit

    def known(self) -> None:
        self.consecutive = 0


def truncate_tool_output(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[: max_chars - len(TRUNCATION_MARK)] + TRUNCATION_MARK


def message_bytes(message: ChatMessage) -> int:
    calls = sum(len(c.name) + len(json.dumps(dict(c.arguments))) for c in message.tool_calls)
    return len(message.content.encode()) + calls + 16


def truncate_context_to_byte_budget(
    messages: Sequence[ChatMessage], budget: int, keep_last: int
) -> list[ChatMessage] | None:
    """Fit the prompt into ``budget`` bytes, keeping what the answer cannot do without.

    Kept: the system message, the pinned user message (the question being answered: the
    last user message) and the last ``keep_last`` messages; older turns go first. If that
    is still too big, the earlier turns in the kept tail go too, oldest first, then the
    longest tool results of this answer are shortened. None when it still cannot fit: a
    context overflow.
    """
    if _size(messages) <= budget:
        return list(messages)
    pinned = _pinned_indexes(messages)
    question = max(pinned, default=-1)
    tail = set(range(max(0, len(messages) - keep_last), len(messages)))
    kept = sorted(pinned | tail)
    earlier = [i for i in kept if i < question and i not in pinned]
    while earlier and _size([messages[i] for i in kept]) > budget:
        kept.remove(earlier.pop(0))
    # A tool result whose call was dropped would confuse the model: drop it with it.
    fitted = _without_orphan_results([messages[i] for i in kept])
    over = _size(fitted) - budget
    if over > 0:
        fitted = _shorten_tool_results(fitted, over)
    return fitted if _size(fitted) <= budget else None


def _size(messages: Sequence[ChatMessage]) -> int:
    return sum(map(message_bytes, messages))


def _pinned_indexes(messages: Sequence[ChatMessage]) -> set[int]:
    pinned: set[int] = set()
    if messages and messages[0].role == "system":
        pinned.add(0)
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if users:
        pinned.add(users[-1])
    return pinned


def _without_orphan_results(messages: list[ChatMessage]) -> list[ChatMessage]:
    calls = {c.id for m in messages for c in m.tool_calls}
    return [m for m in messages if m.role != "tool" or m.tool_call_id in calls]


def _shorten_tool_results(messages: list[ChatMessage], over: int) -> list[ChatMessage]:
    """Cut the longest tool results first, never below a useful minimum."""
    order = sorted(
        (i for i, m in enumerate(messages) if m.role == "tool"),
        key=lambda i: -len(messages[i].content),
    )
    shortened = list(messages)
    for index in order:
        if over <= 0:
            break
        content = shortened[index].content
        # ``over`` is in bytes; the mark's "…" takes more bytes than characters.
        target = max(500, len(content) - over - _MARK_EXTRA_BYTES)
        cut = truncate_tool_output(content, target)
        saved = len(content.encode()) - len(cut.encode())
        if saved > 0:
            over -= saved
            shortened[index] = replace(shortened[index], content=cut)
    return shortened


class ConcurrencyLimiter:
    """At most ``limit`` answers in progress per user, in this process."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def acquire(self, user: str) -> Callable[[], None]:
        """Take a slot or raise ``RateLimited``; returns the (idempotent) release."""
        with self._lock:
            if self._running[user] >= self.limit:
                raise RateLimited(
                    f"too many answers in progress for this user (limit {self.limit}); "
                    "wait for one to finish or stop it",
                    retry_after=2,
                )
            self._running[user] += 1
        released: list[bool] = []

        def release() -> None:
            with self._lock:
                if released:
                    return
                released.append(True)
                self._running[user] -= 1
                if self._running[user] <= 0:
                    del self._running[user]

        return release

    def running(self, user: str) -> int:
        with self._lock:
            return self._running[user]
