"""Server-sent events from work that runs in a thread.

The agent is synchronous; it runs in its own thread and hands each event to the event
loop, which writes it to the client as it comes. When the client goes away the stream
is cancelled and the work is told to stop through its cancel event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from autorag.errors import AutoragError

T = TypeVar("T")
E = TypeVar("E")
log = logging.getLogger(__name__)
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
MEDIA_TYPE = "text/event-stream"


def sse(event: str, data: Any) -> str:
    """One event in the wire format: ``event:`` line, one ``data:`` line, blank line."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


@dataclass(frozen=True)
class _Item(Generic[E, T]):
    event: E | None = None
    result: T | None = None
    error: BaseException | None = None
    finished: bool = False


class ThreadedStream(Generic[E, T]):
    """Runs ``work(emit, cancel)`` in a thread; iterate ``items()`` on the event loop."""

    def __init__(self, work: Callable[[Callable[[E], None], threading.Event], T]) -> None:
        self.work = work
        self.cancel = threading.Event()
        self._queue: asyncio.Queue[_Item[E, T]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()

    def _put(self, item: _Item[E, T]) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _run(self) -> None:
        try:
            result = self.work(lambda event: self._put(_Item(event=event)), self.cancel)
            self._put(_Item(result=result, finished=True))
        except BaseException as exc:
            if not isinstance(exc, AutoragError):
                log.exception("a streamed answer failed")
            self._put(_Item(error=exc, finished=True))

    async def items(self) -> AsyncIterator[tuple[E | None, T | None, BaseException | None]]:
        """(event, None, None) per event, then (None, result, error) once at the end."""
        threading.Thread(target=self._run, name="answer", daemon=True).start()
        try:
            while True:
                item = await self._queue.get()
                if item.finished:
                    yield None, item.result, item.error
                    return
                yield item.event, None, None
        finally:
            self.cancel.set()  # finished, or the client went away: stop the work
