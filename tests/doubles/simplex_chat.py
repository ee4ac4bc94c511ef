"""A simplex-chat test double: the WebSocket bot API of the protocol brief, over real sockets.

Run as a child process exactly as AutoRAG runs the real CLI (``tests/doubles/bin/simplex-chat``
wraps this module; put that folder first on PATH and set ``AUTORAG_TEST_PYTHON``)::

    simplex-chat -d PREFIX -p PORT --create-bot-display-name NAME -y

or in-process with ``DoubleThread(DoubleConfig(...))`` (a thread with its own loop).

What it does (the brief's §8): one user (``userId`` 1); a dict of contacts; commands are
answered one at a time per connection, each reply with the request's ``corrId``; events
(``{"resp": …}``, never a ``corrId``) go out from a separate task, so they land before,
between and after replies; events wait while no client is connected and each goes to one
client; a frame that is not ``{corrId: string, cmd: string}`` gets the corrId-less
``chatCmdError`` "invalid request" and the connection stays open.

Configuration: a JSON file, ``<PREFIX>_double.json`` next to the database prefix (or the
``--config`` flag, or ``$SIMPLEX_DOUBLE_CONFIG``); flags override it::

    {"node": "alice",                    # this double's name in the link directory
     "linkDir": "/tmp/link",             # --link-dir: shared by linked doubles
     "record": "/tmp/alice.jsonl",       # --record: every frame, one JSON line each
     "contacts": [{"contactId": 2, "localDisplayName": "bob",
                   "profile": {"displayName": "bob", "fullName": "Bob B",
                               "shortDescr": "…", "description": "…", "image": "data:…"},
                   "link": "bob",        # messages to this contact go to node "bob"
                   "ready": true}],      # false: a contact card with no activeConn
     "address": false, "legacy": false, "maxMsgBytes": 15000,
     "faults": {"storm": 0, "reorderMs": 0, "delayReplyMs": 0, "dropReplies": [],
                "malformedEvery": 0, "corrIdMixups": false, "oversizedEventBytes": 0,
                "dropMessagesEvery": 0, "delayMessagesMs": 0, "ignoreSigterm": false,
                "seed": 0}}

Linking: doubles that share a link directory deliver to each other through files, so it
works across processes with no relay to run. ``<linkDir>/<node>/`` is a node's inbox:
``/_send`` to a contact with ``"link": "bob"`` writes ``{"from": "alice", "text": …}``
there (temp file + rename); node ``bob`` polls its inbox and emits a ``newChatItems``
event from its own contact whose ``link`` is ``"alice"`` (no such contact: dropped, as
SimpleX delivers nothing from strangers). Tests steer a running double by dropping
control files in its inbox: ``{"control": "event", "resp": {…}}``,
``{"control": "receive", "contactId": 7, "texts": ["hi"]}``,
``{"control": "contactRequest", "displayName": "Eve"}``, ``{"control": "dropConnections"}``.

The record file (``--record``) gets a line per frame sent (``send``), received (``recv``),
and per linked message written (``link-out``), read (``link-in``) or lost (``link-drop``),
so a test can assert that nothing private ever crossed the wire.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

BIN_DIR = Path(__file__).parent / "bin"
PYTHON_ENV = "AUTORAG_TEST_PYTHON"
CONFIG_ENV = "SIMPLEX_DOUBLE_CONFIG"
USER_ID = 1
_POLL_S = 0.02


def double_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment where ``simplex-chat`` on PATH is this double."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
    env[PYTHON_ENV] = sys.executable
    return env


# -- configuration --------------------------------------------------------------------------
@dataclass
class Faults:
    storm: int = 0  # noise events queued before and after every reply
    reorder_ms: int = 0  # commands run concurrently, each replying after 0..N ms
    delay_reply_ms: int = 0
    drop_replies: list[str] = field(default_factory=list)  # verbs never answered
    malformed_every: int = 0  # a malformed frame after every N replies
    corr_id_mixups: bool = False  # an unknown-corrId reply before, a stale repeat after
    oversized_event_bytes: int = 0  # one padded event of this size on each connect
    drop_messages_every: int = 0  # every Nth linked message is lost
    delay_messages_ms: int = 0
    ignore_sigterm: bool = False  # so the parent has to SIGKILL
    seed: int = 0

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Faults:
        names = {_camel(f): f for f in cls.__dataclass_fields__}
        return cls(**{names.get(k, k): v for k, v in raw.items()})


@dataclass
class DoubleConfig:
    node: str = "node"
    link_dir: Path | None = None
    record: Path | None = None
    contacts: list[dict[str, Any]] | None = None  # None: the built-in three
    address: bool = False
    legacy: bool = False  # newChatItem and connReqContact shapes of old CLIs
    max_msg_bytes: int = 15_000
    bot_name: str = "Bot"
    faults: Faults = field(default_factory=Faults)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> DoubleConfig:
        config = cls()
        for key, value in raw.items():
            name = {"linkDir": "link_dir", "maxMsgBytes": "max_msg_bytes"}.get(key, key)
            if name == "faults":
                config.faults = Faults.from_json(value)
            elif name in ("link_dir", "record"):
                setattr(config, name, Path(value) if value else None)
            elif hasattr(config, name):
                setattr(config, name, value)
        return config


DEFAULT_CONTACTS: list[dict[str, Any]] = [
    {"contactId": 2, "localDisplayName": "alice", "profile": {"displayName": "alice"}},
    {"contactId": 3, "localDisplayName": "Ann B", "profile": {"displayName": "Ann B"}},
    {"contactId": 4, "localDisplayName": "card", "ready": False},
]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


# -- JSON the way the real server builds it (absent keys, not nulls) --------------------------
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _local_profile(profile_id: int, raw: dict[str, Any], fallback: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "profileId": profile_id,
        "displayName": raw.get("displayName", fallback),
        "fullName": raw.get("fullName", ""),
        "localAlias": "",
    }
    for key in ("image", "shortDescr", "description", "peerType", "contactLink"):
        if raw.get(key):
            out[key] = raw[key]
    out["preferences"] = {"timedMessages": {"allow": "yes"}}
    return out


class Contacts:
    """The double's contacts, in the shapes of the brief's §4."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = {int(e["contactId"]): dict(e) for e in entries}
        self.created = _now()

    def json(self, contact_id: int) -> dict[str, Any]:
        e = self.entries[contact_id]
        name = e.get("localDisplayName") or e.get("profile", {}).get("displayName", "")
        out: dict[str, Any] = {
            "contactId": contact_id,
            "localDisplayName": name,
            "profile": _local_profile(contact_id + 100, e.get("profile", {}), name),
        }
        if e.get("ready", True):
            out["activeConn"] = self._connection(contact_id)
        out |= {
            "contactUsed": True,
            "contactStatus": "active",
            "chatSettings": {"enableNtfs": "all", "favorite": False},
            "userPreferences": {},
            "mergedPreferences": {},
            "createdAt": self.created,
            "updatedAt": self.created,
            "chatTs": self.created,
            "contactGrpInvSent": False,
            "chatTags": [],
            "chatDeleted": False,
        }
        return out

    def _connection(self, contact_id: int) -> dict[str, Any]:
        return {
            "connId": contact_id + 1000,
            "agentConnId": f"YWdlbnQt{contact_id:04d}",
            "connChatVersion": 14,
            "peerChatVRange": {"minVersion": 1, "maxVersion": 14},
            "connLevel": 0,
            "viaGroupLink": False,
            "connType": "contact",
            "connStatus": "ready",
            "contactConnInitiated": False,
            "localAlias": "",
            "entityId": contact_id,
            "pqSupport": False,
            "pqEncryption": False,
            "authErrCounter": 0,
            "quotaErrCounter": 0,
            "createdAt": self.created,
        }

    def by_name(self, name: str) -> int | None:
        return next(
            (cid for cid in self.entries if self.json(cid)["localDisplayName"] == name), None
        )

    def by_link(self, node: str) -> int | None:
        return next((cid for cid, e in self.entries.items() if e.get("link") == node), None)


def _error(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    key = {"error": "errorType", "errorStore": "storeError", "errorAgent": "agentError"}[kind]
    return {"type": "chatCmdError", "chatError": {"type": kind, key: detail}}


def command_error(message: str) -> dict[str, Any]:
    return _error("error", {"type": "commandError", "message": message})


INVALID_REQUEST = {"resp": command_error("invalid request")}


# -- the double -----------------------------------------------------------------------------
class SimplexDouble:
    """The server and its state; every method runs on the double's event loop."""

    def __init__(self, config: DoubleConfig) -> None:
        self.config = config
        self.contacts = Contacts(DEFAULT_CONTACTS if config.contacts is None else config.contacts)
        self.commands: list[str] = []  # every command received, for assertions
        self.port = 0
        self._events: deque[dict[str, Any]] = deque()
        self._event_ready = asyncio.Event()
        self._item_ids = itertools.count(1000)
        self._request_ids = itertools.count(500)
        self._requests: dict[int, dict[str, Any]] = {}
        self._connections: set[ServerConnection] = set()
        self._replies = 0
        self._sent_links = 0
        self._mixups = itertools.count(1)
        self._random = random.Random(config.faults.seed)
        self._address: str | None = "simplex:/contact#/?v=2-7&smp=x" if config.address else None
        self._record = config.record.open("a", encoding="utf-8") if config.record else None
        self._server: Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self, port: int = 0) -> int:
        self._server = await serve(
            self._connection,
            "127.0.0.1",
            port,
            max_size=64 * 1024 * 1024,
            compression=None,
            ping_interval=None,
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        if self.config.link_dir is not None:
            self._inbox().mkdir(parents=True, exist_ok=True)
            self._spawn(self._poll_inbox())
        return self.port

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._record is not None:
            self._record.close()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- hooks for tests ---------------------------------------------------------------------
    def inject_event(self, resp: dict[str, Any]) -> None:
        self._events.append(resp)
        self._event_ready.set()

    def receive_text(self, contact_id: int, *texts: str) -> None:
        """Messages from a contact, 1..n items in one ``newChatItems`` event."""
        items = [self._rcv_item(contact_id, text) for text in texts]
        if self.config.legacy:
            for item in items:
                self.inject_event({"type": "newChatItem", "user": self._user(), "chatItem": item})
            return
        self.inject_event({"type": "newChatItems", "user": self._user(), "chatItems": items})

    def contact_connected(self, contact_id: int) -> None:
        resp = {"type": "contactConnected", "user": self._user()}
        self.inject_event(resp | {"contact": self.contacts.json(contact_id)})

    def contact_request(self, display_name: str) -> int:
        request_id = next(self._request_ids)
        profile = {"displayName": display_name, "fullName": ""}
        self._requests[request_id] = profile
        request = {
            "contactRequestId": request_id,
            "localDisplayName": display_name,
            "profile": _local_profile(request_id + 100, profile, display_name),
            "createdAt": _now(),
            "updatedAt": _now(),
        }
        self.inject_event(
            {"type": "receivedContactRequest", "user": self._user(), "contactRequest": request}
        )
        return request_id

    def noise(self) -> list[dict[str, Any]]:
        user = self._user()
        return [
            {"type": "chatItemsStatusesUpdated", "user": user, "chatItems": []},
            {"type": "hostConnected", "protocol": "smp", "transportHost": "smp.example.org"},
            {
                "type": "chatError",
                "chatError": {"type": "errorAgent", "agentError": {"type": "BROKER"}},
            },
            {"type": "futureEventKind", "surprise": {"nested": [1, 2, 3]}, "user": user},
        ]

    async def drop_connections(self) -> None:
        for ws in list(self._connections):
            await ws.close()

    # -- connections -------------------------------------------------------------------------
    async def _connection(self, ws: ServerConnection) -> None:
        print("client connected", flush=True)
        self._connections.add(ws)
        pump = asyncio.ensure_future(self._pump(ws))
        if self.config.faults.oversized_event_bytes:
            padding = "x" * self.config.faults.oversized_event_bytes
            self.inject_event({"type": "futureEventKind", "padding": padding})
        try:
            async for frame in ws:
                self._log("recv", frame)
                await self._on_frame(ws, frame)
        except ConnectionClosed:
            pass
        finally:
            self._connections.discard(ws)
            pump.cancel()
            print("client disconnected", flush=True)

    async def _pump(self, ws: ServerConnection) -> None:
        """Send queued events; one put back in front if the client went away."""
        while True:
            while not self._events:
                self._event_ready.clear()
                await self._event_ready.wait()
            resp = self._events.popleft()
            try:
                await self._send(ws, {"resp": resp})
            except ConnectionClosed:
                self._events.appendleft(resp)
                self._event_ready.set()
                return

    async def _on_frame(self, ws: ServerConnection, frame: str | bytes) -> None:
        request = _request(frame)
        if request is None:
            await self._send(ws, INVALID_REQUEST)
            return
        corr_id, cmd = request
        self.commands.append(cmd)
        print(f"received command {cmd.split(' ', 1)[0]}", flush=True)
        if self.config.faults.reorder_ms:
            self._spawn(self._answer(ws, corr_id, cmd))
        else:
            await self._answer(ws, corr_id, cmd)

    async def _answer(self, ws: ServerConnection, corr_id: str, cmd: str) -> None:
        faults = self.config.faults
        resp = await self.execute(cmd)
        if cmd.split(" ", 1)[0] in faults.drop_replies:
            return
        delay_ms = faults.delay_reply_ms + self._random.uniform(0, faults.reorder_ms)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        await self._storm()
        try:
            if faults.corr_id_mixups:
                await self._send(ws, {"corrId": f"mix-{next(self._mixups)}", "resp": resp})
            await self._send(ws, {"corrId": corr_id, "resp": resp})
            if faults.corr_id_mixups:
                await self._send(ws, {"corrId": corr_id, "resp": {"type": "staleRepeat"}})
            await self._after_reply(ws)
        except ConnectionClosed:
            return
        await self._storm()

    async def _storm(self) -> None:
        for _ in range(self.config.faults.storm):
            for resp in self.noise():
                self.inject_event(resp)
        await asyncio.sleep(0)  # let the pump send some before the reply

    async def _after_reply(self, ws: ServerConnection) -> None:
        self._replies += 1
        every = self.config.faults.malformed_every
        if every and self._replies % every == 0:
            kinds: list[str | bytes] = [
                "not json {",
                "[1, 2]",
                '{"resp": 5}',
                b"\x00\xffbinary",
                '{"corrId": 7, "resp": {"type": "activeUser"}}',
            ]
            await self._send_raw(ws, kinds[(self._replies // every) % len(kinds)])

    async def _send(self, ws: ServerConnection, document: dict[str, Any]) -> None:
        await self._send_raw(ws, json.dumps(document, ensure_ascii=False))

    async def _send_raw(self, ws: ServerConnection, frame: str | bytes) -> None:
        self._log("send", frame)
        await ws.send(frame)

    # -- commands ----------------------------------------------------------------------------
    async def execute(self, cmd: str) -> dict[str, Any]:
        """The ``resp`` of one command (the brief's §5)."""
        verb, _, rest = cmd.partition(" ")
        handler = self._handlers().get(verb)
        if handler is not None:
            return handler(rest)
        if cmd.startswith("@"):
            return self._send_by_name(cmd[1:])
        return command_error(f"Failed reading: {verb}")

    def _handlers(self) -> dict[str, Callable[[str], dict[str, Any]]]:
        return {
            "/user": self._active_user,
            "/u": self._active_user,
            "/users": lambda rest: {
                "type": "usersList",
                "users": [{"user": self._user(), "unreadCount": 0}],
            },
            "/_start": lambda rest: {"type": "chatRunning"},
            "/_contacts": lambda rest: self._for_user(rest, self._contacts_list),
            "/contacts": lambda rest: self._contacts_list(""),
            "/_send": self._send_cmd,
            "/_address": lambda rest: self._for_user(rest, self._create_address),
            "/address": self._create_address,
            "/ad": self._create_address,
            "/_show_address": lambda rest: self._for_user(rest, self._show_address),
            "/sa": self._show_address,
            "/_address_settings": self._address_settings,
            "/_accept": self._accept,
            "/_reject": self._reject,
            "/_delete": self._delete,
            "/_profile": self._update_profile,
            "/_connect": self._connect,
            "/c": self._connect,
        }

    def _for_user(self, rest: str, then: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        head, _, tail = rest.partition(" ")
        if not head.isdigit():
            return command_error("Failed reading: userId")
        if int(head) != USER_ID:
            return _error("errorStore", {"type": "userNotFound", "userId": int(head)})
        return then(tail)

    def _active_user(self, rest: str) -> dict[str, Any]:
        return {"type": "activeUser", "user": self._user()}

    def _contacts_list(self, rest: str) -> dict[str, Any]:
        contacts = [self.contacts.json(cid) for cid in self.contacts.entries]
        return {"type": "contactsList", "user": self._user(), "contacts": contacts}

    def _send_cmd(self, rest: str) -> dict[str, Any]:
        match = re.fullmatch(r"@(\d+)((?: live=on| ttl=\d+)*) (json|text) (.*)", rest, re.DOTALL)
        if match is None:
            return command_error("Failed reading: /_send")
        contact_id = int(match[1])
        if match[3] == "text":
            return self._deliver(contact_id, [{"msgContent": {"type": "text", "text": match[4]}}])
        try:
            composed = json.loads(match[4])
        except ValueError:
            return command_error("Failed reading: json")
        if self.config.legacy and isinstance(composed, dict):
            composed = [composed]  # old CLIs took one object
        if not isinstance(composed, list) or not composed:
            return command_error("Failed reading: empty message list")
        return self._deliver(contact_id, composed)

    def _send_by_name(self, rest: str) -> dict[str, Any]:
        match = re.fullmatch(r"(?:'([^']+)'|(\S+)) (.*)", rest, re.DOTALL)
        if match is None:
            return command_error("Failed reading: @name")
        contact_id = self.contacts.by_name(match[1] or match[2])
        if contact_id is None:
            name = match[1] or match[2]
            return _error("errorStore", {"type": "contactNotFoundByName", "contactName": name})
        return self._deliver(contact_id, [{"msgContent": {"type": "text", "text": match[3]}}])

    def _deliver(self, contact_id: int, composed: list[Any]) -> dict[str, Any]:
        entry = self.contacts.entries.get(contact_id)
        if entry is None:
            return _error("errorStore", {"type": "contactNotFound", "contactId": contact_id})
        if not entry.get("ready", True):
            return _error(
                "error", {"type": "contactNotReady", "contact": {"contactId": contact_id}}
            )
        texts: list[str] = []
        for message in composed:
            content = message.get("msgContent") if isinstance(message, dict) else None
            if not isinstance(content, dict) or not isinstance(content.get("text"), str):
                return command_error("Failed reading: ComposedMessage")
            if len(json.dumps(content, ensure_ascii=False).encode()) > self.config.max_msg_bytes:
                return _error("errorStore", {"type": "largeMsg"})
            texts.append(content["text"])
        items = [self._snd_item(contact_id, text) for text in texts]
        for text in texts:
            self._link_send(entry, text)
        return {"type": "newChatItems", "user": self._user(), "chatItems": items}

    def _create_address(self, rest: str) -> dict[str, Any]:
        self._address = "simplex:/contact#/?v=2-7&smp=x"
        return {"type": "userContactLinkCreated", "user": self._user()} | self._link_json()

    def _show_address(self, rest: str) -> dict[str, Any]:
        if self._address is None:
            return _error("errorStore", {"type": "userContactLinkNotFound"})
        link = self._link_json() | {"addressSettings": {"businessAddress": False}}
        return {"type": "userContactLink", "user": self._user(), "contactLink": link}

    def _link_json(self) -> dict[str, Any]:
        if self.config.legacy:
            return {"connReqContact": self._address}
        full = {"connFullLink": self._address, "connShortLink": "https://smp.example/a#x"}
        return {"connLinkContact": full}

    def _address_settings(self, rest: str) -> dict[str, Any]:
        if self._address is None:
            return _error("errorStore", {"type": "userContactLinkNotFound"})
        link = self._link_json() | {"addressSettings": {"businessAddress": False}}
        return {"type": "userContactLinkUpdated", "user": self._user(), "contactLink": link}

    def _accept(self, rest: str) -> dict[str, Any]:
        request_id = int(rest.rsplit(" ", 1)[-1]) if rest.rsplit(" ", 1)[-1].isdigit() else -1
        profile = self._requests.pop(request_id, None)
        if profile is None:
            return _error("errorStore", {"type": "contactRequestNotFound"})
        contact_id = max(self.contacts.entries, default=1) + 1
        name = profile["displayName"]
        self.contacts.entries[contact_id] = {
            "contactId": contact_id,
            "localDisplayName": name,
            "profile": profile,
        }
        asyncio.get_running_loop().call_later(0.05, self.contact_connected, contact_id)
        contact = self.contacts.json(contact_id)
        return {"type": "acceptingContactRequest", "user": self._user(), "contact": contact}

    def _reject(self, rest: str) -> dict[str, Any]:
        if not rest.isdigit() or self._requests.pop(int(rest), None) is None:
            return _error("errorStore", {"type": "contactRequestNotFound"})
        return {"type": "contactRequestRejected", "user": self._user()}

    def _delete(self, rest: str) -> dict[str, Any]:
        match = re.match(r"@(\d+)", rest)
        if match is None:
            return command_error("Failed reading: /_delete")
        contact_id = int(match[1])
        if contact_id not in self.contacts.entries:
            return _error("errorStore", {"type": "contactNotFound", "contactId": contact_id})
        contact = self.contacts.json(contact_id)
        del self.contacts.entries[contact_id]
        return {"type": "contactDeleted", "user": self._user(), "contact": contact}

    def _update_profile(self, rest: str) -> dict[str, Any]:
        head, _, body = rest.partition(" ")
        try:
            profile = json.loads(body)
        except ValueError:
            return command_error("Failed reading: profile")
        if head != str(USER_ID):
            return _error("errorStore", {"type": "userNotFound", "userId": head})
        if profile.get("displayName") == self.config.bot_name:
            return {"type": "userProfileNoChange", "user": self._user()}
        self.config.bot_name = profile.get("displayName", self.config.bot_name)
        return {"type": "userProfileUpdated", "user": self._user(), "toProfile": profile}

    def _connect(self, rest: str) -> dict[str, Any]:
        if rest.strip() in ("", str(USER_ID)):
            link = {"connFullLink": "simplex:/invitation#/?v=2-7", "connShortLink": "https://i"}
            return {"type": "invitation", "user": self._user(), "connLinkInvitation": link}
        return {"type": "sentConfirmation", "user": self._user()}

    # -- items -------------------------------------------------------------------------------
    def _user(self) -> dict[str, Any]:
        name = self.config.bot_name
        return {
            "userId": USER_ID,
            "agentUserId": "1",
            "userContactId": 1,
            "localDisplayName": name,
            "profile": _local_profile(1, {"displayName": name, "peerType": "bot"}, name),
            "fullPreferences": {"timedMessages": {"allow": "yes"}},
            "activeUser": True,
            "activeOrder": 1,
            "showNtfs": True,
            "sendRcptsContacts": True,
            "sendRcptsSmallGroups": True,
            "autoAcceptMemberContacts": False,
        }

    def _snd_item(self, contact_id: int, text: str) -> dict[str, Any]:
        return self._item(contact_id, text, "directSnd", "sndMsgContent", {"type": "sndSent"})

    def _rcv_item(self, contact_id: int, text: str) -> dict[str, Any]:
        return self._item(contact_id, text, "directRcv", "rcvMsgContent", {"type": "rcvNew"})

    def _item(
        self, contact_id: int, text: str, direction: str, content: str, status: dict[str, str]
    ) -> dict[str, Any]:
        now = _now()
        meta = {
            "itemId": next(self._item_ids),
            "itemTs": now,
            "itemText": text,
            "itemStatus": status,
            "itemEdited": False,
            "userMention": False,
            "deletable": True,
            "editable": direction == "directSnd",
            "showGroupAsSender": False,
            "createdAt": now,
            "updatedAt": now,
        }
        return {
            "chatInfo": {"type": "direct", "contact": self.contacts.json(contact_id)},
            "chatItem": {
                "chatDir": {"type": direction},
                "meta": meta,
                "content": {"type": content, "msgContent": {"type": "text", "text": text}},
                "mentions": {},
                "reactions": [],
            },
        }

    # -- linking -----------------------------------------------------------------------------
    def _inbox(self, node: str | None = None) -> Path:
        assert self.config.link_dir is not None
        return self.config.link_dir / (node or self.config.node)

    def _link_send(self, entry: dict[str, Any], text: str) -> None:
        target = entry.get("link")
        if target is None or self.config.link_dir is None:
            return
        document = {"from": self.config.node, "text": text, "sentAt": _now()}
        self._sent_links += 1
        every = self.config.faults.drop_messages_every
        if every and self._sent_links % every == 0:
            self._log("link-drop", json.dumps(document, ensure_ascii=False))
            return
        self._spawn(self._link_write(str(target), document))

    async def _link_write(self, target: str, document: dict[str, Any]) -> None:
        if self.config.faults.delay_messages_ms:
            await asyncio.sleep(self.config.faults.delay_messages_ms / 1000)
        text = json.dumps(document, ensure_ascii=False)
        self._log("link-out", text)
        write_inbox_file(self._inbox(target), document)

    async def _poll_inbox(self) -> None:
        inbox = self._inbox()
        while True:
            for path in sorted(p for p in inbox.iterdir() if not p.name.startswith(".")):
                text = path.read_text(encoding="utf-8")
                path.unlink()
                self._log("link-in", text)
                try:
                    self._on_inbox(json.loads(text))
                except (ValueError, KeyError, TypeError) as exc:
                    print(f"double: bad inbox file {path.name}: {exc!r}", flush=True)
            await asyncio.sleep(_POLL_S)

    def _on_inbox(self, document: dict[str, Any]) -> None:
        control = document.get("control")
        if control == "event":
            self.inject_event(document["resp"])
        elif control == "receive":
            self.receive_text(int(document["contactId"]), *document["texts"])
        elif control == "contactRequest":
            self.contact_request(document["displayName"])
        elif control == "dropConnections":
            self._spawn(self.drop_connections())
        elif control is None:
            contact_id = self.contacts.by_link(str(document.get("from")))
            if contact_id is not None:  # SimpleX delivers nothing from strangers
                self.receive_text(contact_id, str(document["text"]))

    # -- recording ---------------------------------------------------------------------------
    def _log(self, direction: str, frame: str | bytes) -> None:
        if self._record is None:
            return
        shown = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
        line = {"t": _now(), "node": self.config.node, "dir": direction, "frame": shown}
        self._record.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._record.flush()


_inbox_seq = itertools.count()


def write_inbox_file(inbox: Path, document: dict[str, Any]) -> None:
    """Drop a message or control file in a double's inbox (atomically: temp + rename)."""
    inbox.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_inbox_seq):06d}.json"
    temp = inbox / f".{name}.tmp"
    temp.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    os.replace(temp, inbox / name)


def read_record(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _request(frame: str | bytes) -> tuple[str, str] | None:
    if not isinstance(frame, str):
        return None
    try:
        document = json.loads(frame)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    corr_id, cmd = document.get("corrId"), document.get("cmd")
    if not isinstance(corr_id, str) or not isinstance(cmd, str):
        return None
    return corr_id, cmd


# -- in-process runner ----------------------------------------------------------------------
class DoubleThread:
    """A double on its own loop in a thread: ``with DoubleThread(config) as d: d.url``."""

    def __init__(self, config: DoubleConfig | None = None, port: int = 0) -> None:
        self.double = SimplexDouble(config or DoubleConfig())
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.double.port}"

    def __enter__(self) -> DoubleThread:
        self._thread.start()
        self.call(self.double.start(self._port))
        return self

    def __exit__(self, *exc: object) -> None:
        self.call(self.double.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def call(self, value: Any) -> Any:
        """Run a coroutine, or a plain callable, on the double's loop and return its result."""
        if asyncio.iscoroutine(value):
            return asyncio.run_coroutine_threadsafe(value, self._loop).result(10)

        async def run() -> Any:
            return value()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def inject_event(self, resp: dict[str, Any]) -> None:
        self.call(lambda: self.double.inject_event(resp))

    def receive_text(self, contact_id: int, *texts: str) -> None:
        self.call(lambda: self.double.receive_text(contact_id, *texts))

    def drop_connections(self) -> None:
        self.call(self.double.drop_connections())

    @property
    def commands(self) -> list[str]:
        return list(self.double.commands)


# -- the executable -------------------------------------------------------------------------
def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="simplex-chat", description="simplex-chat test double")
    real = parser.add_argument_group("simplex-chat flags")
    real.add_argument("-d", "--database", default=str(Path.home() / ".simplex" / "simplex_v1"))
    real.add_argument("-p", "--chat-server-port", type=int)
    real.add_argument("--create-bot-display-name")
    real.add_argument("--create-bot-allow-files", action="store_true")
    real.add_argument("-y", "--yes-migrate", action="store_true")
    real.add_argument("-m", "--maintenance", action="store_true")
    for flag in ("-k", "-q", "-l", "-s"):
        real.add_argument(flag)
    real.add_argument("--files-folder")
    own = parser.add_argument_group("double flags (override the JSON config)")
    own.add_argument("--config", type=Path)
    own.add_argument("--node")
    own.add_argument("--link-dir", type=Path)
    own.add_argument("--record", type=Path)
    own.add_argument("--contacts", type=Path, help="a JSON list of contacts")
    own.add_argument("--faults", help="a JSON object of faults")
    own.add_argument("--legacy", action="store_true")
    return parser.parse_args(argv)


def load_config(args: argparse.Namespace) -> DoubleConfig:
    prefix = Path(args.database)
    path = args.config or os.environ.get(CONFIG_ENV) or Path(f"{prefix}_double.json")
    raw = json.loads(Path(path).read_text("utf-8")) if Path(path).is_file() else {}
    config = DoubleConfig.from_json(raw)
    if args.node:
        config.node = args.node
    if args.link_dir:
        config.link_dir = args.link_dir
    if args.record:
        config.record = args.record
    if args.contacts:
        config.contacts = json.loads(args.contacts.read_text("utf-8"))
    if args.faults:
        config.faults = Faults.from_json(json.loads(args.faults))
    config.legacy = config.legacy or args.legacy
    return config


def _bot_name(prefix: Path, flag: str | None) -> str | None:
    """The user's name: created on the first start only, as the real CLI does."""
    state = Path(f"{prefix}_double_state.json")
    if state.is_file():
        return str(json.loads(state.read_text("utf-8"))["displayName"])
    if flag is None:
        print("No user profiles found, it will be created now.\nDisplay name: ", end="", flush=True)
        flag = sys.stdin.readline().strip()  # /dev/null: EOF, no name, exit 1
        if not flag:
            return None
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("_chat.db", "_agent.db"):  # the real layout; the double keeps no data there
        Path(f"{prefix}{suffix}").write_bytes(b"simplex-chat test double placeholder\n")
    state.write_text(json.dumps({"displayName": flag}), encoding="utf-8")
    return flag


async def _serve_forever(config: DoubleConfig, port: int) -> None:
    double = SimplexDouble(config)
    await double.start(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    if config.faults.ignore_sigterm:
        loop.add_signal_handler(signal.SIGTERM, lambda: None)
    else:
        loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"chat server listening on 127.0.0.1:{port}", flush=True)
    await stop.wait()
    await double.stop()


def main(argv: list[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    if args.chat_server_port is None:
        print("the double serves the WebSocket API only: pass -p PORT", file=sys.stderr)
        return 2
    name = _bot_name(Path(args.database), args.create_bot_display_name)
    if name is None:
        print("no display name given", file=sys.stderr)
        return 1
    config = load_config(args)
    config.bot_name = name
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(config, args.chat_server_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
