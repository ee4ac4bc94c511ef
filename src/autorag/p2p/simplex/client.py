"""A client of the simplex-chat WebSocket bot API (the protocol brief, §2-§7).

One connection per CLI, because the CLI hands each event to only one of its clients.
Commands go out as ``{"corrId": "<string>", "cmd": "..."}``; a reply carries the same
``corrId`` and is matched by it alone, since events (frames without ``corrId``) land
before, between and after replies. One reader task reads every frame as it arrives, so
the CLI's event queue never fills: replies resolve their command's future, events go to
``events`` (bounded; the oldest is dropped, with a warning, rather than stall replies).
A frame that is not JSON, or not the envelope, is counted and skipped.

Reconnect policy: when the connection drops, every command in flight fails at once with
``SimplexUnavailable`` (commands are never re-sent: ``/_send`` is not idempotent) and the
client reconnects in the background, waiting 0.25 s and doubling up to 10 s, until
``close()``. Commands issued while disconnected fail at once. Events the CLI produced
meanwhile wait in its queue and arrive as a burst after reconnecting.

Command text can hold message text, so only a command's verb is ever logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from autorag.errors import AutoragError, InvalidInput, Unavailable
from autorag.p2p.simplex.chunks import DEFAULT_MAX_BYTES, encoded_size, split_message
from autorag.p2p.simplex.shapes import (
    Contact,
    IncomingMessage,
    as_id,
    chat_error_kind,
    parse_contacts,
    parse_incoming,
)

log = logging.getLogger(__name__)

# Contact and chat lists carry avatars: far over websockets' 1 MiB default frame limit.
DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
_FIRST_DELAY_S, _MAX_DELAY_S = 0.25, 10.0
_ERROR_EVENTS = frozenset({"chatError", "chatErrors", "messageError"})


class SimplexUnavailable(Unavailable):
    """simplex-chat cannot be reached, the connection dropped, or it did not answer."""

    code = "simplex_unavailable"


class SimplexCommandError(AutoragError):
    """simplex-chat answered a command with ``chatCmdError`` (``kind`` names the error)."""

    code = "simplex_command_error"
    status = 502

    def __init__(self, verb: str, kind: str, resp: dict[str, Any]) -> None:
        super().__init__(f"simplex-chat refused {verb}: {kind}")
        self.kind = kind
        self.resp = resp


class SimplexClient:
    """``async with SimplexClient("ws://127.0.0.1:5225") as chat: await chat.contacts(1)``."""

    def __init__(
        self,
        url: str,
        *,
        command_timeout: float = 30.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_message_bytes: int = DEFAULT_MAX_BYTES,
        event_queue_size: int = 10_000,
        reconnect: bool = True,
    ) -> None:
        self.url = url
        self.command_timeout = command_timeout
        self.max_frame_bytes = max_frame_bytes
        self.max_message_bytes = max_message_bytes
        self.reconnect = reconnect
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue(event_queue_size)
        self._messages: deque[IncomingMessage] = deque()
        self.malformed_frames = 0  # frames skipped as undecodable (for tests and logs)
        self.unmatched_replies = 0  # replies whose corrId no command is waiting for
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ws: ClientConnection | None = None
        self._connected = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._closing = False

    # -- lifecycle -------------------------------------------------------------------------
    async def connect(self, timeout: float = 10.0) -> None:
        """Open the connection, retrying until ``timeout``; then keep it open."""
        loop = asyncio.get_running_loop()
        deadline, delay = loop.time() + timeout, _FIRST_DELAY_S
        while True:
            try:
                ws = await self._open(max(0.1, deadline - loop.time()))
                break
            except (OSError, InvalidHandshake, TimeoutError) as exc:
                if loop.time() + delay > deadline:
                    raise SimplexUnavailable(
                        f"cannot reach simplex-chat at {self.url}: {exc}"
                    ) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY_S)
        self._attach(ws)
        self._supervisor = asyncio.create_task(self._run(ws), name="simplex-reader")

    async def close(self) -> None:
        self._closing = True
        ws, supervisor = self._ws, self._supervisor
        if ws is not None:
            await ws.close()
        if supervisor is not None:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
        self._fail_pending("the client was closed")

    async def __aenter__(self) -> SimplexClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout: float) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    # -- commands --------------------------------------------------------------------------
    async def command(self, cmd: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Send one command and return the ``resp`` of its reply."""
        verb = cmd.split(" ", 1)[0]
        ws = self._ws
        if ws is None:
            raise SimplexUnavailable(f"not connected to simplex-chat ({verb} not sent)")
        corr_id = str(next(self._ids))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[corr_id] = future
        limit = timeout or self.command_timeout
        try:
            await ws.send(json.dumps({"corrId": corr_id, "cmd": cmd}, ensure_ascii=False))
            resp = await asyncio.wait_for(future, limit)
        except TimeoutError:
            raise SimplexUnavailable(f"simplex-chat did not answer {verb} in {limit:g} s") from None
        except ConnectionClosed:
            raise SimplexUnavailable(f"the simplex-chat connection closed ({verb})") from None
        finally:
            self._pending.pop(corr_id, None)
        if resp.get("type") == "chatCmdError":
            raise SimplexCommandError(verb, chat_error_kind(resp), resp)
        return resp

    async def active_user_id(self) -> int:
        resp = _expect(await self.command("/user"), "activeUser", "/user")
        user = resp.get("user")
        user_id = as_id(user.get("userId")) if isinstance(user, dict) else None
        if user_id is None:
            raise SimplexUnavailable("simplex-chat's /user reply has no userId")
        return user_id

    async def contacts(self, user_id: int) -> list[Contact]:
        cmd = f"/_contacts {int(user_id)}"
        return parse_contacts(_expect(await self.command(cmd), "contactsList", "/_contacts"))

    async def send_text(self, contact_id: int, text: str) -> list[int]:
        """Send one text message (at most ``max_message_bytes``); return its item ids."""
        size = encoded_size(text)
        if size > self.max_message_bytes:
            raise InvalidInput(f"message of {size} bytes is over {self.max_message_bytes}")
        composed = [{"msgContent": {"type": "text", "text": text}}]
        body = json.dumps(composed, ensure_ascii=False, separators=(",", ":"))
        resp = _expect(
            await self.command(f"/_send @{int(contact_id)} json {body}"), "newChatItems", "/_send"
        )
        items = resp.get("chatItems")
        return [i for i in map(_item_id, items if isinstance(items, list) else []) if i is not None]

    async def send_message(self, contact_id: int, payload: str) -> list[int]:
        """Send a payload of any size, as numbered parts when over the message limit."""
        item_ids: list[int] = []
        for part in split_message(payload, max_bytes=self.max_message_bytes):
            item_ids += await self.send_text(contact_id, part)
        return item_ids

    # -- events ----------------------------------------------------------------------------
    async def next_message(self) -> IncomingMessage:
        """The next text a contact sent; consumes ``events`` (other events are logged)."""
        while not self._messages:
            event = await self.events.get()
            messages = parse_incoming(event)
            if not messages:
                _log_event(event)
            self._messages.extend(messages)  # one event can carry several
        return self._messages.popleft()

    async def incoming(self) -> AsyncIterator[IncomingMessage]:
        """``next_message`` forever; leaving the loop loses nothing."""
        while True:
            yield await self.next_message()

    # -- the connection --------------------------------------------------------------------
    async def _open(self, timeout: float) -> ClientConnection:
        return await connect(
            self.url,
            max_size=self.max_frame_bytes,
            open_timeout=timeout,
            # The CLI may run one long command (60 s+) before it reads a ping; on loopback
            # a dead peer closes the socket anyway.
            ping_interval=None,
            compression=None,
            proxy=None,  # loopback: never through HTTP(S)_PROXY
        )

    async def _run(self, ws: ClientConnection) -> None:
        delay = _FIRST_DELAY_S
        while True:
            await self._serve(ws)
            if self._closing or not self.reconnect:
                return
            log.warning("simplex: connection lost; reconnecting to %s", self.url)
            while True:
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY_S)
                try:
                    ws = await self._open(_MAX_DELAY_S)
                    break
                except (OSError, InvalidHandshake, TimeoutError):
                    continue
            delay = _FIRST_DELAY_S
            self._attach(ws)
            log.warning("simplex: reconnected to %s", self.url)

    def _attach(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._connected.set()

    async def _serve(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                self._dispatch(frame)
        except ConnectionClosed:
            pass
        finally:
            self._ws = None
            self._connected.clear()
            self._fail_pending("the simplex-chat connection closed")

    def _dispatch(self, frame: str | bytes) -> None:
        envelope = _decode(frame)
        if envelope is None:
            self.malformed_frames += 1
            log.warning("simplex: skipped a malformed frame (%d bytes)", len(frame))
            return
        corr_id, resp = envelope
        if corr_id is None:
            self._queue_event(resp)
            return
        future = self._pending.pop(corr_id, None)
        if future is None or future.done():
            self.unmatched_replies += 1
            log.warning("simplex: dropped a reply for unknown corrId %.40r", corr_id)
            return
        future.set_result(resp)

    def _queue_event(self, resp: dict[str, Any]) -> None:
        if self.events.full():
            self.events.get_nowait()
            log.warning("simplex: event queue full; dropped the oldest event")
        self.events.put_nowait(resp)

    def _fail_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(SimplexUnavailable(reason))


def _decode(frame: str | bytes) -> tuple[str | None, dict[str, Any]] | None:
    """(corrId or None for an event, resp) of a well-formed frame, else None."""
    if not isinstance(frame, str):
        return None
    try:
        document = json.loads(frame)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("resp"), dict):
        return None
    corr_id = document.get("corrId")
    if corr_id is not None and not isinstance(corr_id, str):
        return None
    return corr_id, document["resp"]


def _expect(resp: dict[str, Any], kind: str, verb: str) -> dict[str, Any]:
    if resp.get("type") != kind:
        raise SimplexUnavailable(f"simplex-chat answered {verb} with {resp.get('type')!r}")
    return resp


def _item_id(item: Any) -> int | None:
    chat_item = item.get("chatItem") if isinstance(item, dict) else None
    meta = chat_item.get("meta") if isinstance(chat_item, dict) else None
    return as_id(meta.get("itemId")) if isinstance(meta, dict) else None


def _log_event(event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind in _ERROR_EVENTS or kind == "chatCmdError":
        log.info("simplex: %s event: %s", kind, chat_error_kind(event))
    else:
        log.debug("simplex: %s event", kind)
