"""``max_tokens`` and ``stop`` applied to a stream of deltas, for what a server does not
bound itself: the built-in extractive provider's text, and a model's text on a call that
offers tools (where the server is not given ``max_tokens``: a tool call needs room).

A text delta counts as one token: model servers stream one token a chunk, and the
extractive provider one word.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from autorag.llm.base import LLMDelta


def limited(
    deltas: Iterable[LLMDelta], *, max_tokens: int | None = None, stop: Sequence[str] = ()
) -> Iterator[LLMDelta]:
    """``deltas`` with their text cut at ``max_tokens`` text deltas (then a last delta with
    ``finish="length"``) or before the first ``stop`` sequence (``finish="stop"``).

    Text that could be the start of a stop sequence is held until it cannot; tool calls
    and usage pass as they come. Stopping early closes ``deltas`` (and so the HTTP
    stream under it).
    """
    if max_tokens is None and not stop:
        yield from deltas
        return
    cutter = _StopCutter(stop)
    count = 0
    iterator = iter(deltas)
    try:
        for delta in iterator:
            if not delta.text:
                yield delta
                continue
            text, stopped = cutter.feed(delta.text)
            if text:
                yield LLMDelta(text=text)
            if stopped:
                yield LLMDelta(finish="stop")
                return
            count += 1
            if max_tokens is not None and count >= max_tokens:
                if rest := cutter.flush():
                    yield LLMDelta(text=rest)
                yield LLMDelta(finish="length")
                return
        if rest := cutter.flush():
            yield LLMDelta(text=rest)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


class _StopCutter:
    """Finds stop sequences across deltas: what may be sent, and whether one was met."""

    def __init__(self, stop: Sequence[str]) -> None:
        self.stop = [s for s in stop if s]
        self.pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        if not self.stop:
            return text, False
        buffer = self.pending + text
        found = [i for i in (buffer.find(s) for s in self.stop) if i >= 0]
        if found:
            self.pending = ""
            return buffer[: min(found)], True
        keep = self._open_prefix(buffer)
        self.pending = buffer[len(buffer) - keep :]
        return buffer[: len(buffer) - keep], False

    def flush(self) -> str:
        rest, self.pending = self.pending, ""
        return rest

    def _open_prefix(self, buffer: str) -> int:
        """The length of the longest end of ``buffer`` that begins a stop sequence."""
        longest = 0
        for sequence in self.stop:
            for size in range(min(len(sequence) - 1, len(buffer)), longest, -1):
                if buffer.endswith(sequence[:size]):
                    longest = size
                    break
        return longest
