"""The simplex-chat client, child process and start-up against the double, over real sockets."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.doubles.simplex_chat import (
    BIN_DIR,
    DoubleConfig,
    DoubleThread,
    Faults,
    double_env,
    read_record,
)
from tests.ports import free_port
from websockets.asyncio.client import connect

from autorag.config import P2PSettings
from autorag.context import open_context
from autorag.errors import InvalidInput, Unavailable
from autorag.p2p.registry import PeerRegistry
from autorag.p2p.simplex.chunks import Reassembler
from autorag.p2p.simplex.client import SimplexClient, SimplexCommandError, SimplexUnavailable
from autorag.p2p.simplex.process import simplex_command, start_simplex
from autorag.p2p.simplex.shapes import IncomingMessage
from autorag.p2p.startup import start_p2p
from autorag.workspace import init_workspace

T = TypeVar("T")


def run(scenario: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), timeout)

    return asyncio.run(bounded())


@pytest.fixture
def double() -> Iterator[DoubleThread]:
    with DoubleThread(DoubleConfig(bot_name="Docs Bot")) as running:
        yield running


async def _next_message(client: SimplexClient) -> IncomingMessage:
    return await asyncio.wait_for(client.next_message(), 15)


# -- commands and replies ------------------------------------------------------------------------
def test_user_contacts_and_send(double: DoubleThread) -> None:
    async def scenario() -> None:
        async with SimplexClient(double.url) as client:
            assert await client.active_user_id() == 1
            contacts = {c.contact_id: c for c in await client.contacts(1)}
            assert contacts[3].local_display_name == "Ann B"  # a name with a space
            assert contacts[2].has_connection and not contacts[4].has_connection  # a card
            first, second = await client.send_text(2, "one"), await client.send_text(2, "two")
            assert len(first) == 1 and second[0] > first[0]
            with pytest.raises(SimplexCommandError) as unknown:
                await client.send_text(99, "x")
            assert unknown.value.kind == "errorStore/contactNotFound"
            with pytest.raises(SimplexCommandError, match="contactNotReady"):
                await client.send_text(4, "x")
            with pytest.raises(SimplexCommandError, match="userNotFound"):
                await client.contacts(7)
            with pytest.raises(SimplexCommandError, match="commandError"):
                await client.command("/no_such_command")

    run(scenario)
    assert double.commands[:2] == ["/user", "/_contacts 1"]
    assert double.commands[2] == '/_send @2 json [{"msgContent":{"type":"text","text":"one"}}]'


def test_messages_over_the_limit_are_refused_before_sending(double: DoubleThread) -> None:
    async def scenario() -> None:
        async with SimplexClient(double.url, max_message_bytes=2000) as client:
            with pytest.raises(InvalidInput):
                await client.send_text(2, "x" * 2001)
            with pytest.raises(SimplexCommandError, match="largeMsg"):  # the CLI's own rule
                await client.command(f"/_send @2 text {'x' * 16_000}")
            ids = await client.send_message(2, "y" * 5000)  # split into parts instead
            assert len(ids) == 3

    run(scenario)


def test_replies_are_matched_by_corr_id_amid_events_reordering_and_mixups() -> None:
    faults = Faults(storm=2, reorder_ms=40, corr_id_mixups=True, seed=3)
    with DoubleThread(DoubleConfig(faults=faults)) as double:

        async def scenario() -> SimplexClient:
            async with SimplexClient(double.url) as client:
                texts = [f"message {i}" for i in range(25)]
                replies = await asyncio.gather(
                    *(client.command(f"/_send @2 text {t}") for t in texts),
                    *(client.command("/user") for _ in range(5)),
                )
                for text, resp in zip(texts, replies, strict=False):
                    item = resp["chatItems"][0]["chatItem"]
                    assert item["content"]["msgContent"]["text"] == text
                assert all(r["type"] == "activeUser" for r in replies[len(texts) :])
                return client

        client = run(scenario)
    assert client.unmatched_replies >= 30  # every mix-up and stale repeat was dropped
    assert client.events.qsize() > 0  # the storm's events were kept apart from replies
    kinds = set()
    while not client.events.empty():
        kinds.add(client.events.get_nowait()["type"])
    assert {"hostConnected", "chatError", "futureEventKind"} <= kinds


def test_events_are_read_continuously_and_buffered_until_a_client_connects(
    double: DoubleThread,
) -> None:
    def burst(kind: str, count: int) -> None:
        def inject() -> None:
            for i in range(count):
                double.double.inject_event({"type": kind, "n": i})

        double.call(inject)

    burst("chatItemsStatusesUpdated", 500)  # before any client: the double holds them

    async def scenario() -> SimplexClient:
        async with SimplexClient(double.url) as client:
            await asyncio.to_thread(burst, "hostConnected", 3000)
            assert await client.active_user_id() == 1  # replies pass the burst
            await _wait_until(lambda: client.events.qsize() == 3500)  # nobody consumed them
            return client

    client = run(scenario)
    events = [client.events.get_nowait() for _ in range(3500)]
    assert events[0] == {"type": "chatItemsStatusesUpdated", "n": 0}
    assert [e["n"] for e in events[500:]] == list(range(3000))  # in order, none lost


def test_incoming_texts_are_parsed_and_other_items_skipped(double: DoubleThread) -> None:
    async def scenario() -> list[IncomingMessage]:
        async with SimplexClient(double.url) as client:
            for resp in double.call(double.double.noise):
                double.inject_event(resp)
            double.receive_text(3, "first", "second")  # two items in one frame
            double.inject_event(_sent_item_event())  # our own sent item: no echo
            double.receive_text(2, "third")
            return [await _next_message(client) for _ in range(3)]

    messages = run(scenario)
    assert [(m.contact_id, m.contact_name, m.text) for m in messages] == [
        (3, "Ann B", "first"),
        (3, "Ann B", "second"),
        (2, "alice", "third"),
    ]
    assert all(m.item_id is not None for m in messages)


def test_legacy_new_chat_item_events_are_read() -> None:
    with DoubleThread(DoubleConfig(legacy=True)) as double:

        async def scenario() -> IncomingMessage:
            async with SimplexClient(double.url) as client:
                double.receive_text(2, "old style")
                return await _next_message(client)

        assert run(scenario).text == "old style"


def test_frames_over_one_mebibyte_arrive_within_the_raised_limit() -> None:
    big_image = "data:image/jpg;base64," + "A" * (3 * 1024 * 1024)
    contacts = [{"contactId": 2, "localDisplayName": "bob", "profile": {"image": big_image}}]
    faults = Faults(oversized_event_bytes=2 * 1024 * 1024)
    with DoubleThread(DoubleConfig(contacts=contacts, faults=faults)) as double:

        async def scenario() -> None:
            async with SimplexClient(double.url) as client:
                (bob,) = await client.contacts(1)
                assert bob.local_display_name == "bob"
                assert bob.profile.image == ""  # an avatar this large is not kept
                event = await asyncio.wait_for(client.events.get(), 10)
                assert len(event["padding"]) == 2 * 1024 * 1024

        run(scenario)


def test_malformed_frames_do_not_stop_the_reader() -> None:
    with DoubleThread(DoubleConfig(faults=Faults(malformed_every=1))) as double:

        async def scenario() -> SimplexClient:
            async with SimplexClient(double.url) as client:
                for _ in range(10):
                    assert await client.active_user_id() == 1
                double.receive_text(2, "still reading")
                assert (await _next_message(client)).text == "still reading"
                return client

        assert run(scenario).malformed_frames >= 9


def test_the_double_answers_an_undecodable_frame_without_corr_id(double: DoubleThread) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with connect(double.url, proxy=None) as ws:
            replies = []
            for frame in ('{"corrId": 5, "cmd": "/user"}', "not json", '{"cmd": "/user"}'):
                await ws.send(frame)
                replies.append(json.loads(await ws.recv()))
            await ws.send('{"corrId": "6", "cmd": "/user"}')
            replies.append(json.loads(await ws.recv()))  # the connection is still open
            return replies

    *invalid, ok = run(scenario)
    for reply in invalid:
        assert "corrId" not in reply
        assert reply["resp"]["chatError"]["errorType"]["message"] == "invalid request"
    assert ok["corrId"] == "6" and ok["resp"]["type"] == "activeUser"


def test_the_double_speaks_the_address_and_contact_request_commands(double: DoubleThread) -> None:
    async def scenario() -> None:
        async with SimplexClient(double.url) as client:
            with pytest.raises(SimplexCommandError, match="userContactLinkNotFound"):
                await client.command("/_show_address 1")
            created = await client.command("/_address 1")
            assert created["connLinkContact"]["connShortLink"]
            shown = await client.command("/_show_address 1")
            assert shown["contactLink"]["connLinkContact"] == created["connLinkContact"]
            request_id = double.call(lambda: double.double.contact_request("Dana"))
            event = await asyncio.wait_for(client.events.get(), 5)
            assert event["contactRequest"]["contactRequestId"] == request_id
            accepted = await client.command(f"/_accept {request_id}")
            assert accepted["type"] == "acceptingContactRequest"
            connected = await asyncio.wait_for(client.events.get(), 5)
            assert connected["type"] == "contactConnected"
            new_id = connected["contact"]["contactId"]
            assert new_id in {c.contact_id for c in await client.contacts(1)}
            deleted = await client.command(f"/_delete @{new_id} full")
            assert deleted["type"] == "contactDeleted"
            assert (await client.command("@'Ann B' hi"))["type"] == "newChatItems"

    run(scenario)


def test_a_dropped_connection_fails_pending_commands_and_reconnects() -> None:
    with DoubleThread(DoubleConfig(faults=Faults(drop_replies=["/_contacts"]))) as double:

        async def scenario() -> None:
            async with SimplexClient(double.url, command_timeout=30) as client:
                pending = asyncio.create_task(client.contacts(1))  # never answered
                await asyncio.sleep(0.2)
                started = time.monotonic()
                await asyncio.to_thread(double.drop_connections)
                with pytest.raises(SimplexUnavailable, match="closed"):
                    await pending
                assert time.monotonic() - started < 20  # at once, not at the 30 s timeout
                await client.wait_connected(10)
                assert await client.active_user_id() == 1

        run(scenario)


def test_an_unanswered_command_times_out() -> None:
    with DoubleThread(DoubleConfig(faults=Faults(drop_replies=["/user"]))) as double:

        async def scenario() -> None:
            async with SimplexClient(double.url, command_timeout=0.3) as client:
                with pytest.raises(SimplexUnavailable, match="did not answer /user"):
                    await client.active_user_id()
                assert len(await client.contacts(1)) == 3  # the connection is fine

        run(scenario)


def test_connecting_to_nothing_is_unavailable() -> None:
    async def scenario() -> None:
        with pytest.raises(SimplexUnavailable, match="cannot reach"):
            await SimplexClient(f"ws://127.0.0.1:{free_port()}").connect(timeout=0.5)

    run(scenario)


# -- two linked doubles, each its own process -----------------------------------------------------
def _start_double(
    tmp: Path, node: str, config: dict[str, Any]
) -> tuple[subprocess.Popen[bytes], int]:
    prefix = tmp / node / "simplex"
    prefix.parent.mkdir(parents=True)
    Path(f"{prefix}_double.json").write_text(json.dumps({"node": node, **config}))
    port = free_port()
    command = simplex_command(str(BIN_DIR / "simplex-chat"), prefix, port, f"{node} bot")
    child = subprocess.Popen(
        command, env=double_env(), stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
        assert child.poll() is None and time.monotonic() < deadline, "the double did not start"
        time.sleep(0.05)
    return child, port


@pytest.fixture
def linked(tmp_path: Path) -> Iterator[tuple[int, int, Path]]:
    link = tmp_path / "link"
    alice_contacts = [{"contactId": 2, "localDisplayName": "bob", "link": "bob"}]
    bob_contacts = [{"contactId": 7, "localDisplayName": "alice", "link": "alice"}]
    records = tmp_path / "records"
    records.mkdir()
    children = []
    try:
        for node, contacts in (("alice", alice_contacts), ("bob", bob_contacts)):
            config = {"linkDir": str(link), "contacts": contacts}
            record = {"record": str(records / f"{node}.jsonl")}
            children.append(_start_double(tmp_path, node, config | record))
        yield children[0][1], children[1][1], records
    finally:
        for child, _ in children:
            child.terminate()
            child.wait(10)


def test_two_linked_doubles_deliver_a_message_across_processes(
    linked: tuple[int, int, Path],
) -> None:
    alice_port, bob_port, records = linked
    payload = "".join(f"paragraph {i}: {'long text ' * 20}\n" for i in range(150))

    async def scenario() -> list[IncomingMessage]:
        alice = SimplexClient(f"ws://127.0.0.1:{alice_port}", max_message_bytes=12_000)
        bob = SimplexClient(f"ws://127.0.0.1:{bob_port}")
        async with alice, bob:
            await alice.send_text(2, "hello bob")
            await alice.send_message(2, payload)
            received = [await _next_message(bob)]
            reassembler, whole = Reassembler(), None
            while whole is None:
                part = await _next_message(bob)
                whole = reassembler.feed(part.contact_id, part.text)
            assert whole == payload
            return received

    (hello,) = run(scenario)
    assert (hello.contact_id, hello.contact_name, hello.text) == (7, "alice", "hello bob")
    alice_frames = read_record(records / "alice.jsonl")
    bob_frames = read_record(records / "bob.jsonl")
    assert {f["dir"] for f in alice_frames} >= {"recv", "send", "link-out"}
    assert any("hello bob" in f["frame"] for f in bob_frames if f["dir"] == "link-in")


# -- the child process -------------------------------------------------------------------------
@pytest.fixture
def double_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in double_env().items():
        if os.environ.get(key) != value:
            monkeypatch.setenv(key, value)


@pytest.mark.usefixtures("double_on_path")
def test_start_simplex_runs_the_binary_on_path_and_stops_it(tmp_path: Path) -> None:
    prefix, port = tmp_path / "p2p" / "simplex", free_port()

    async def scenario() -> tuple[list[str], int | None]:
        process = await start_simplex(
            binary="simplex-chat",
            db_prefix=prefix,
            port=port,
            bot_name="AutoRAG Test",
            log_file=tmp_path / "p2p" / "simplex-chat.log",
        )
        assert process is not None and process.url == f"ws://127.0.0.1:{port}"
        async with SimplexClient(process.url) as client:
            user = (await client.command("/user"))["user"]
            assert user["localDisplayName"] == "AutoRAG Test"  # --create-bot-display-name
        return process.command, process.stop()

    command, code = run(scenario)
    assert command == [
        str(BIN_DIR / "simplex-chat"),
        *("-d", str(prefix), "-p", str(port)),
        *("--create-bot-display-name", "AutoRAG Test", "-y"),
    ]
    assert code is not None and code == 0
    assert Path(f"{prefix}_chat.db").exists() and Path(f"{prefix}_agent.db").exists()
    assert socket.socket().connect_ex(("127.0.0.1", port)) != 0  # the port is closed
    log = (tmp_path / "p2p" / "simplex-chat.log").read_text()
    assert "client connected" in log
    assert (tmp_path / "p2p" / "simplex-chat.log").stat().st_mode & 0o777 == 0o600


@pytest.mark.usefixtures("double_on_path")
def test_a_child_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    prefix = tmp_path / "simplex"
    Path(f"{prefix}_double.json").write_text('{"faults": {"ignoreSigterm": true}}')

    async def scenario() -> int | None:
        process = await start_simplex(
            binary="simplex-chat",
            db_prefix=prefix,
            port=free_port(),
            bot_name="x",
            log_file=tmp_path / "log",
        )
        assert process is not None
        return process.stop(timeout=1)

    assert run(scenario) == -9


def test_a_missing_binary_is_reported_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> list[object]:
        return [
            await start_simplex(
                binary="simplex-chat-missing-for-test",
                db_prefix=tmp_path / "simplex",
                port=free_port(),
                bot_name="x",
                log_file=tmp_path / "log",
            )
            for _ in range(2)
        ]

    assert run(scenario) == [None, None]
    err = capsys.readouterr().err
    assert err.count("simplex-chat-missing-for-test") == 1 and "not found on PATH" in err


def test_a_child_that_exits_or_a_taken_port_is_unavailable(tmp_path: Path) -> None:
    failing = tmp_path / "failing-simplex"
    failing.write_text("#!/bin/sh\necho 'database is locked'\nexit 3\n")
    failing.chmod(0o755)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()

    async def start(binary: Path, port: int) -> None:
        await start_simplex(
            binary=str(binary),
            db_prefix=tmp_path / "s",
            port=port,
            bot_name="x",
            log_file=tmp_path / "log",
        )

    with pytest.raises(Unavailable, match=r"(?s)exited with code 3.*database is locked"):
        run(lambda: start(failing, free_port()))
    with pytest.raises(Unavailable, match="in use"):
        run(lambda: start(failing, taken.getsockname()[1]))
    taken.close()


# -- start-up ----------------------------------------------------------------------------------
@pytest.mark.usefixtures("double_on_path")
def test_start_p2p_merges_profiles_reports_strangers_and_warns_when_not_ready(
    tmp_path: Path,
) -> None:
    workspace = init_workspace(tmp_path / "ws")
    registry = PeerRegistry(workspace.simplex_peers_file)
    registry.add("ann", 3, "colleague")
    registry.add("gone", 9)
    contacts = [
        {"contactId": 3, "localDisplayName": "Ann B", "profile": {"fullName": "Ann Brown"}},
        {"contactId": 5, "localDisplayName": "Eve\x1b[31m"},  # a hostile name
    ]
    Path(f"{workspace.simplex_db_prefix}_double.json").parent.mkdir(parents=True, exist_ok=True)
    Path(f"{workspace.simplex_db_prefix}_double.json").write_text(
        json.dumps({"contacts": contacts})
    )
    settings = P2PSettings(enabled=True, ws_port=free_port(), bot_name="AutoRAG")
    app = open_context(workspace)
    lines: list[str] = []

    async def scenario() -> None:
        runtime = await start_p2p(app, settings, report=lines.append)
        assert runtime is not None and runtime.user_id == 1
        try:
            assert await runtime.client.active_user_id() == 1
        finally:
            await runtime.stop()
        assert not runtime.process.running

    run(scenario)
    app.close()
    ann = registry.get("ann")
    assert ann is not None and ann.profile.full_name == "Ann Brown" and ann.profile_synced_at
    assert [p.name for p in registry.peers()] == ["ann", "gone"]  # Eve was not added
    stranger = next(line for line in lines if "contact 5" in line)
    assert "not a trusted peer" in stranger and "\x1b" not in stranger
    assert any("'gone'" in line and "not among" in line for line in lines)
    warning = next(line for line in lines if "MinSync" in line)
    assert "configured, not ready" in warning
    assert "autorag refresh --method minsync" in warning


def test_start_p2p_is_off_without_the_binary_or_when_disabled(tmp_path: Path) -> None:
    workspace = init_workspace(tmp_path / "ws")
    app = open_context(workspace)
    lines: list[str] = []
    missing = P2PSettings(enabled=True, simplex_binary=str(tmp_path / "no-simplex"))

    async def scenario() -> None:
        assert await start_p2p(app, P2PSettings(), report=lines.append) is None
        assert await start_p2p(app, missing, report=lines.append) is None

    run(scenario)
    app.close()
    assert lines == []  # the missing binary went to stderr once, from process.py


def _sent_item_event() -> dict[str, Any]:
    item = {
        "chatInfo": {"type": "direct", "contact": {"contactId": 2, "localDisplayName": "alice"}},
        "chatItem": {
            "chatDir": {"type": "directSnd"},
            "meta": {"itemId": 1},
            "content": {"type": "sndMsgContent", "msgContent": {"type": "text", "text": "echo"}},
        },
    }
    return {"type": "newChatItems", "chatItems": [item]}


async def _wait_until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)
