"""Scripted model servers: the turns a script is made of, and the server they share.

A script is a list of turns, one consumed per chat request, in order:

- ``Text("answer with [1]")``: stream that text, in word-ish chunks;
- ``Tool("rag_search", {"query": "refunds"})``: call a tool (optionally after ``text``);
- ``ToolCalls([Tool(...), Tool(...)])``: several tool calls in one turn;
- ``Error(status=500)``: fail with an HTTP error, or ``Error(after_text="Par")`` fail in
  the middle of a stream that has begun;
- ``Hang(seconds=30)``: answer nothing for that long (client timeouts).

``delay_s`` on ``Text``/``Tool``/``ToolCalls`` pauses before every chunk: a slow model,
for abort tests. Instead of a list, a function ``respond(request_json) -> turn`` can
decide each turn. When a list runs out the server answers ``default``.

The servers are real: uvicorn on a free loopback port in a daemon thread. Use one as a
context manager (``with ScriptedOpenAI([...]) as server``), or start it once per module
and ``server.reset(new_script)`` between tests. ``server.requests`` holds the JSON of
every chat request, ``server.log`` every request with its Authorization header, and
``server.disconnects`` counts streams the client abandoned.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp

from autorag.llm.base import Usage

_START_TIMEOUT_S = 10.0
# Leading whitespace stays with the word after it, as in real tokenizers (" answer").
_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]+|\s+")


def split_tokens(text: str) -> list[str]:
    """``text`` in word-ish pieces that join back to it exactly."""
    return _TOKEN.findall(text)


def arguments_text(arguments: Mapping[str, Any] | str) -> str:
    """A tool call's arguments as the JSON text a model would write (strings verbatim)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def message_text(content: Any) -> str:
    """A message's text: its content, or the text parts of OpenAI's multi-part content
    (as sent with images)."""
    if isinstance(content, list):
        parts = (p for p in content if isinstance(p, dict) and p.get("type") == "text")
        return "".join(str(part.get("text") or "") for part in parts)
    return str(content or "")


def raw_response(error: Error) -> Response:
    """``error.body`` as the response: JSON, or plain text if it is a string."""
    if isinstance(error.body, str):
        return Response(error.body, status_code=error.status, media_type="text/plain")
    return JSONResponse(error.body, status_code=error.status)


# -- turns ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    """The model answers ``text``."""

    text: str
    usage: Usage | None = None  # None: counted from the request and the chunks sent
    delay_s: float = 0.0  # pause before each chunk
    finish_reason: str = "stop"  # "length" to play a cut-off answer


@dataclass(frozen=True)
class Tool:
    """The model calls tool ``name``, after streaming ``text`` if given.

    ``arguments`` as a string is sent verbatim: malformed JSON for robustness tests.
    ``id`` None: the server makes one up (``call_<n>``).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    text: str = ""
    id: str | None = None
    usage: Usage | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class ToolCalls:
    """Several tool calls in one turn (only the calls' name, arguments and id count)."""

    calls: Sequence[Tool]
    text: str = ""
    usage: Usage | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class Error:
    """Fail: an HTTP ``status`` with the dialect's error body, or, with ``after_text``,
    status 200, that text streamed, then an error inside the stream."""

    status: int = 500
    message: str = "scripted failure"
    body: Any = None  # JSON (or text) to send instead of the dialect's error shape
    after_text: str | None = None


@dataclass(frozen=True)
class Hang:
    """Send nothing (not even headers) for ``seconds``, then answer ``then``."""

    seconds: float = 30.0
    then: Turn | None = None


Turn = Text | Tool | ToolCalls | Error | Hang
Respond = Callable[[dict[str, Any]], Turn]
EXHAUSTED = Text("(the scripted server has no more turns)")


@dataclass(frozen=True)
class Reply:
    """What a streamed answer consists of, whichever turn asked for it."""

    text: str
    calls: tuple[Tool, ...]
    usage: Usage | None
    delay_s: float
    finish_reason: str

    @classmethod
    def of(cls, turn: Text | Tool | ToolCalls) -> Reply:
        if isinstance(turn, Text):
            return cls(turn.text, (), turn.usage, turn.delay_s, turn.finish_reason)
        calls = (turn,) if isinstance(turn, Tool) else tuple(turn.calls)
        return cls(turn.text, calls, turn.usage, turn.delay_s, "tool_calls")

    def call_ids(self, first: int) -> list[str]:
        """Each call's id; ``first`` numbers the made-up ones uniquely per server."""
        return [call.id or f"call_{first + i}" for i, call in enumerate(self.calls)]

    def usage_for(self, request: Mapping[str, Any], arguments: Iterable[str]) -> Usage:
        if self.usage is not None:
            return self.usage
        messages = request.get("messages") or []
        prompt = sum(len(split_tokens(message_text(m.get("content")))) for m in messages)
        completion = len(split_tokens(self.text)) + sum(len(split_tokens(a)) for a in arguments)
        return Usage(prompt, completion)


@dataclass(frozen=True)
class Seen:
    """One request the server received, of any route."""

    method: str
    path: str
    authorization: str | None
    body: Any  # the decoded JSON, or None


# -- the server -------------------------------------------------------------------------


class ScriptedServer(ABC):
    """A model server double playing a script; subclasses speak a dialect.

    ``requests``: the JSON of every chat request, in order; ``log``: every request;
    ``disconnects``: streams the client closed before their end (aborts).
    """

    def __init__(
        self,
        script: Sequence[Turn] | Respond = (),
        *,
        models: Sequence[str] = ("test-model",),
        api_key: str | None = None,
        default: Turn = EXHAUSTED,
        reject_unknown_models: bool = False,
    ) -> None:
        self._respond: Respond | None = None
        self._turns: deque[Turn] = deque()
        self.model_names = list(models)
        self.api_key = api_key
        self.default = default
        self.reject_unknown_models = reject_unknown_models
        self.requests: list[dict[str, Any]] = []
        self.log: list[Seen] = []
        self.disconnects = 0
        self._lock = threading.Lock()
        self._made_up_ids = 0
        self._stopping = threading.Event()
        self._hold_at = ""  # see hold_next_at()
        self._released = threading.Event()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.root_url = ""
        self.reset(script)

    # -- for tests ------------------------------------------------------------------

    @property
    @abstractmethod
    def base_url(self) -> str:
        """What a provider is configured with to reach this server."""

    def reset(self, script: Sequence[Turn] | Respond = ()) -> Self:
        """Play ``script`` from now on and forget what was received: one server can then
        serve many tests (stopping one takes ~0.2 s, uvicorn's shutdown)."""
        with self._lock:
            self._respond = script if callable(script) else None
            self._turns = deque(() if callable(script) else script)
            self.requests.clear()
            self.log.clear()
            self.disconnects = 0
            self._hold_at = ""
            self._released.clear()
        return self

    def push(self, *turns: Turn) -> None:
        """Add turns to the end of the script."""
        with self._lock:
            self._turns.extend(turns)

    def start(self) -> Self:
        # Binding port 0 ourselves and handing uvicorn the socket avoids picking a port
        # that something else grabs before the server binds it.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(
            self.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{type(self).__name__} did not start")
            time.sleep(0.01)
        self.root_url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends every pause at once, so shutdown does not wait on them
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(_START_TIMEOUT_S)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- for subclasses -------------------------------------------------------------

    @abstractmethod
    def app(self) -> ASGIApp:
        """The ASGI app speaking the dialect."""

    @staticmethod
    @abstractmethod
    def images(request: Mapping[str, Any]) -> list[bytes]:
        """The decoded images a chat request carried, in order, however the dialect
        sends them."""

    async def receive(self, request: Request, *, chat: bool = False) -> Any:
        """Record ``request``; return its JSON body (None if it has none)."""
        raw = await request.body()
        try:
            body = await request.json() if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.log.append(
            Seen(request.method, request.url.path, request.headers.get("authorization"), body)
        )
        if chat and isinstance(body, dict):
            self.requests.append(body)
        return body

    def authorized(self, request: Request) -> bool:
        return self.api_key is None or (
            request.headers.get("authorization") == f"Bearer {self.api_key}"
        )

    def unknown_model(self, body: Mapping[str, Any]) -> str | None:
        """The requested model, if the server rejects it as unknown."""
        model = str(body.get("model", ""))
        return model if self.reject_unknown_models and model not in self.model_names else None

    async def next_turn(self, body: dict[str, Any]) -> Text | Tool | ToolCalls | Error:
        """The turn answering ``body``; ``Hang`` turns are waited out here."""
        turn = self._take(body)
        while isinstance(turn, Hang):
            await self.pause(turn.seconds)
            turn = turn.then or self.default
        return turn

    def made_up_ids(self, count: int) -> int:
        """Reserve ``count`` call numbers; return the first."""
        with self._lock:
            first = self._made_up_ids
            self._made_up_ids += count
            return first

    def hold_next_at(self, text: str) -> None:
        """The next answer that streams ``text`` stops right after it until ``release()``:
        a test reads a half-streamed answer without racing the clock."""
        self._released.clear()
        self._hold_at = text

    def release(self) -> None:
        """Let the held stream go on."""
        self._hold_at = ""
        self._released.set()

    async def text_tokens(self, reply: Reply) -> AsyncIterator[str]:
        """``reply.text`` token by token, each after ``delay_s``; held where
        ``hold_next_at`` says until ``release()`` (or the server stops)."""
        sent = ""
        for token in split_tokens(reply.text):
            await self.pause(reply.delay_s)
            yield token
            before, sent = sent, sent + token
            hold = self._hold_at
            if hold and hold in sent and hold not in before:
                while not (self._released.is_set() or self._stopping.is_set()):
                    await asyncio.sleep(0.02)

    async def pause(self, seconds: float) -> None:
        """Sleep, cut short when the server stops."""
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set() and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, 0.02))

    def stream(self, chunks: AsyncIterator[bytes], media_type: str) -> Response:
        """A streamed response that counts the client leaving before its end."""

        async def watched() -> AsyncIterator[bytes]:
            finished = False
            try:
                async for chunk in chunks:
                    yield chunk
                finished = True
            finally:
                if not finished:
                    self.disconnects += 1

        return StreamingResponse(watched(), media_type=media_type)

    def _take(self, body: dict[str, Any]) -> Turn:
        if self._respond is not None:
            return self._respond(body)
        with self._lock:
            return self._turns.popleft() if self._turns else self.default
