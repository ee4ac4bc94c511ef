"""Peer queries end to end: two `autorag serve` processes over linked simplex-chat doubles.

The world (``tests/p2p_world.py``) is built once for the module: alice and bob, each an
`autorag serve` subprocess with P2P on and its own simplex-chat double as a child
process, the doubles linked through one folder and recording every frame. Alice asks bob
through her server's API; bob's corpus has shared, ask and private folders and a shared
document with secrets in it. On bob's side the double mixes corrIds up, storms events
around replies, reorders replies and sends malformed frames, all the time.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from autorag.dlp import scan_content
from autorag.p2p.simplex.chunks import (
    PART_PREFIX,
    ChunkError,
    Reassembler,
    encoded_size,
    parse_part,
)
from autorag.p2p.wire import MAX_MESSAGE_CHARS, NO_VERIFIED_RESULTS
from tests.p2p_world import (
    ALICE_BOB,
    API_KEY,
    BOB_EVE,
    EMAIL,
    PRIVATE_MARKERS,
    PUBLIC_DOCS,
    REVIEW_MARKER,
    World,
    build_world,
    finish,
    wait_for,
)

REFUND_QUESTION = "How long is the refund window?"
PRIVATE_QUESTION = "merger acquisition timetable"  # only the private documents match
AUDIT_QUESTION = "quarterly vendor audit findings"  # the review document, then vendors.md
ALMANAC_QUESTION = "tide almanac harbour moonrise"
TTL_VARIABLE = "AUTORAG_P2P__APPROVAL_TTL_MINUTES"
DEFAULT_MAX_MESSAGE_BYTES = 12_000


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from build_world(tmp_path_factory.mktemp("p2p"))


@pytest.fixture(scope="module")
def asking() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(4) as pool:
        yield pool


def code(reply: dict[str, Any]) -> str | None:
    diagnostic = reply.get("diagnostic")
    return None if diagnostic is None else str(diagnostic["code"])


def sources(reply: dict[str, Any]) -> list[str]:
    return [str(result["source"]) for result in reply.get("results", [])]


def link_messages(world: World, node: str, direction: str) -> list[dict[str, Any]]:
    """The link documents (``{"from", "text", "sentAt"}``) a double wrote or read."""
    return [json.loads(f["frame"]) for f in world.frames(node) if f["dir"] == direction]


def replies_to_alice(world: World) -> list[dict[str, Any]]:
    """Every protocol reply alice's double received from bob, in order (whole messages)."""
    parts = Reassembler()
    out = []
    for document in link_messages(world, "alice", "link-in"):
        whole = parts.feed(document["from"], document["text"])
        if whole is not None and whole.startswith("{"):
            message = json.loads(whole)
            if message.get("type") == "reply":
                out.append(message)
    return out


def peer_texts(world: World) -> list[str]:
    """Every whole message that went from one peer to another (parts reassembled): what
    each double sent over the link and what it read from it."""
    parts = Reassembler(max_total_bytes=4 * MAX_MESSAGE_CHARS)
    texts = []
    for node in ("alice", "bob"):
        for direction in ("link-out", "link-in"):
            for document in link_messages(world, node, direction):
                sender = (node, direction, document["from"])
                try:
                    whole = parts.feed(sender, document["text"])
                except ChunkError:  # a hostile part the test sent: scanned as it is
                    whole = document["text"]
                if whole is not None:
                    texts.append(whole)
    assert parts.pending == 0, "a message sent in parts never arrived whole"
    return texts


def ensure_bob_ttl(world: World, minutes: str | None) -> None:
    """Bob's approval lifetime as wanted (restarting his server when it is not)."""
    if world.bob.env.get(TTL_VARIABLE) == minutes:
        return
    if minutes is None:
        world.bob.env.pop(TTL_VARIABLE)
        world.bob.restart()
    else:
        world.bob.restart(**{TTL_VARIABLE: minutes})


def pending_request(world: World, question: str) -> dict[str, Any]:
    """Bob's pending approval request for ``question``, once it exists (bob's API)."""

    def find() -> dict[str, Any] | None:
        response = world.bob.call("GET", "/api/p2p/requests")
        assert response.status_code == 200, response.text
        listed: list[dict[str, Any]] = response.json()
        return next(
            (r for r in listed if r["query"] == question and r["status"] == "pending"), None
        )

    return wait_for(find, 30, f"an approval request for {question!r}")


def requests_closed(world: World, request_id: str) -> bool:
    response = world.bob.call("GET", "/api/p2p/requests")
    return all(r["id"] != request_id for r in response.json())


# -- 1. share ----------------------------------------------------------------------------------
def test_shared_results_arrive_as_canonical_ids_with_an_answer_and_secrets_redacted(
    world: World,
) -> None:
    reply = world.ask(REFUND_QUESTION, k=3)
    assert code(reply) is None, reply
    assert reply["final"] is True
    found = sources(reply)
    assert "/docs/public/refunds.md" in found, found
    assert all(source.startswith("/docs/public/") for source in found), found
    shown = json.dumps(reply)
    assert str(world.docs) not in shown and str(world.root) not in shown  # no local path
    assert re.search(r"\[[1-3]\]", reply["answer"]), reply["answer"]
    assert "refund window" in reply["answer"]
    refunds = reply["results"][found.index("/docs/public/refunds.md")]
    assert refunds["title"] == "Refunds for lighthouse kits"
    assert refunds["snippet"].count("[REDACTED]") == 2, refunds["snippet"]
    assert EMAIL not in shown and API_KEY not in shown
    assert not scan_content(shown).has_match


# -- 2. private only ---------------------------------------------------------------------------
def test_a_query_matching_only_private_documents_is_policy_denied(world: World) -> None:
    reply = world.ask(PRIVATE_QUESTION, k=3)
    assert code(reply) == "policy-denied", reply
    assert reply["results"] == [] and "answer" not in reply
    # The private documents were found (the gate considered them) and withheld.
    seen = world.bob.seen_counts()
    assert {"/docs/private/merger-a.md", "/docs/private/merger-b.md"} <= set(seen), seen
    for frame in world.all_frames():
        assert "/docs/private/" not in frame["frame"]
        for marker in PRIVATE_MARKERS:
            assert marker not in frame["frame"], frame


# -- 3. nothing found --------------------------------------------------------------------------
def test_nothing_found_is_no_verified_results_with_the_seed_answer(world: World) -> None:
    # The vector leg always returns neighbours (shared almanac pages here); none of them
    # answers, so the remote session ends without structured results.
    reply = world.ask("astronomy observatory telescope", k=3)
    assert reply["results"] == [], reply
    assert reply["answer"] == "No verified results were found for this query."
    assert reply["diagnostic"]["code"] == "no-verified-results"
    assert reply["diagnostic"]["severity"] == "info"

    # Nothing at all found: a filter no document passes (bob has no PDF).
    world.probe.send_json(
        {"protocol": "autorag-p2p", "v": 1, "type": "query", "id": "pdf-only",
         "text": REFUND_QUESTION, "filters": {"documentTypes": ["pdf"]}}
    )  # fmt: skip
    empty = world.probe.next_reply()
    assert empty["id"] == "pdf-only" and empty.get("results", []) == []
    assert empty["answer"] == NO_VERIFIED_RESULTS
    assert (code(empty), empty["diagnostic"]["severity"]) == ("no-verified-results", "info")


# -- 4. ask: approval granted, denied, expired -------------------------------------------------
def test_an_ask_source_is_sent_once_the_owner_approves(
    world: World, asking: ThreadPoolExecutor
) -> None:
    ensure_bob_ttl(world, None)
    final: Future[Any] = asking.submit(world.ask, AUDIT_QUESTION, k=2)
    request = pending_request(world, AUDIT_QUESTION)
    assert request["peer"] == "alice"
    assert [s["source"] for s in request["sources"]] == ["/docs/review/audit.md"]
    listed = world.bob.cli_json("p2p", "requests")
    assert request["id"] in {r["id"] for r in listed}
    assert not final.done()  # alice still waits: only the interim reply reached her

    approved = world.bob.cli("p2p", "approve", request["id"])
    assert f"approved request {request['id']} from alice" in approved.stdout
    reply = final.result(timeout=60)
    assert code(reply) is None, reply
    assert sorted(sources(reply)) == ["/docs/public/vendors.md", "/docs/review/audit.md"]
    assert REVIEW_MARKER in json.dumps(reply["results"])
    assert re.search(r"\[[12]\]", reply["answer"])

    # Alice got approval-pending (not final) first, then the answer, with the same id.
    exchanged = [r for r in replies_to_alice(world) if r.get("id") == reply["id"]]
    assert [(r.get("final", True), code(r)) for r in exchanged] == [
        (False, "approval-pending"),
        (True, None),
    ]
    wait_for(lambda: requests_closed(world, request["id"]), 10, "the request to be closed")


def test_a_denied_ask_source_stays_and_the_rest_is_sent(
    world: World, asking: ThreadPoolExecutor
) -> None:
    ensure_bob_ttl(world, None)
    # k=2: the review document and a shared one; k=1: the review document alone.
    alone_question = f"{AUDIT_QUESTION}?"
    with_shared: Future[Any] = asking.submit(world.ask, AUDIT_QUESTION, k=2)
    alone: Future[Any] = asking.submit(world.ask, alone_question, k=1)
    requests = [pending_request(world, q)["id"] for q in (AUDIT_QUESTION, alone_question)]
    finish([world.bob.cli_start("p2p", "deny", request_id) for request_id in requests])

    reply = with_shared.result(timeout=60)
    assert code(reply) is None, reply
    assert sources(reply) == ["/docs/public/vendors.md"]
    assert REVIEW_MARKER not in json.dumps(reply)
    reply = alone.result(timeout=60)
    assert code(reply) == "approval-denied" and reply["results"] == [], reply
    assert REVIEW_MARKER not in json.dumps(reply)
    # Answered (and closed): nothing is left to decide.
    wait_for(lambda: requests_closed(world, requests[1]), 10, "the request to be closed")
    late = world.bob.call("POST", f"/api/p2p/requests/{requests[1]}/approve")
    assert late.status_code == 404, late.text


def test_an_approval_nobody_gives_expires_into_a_timeout(world: World) -> None:
    ensure_bob_ttl(world, "0.02")  # 1.2 s
    reply = world.ask(AUDIT_QUESTION, k=1, timeout_s=60)
    assert code(reply) == "timeout", reply
    assert reply["diagnostic"]["message"] == "the approval expired"
    assert reply["results"] == [] and REVIEW_MARKER not in json.dumps(reply)
    requests = world.bob.workspace.p2p_dir / "requests"
    wait_for(lambda: not list(requests.glob("*.json")), 10, "the expired request to be closed")


def test_a_peer_that_never_answers_times_out_on_the_asking_side(world: World) -> None:
    reply = world.ask(REFUND_QUESTION, peer="ghost", timeout_s=1)
    assert code(reply) == "timeout", reply
    inbox = world.link_dir / "ghost"
    delivered = [json.loads(p.read_text("utf-8")) for p in inbox.glob("*.json")]
    assert any(json.loads(d["text"])["text"] == REFUND_QUESTION for d in delivered)


# -- 5. untrusted contact ----------------------------------------------------------------------
def test_an_untrusted_contact_gets_not_trusted_and_nothing_is_searched(world: World) -> None:
    before = world.bob.seen_counts()
    world.eve.send_json(
        {"protocol": "autorag-p2p", "v": 1, "type": "query", "id": "eve-1",
         "text": REFUND_QUESTION, "k": 3}
    )  # fmt: skip
    reply = world.eve.next_reply()
    assert reply["id"] == "eve-1" and code(reply) == "not-trusted", reply
    assert reply.get("results", []) == [] and "answer" not in reply
    assert world.bob.seen_counts() == before  # the egress gate never saw a result

    # The same query from a trusted contact is searched (and counted): the check bites.
    world.probe.send_json(
        {"protocol": "autorag-p2p", "v": 1, "type": "query", "id": "probe-1",
         "text": REFUND_QUESTION, "k": 3}
    )  # fmt: skip
    trusted = world.probe.next_reply()
    assert trusted["id"] == "probe-1" and "/docs/public/refunds.md" in sources(trusted)
    after = world.bob.seen_counts()
    assert after["/docs/public/refunds.md"] == before.get("/docs/public/refunds.md", 0) + 1


# -- 6. hostile messages -----------------------------------------------------------------------
def _query(**fields: Any) -> str:
    return json.dumps({"protocol": "autorag-p2p", "v": 1, "type": "query", **fields})


HOSTILE: list[tuple[str, str, str, str | None, str]] = [
    # (case, text sent, code, reply id, words in the message)
    ("cut JSON", '{"protocol": "autorag-p2p", "v": 1, "type": "query", "id": "cut", "text": "re',
     "malformed", None, "not JSON"),
    ("deep nesting", '{"protocol": "autorag-p2p", "x": ' + "[" * 100_000,
     "malformed", None, "not JSON"),
    ("wrong version", _query(v=2, id="v2", text=REFUND_QUESTION),
     "unsupported-version", "v2", "v1"),
    ("text too long", _query(id="long", text="refund " * 400),
     "malformed", "long", "text"),
    ("k out of bounds", _query(id="k50", text=REFUND_QUESTION, k=50),
     "malformed", "k50", "k"),
    ("unknown field", _query(id="extra", text=REFUND_QUESTION, sql="DROP TABLE"),
     "malformed", "extra", "sql"),
    ("hostile id", _query(id="../../etc/passwd", text=REFUND_QUESTION),
     "malformed", None, "id"),
    ("unknown type", json.dumps({"protocol": "autorag-p2p", "v": 1, "type": "gossip", "id": "g1"}),
     "malformed", "g1", "unknown message type"),
    ("over the message size", _query(id="huge", text="a" * (MAX_MESSAGE_CHARS + 10)),
     "malformed", None, f"{MAX_MESSAGE_CHARS}"),
    ("too many parts", f"{PART_PREFIX}abc 1/999\n{{", "malformed", None, "parts"),
]  # fmt: skip


def test_hostile_messages_get_error_replies_and_the_server_keeps_serving(world: World) -> None:
    for case, text, expected, reply_id, words in HOSTILE:
        world.probe.send(text)
        reply = world.probe.next_reply()
        assert code(reply) == expected, (case, reply)
        assert reply.get("id") == reply_id, (case, reply)
        assert words in reply["diagnostic"]["message"], (case, reply)
        assert reply.get("results", []) == [] and "answer" not in reply, case
    # Ignored without a word: people chatting with the bot, and replies nobody waits for.
    world.probe.send("hello, is anyone there?")
    world.probe.send(json.dumps({"protocol": "autorag-p2p", "v": 1, "type": "reply", "id": "x"}))
    world.probe.send(_query(id="after", text=REFUND_QUESTION, k=1))
    good = world.probe.next_reply()  # only this one is answered
    assert good["id"] == "after" and len(good["results"]) == 1, good

    assert world.bob.process is not None and world.bob.process.poll() is None
    assert world.bob.call("GET", "/healthz").status_code == 200
    reply = world.ask(REFUND_QUESTION, k=3)
    assert "/docs/public/refunds.md" in sources(reply), reply


# -- 7. oversized replies ----------------------------------------------------------------------
def test_an_oversized_reply_is_split_into_parts_and_reassembled(world: World) -> None:
    reply = world.ask(ALMANAC_QUESTION, k=20)
    assert code(reply) is None, reply
    assert len(reply["results"]) == 20
    assert all(s.startswith("/docs/public/almanac-") for s in sources(reply))
    assert encoded_size(json.dumps(reply)) > DEFAULT_MAX_MESSAGE_BYTES

    parts = [
        part
        for document in link_messages(world, "bob", "link-out")
        if (part := parse_part(document["text"])) is not None
    ]
    by_message: dict[str, set[int]] = {}
    for part in parts:
        by_message.setdefault(part.message_id, set()).add(part.index)
    carrying = [p for p in parts if p.index == 1 and f'"id":"{reply["id"]}"' in p.body]
    assert len(carrying) == 1, "the reply did not go as parts"
    message_id, total = carrying[0].message_id, carrying[0].total
    assert total >= 2 and by_message[message_id] == set(range(1, total + 1))
    for document in link_messages(world, "bob", "link-out"):
        assert encoded_size(document["text"]) <= DEFAULT_MAX_MESSAGE_BYTES


# -- 8. corrId mix-ups and interleaved events ---------------------------------------------------
def test_corr_id_mixups_and_event_storms_do_not_disturb_the_exchange(
    world: World, asking: ThreadPoolExecutor
) -> None:
    questions = [(REFUND_QUESTION, 3), (ALMANAC_QUESTION, 5), (PRIVATE_QUESTION, 3)]
    futures = [asking.submit(world.ask, q, k=k) for q, k in questions]
    refund, almanac, private = (f.result(timeout=90) for f in futures)
    assert "/docs/public/refunds.md" in sources(refund)
    assert len(almanac["results"]) == 5 and code(private) == "policy-denied"
    assert len({refund["id"], almanac["id"], private["id"]}) == 3

    # The faults did happen on bob's side, all along.
    sent = [f["frame"] for f in world.frames("bob") if f["dir"] == "send"]
    assert any('"corrId": "mix-' in frame for frame in sent)
    assert any("staleRepeat" in frame for frame in sent)
    assert any("hostConnected" in frame for frame in sent)  # events amid the replies
    assert "[1, 2]" in sent  # one of its malformed frames
    assert "dropped a reply for unknown corrId" in world.bob.stderr()


# -- 9. nothing private ever crossed -----------------------------------------------------------
def test_no_private_source_text_local_path_or_secret_is_in_any_frame(world: World) -> None:
    # The secrets in the shared document are ones DLP's built-ins find.
    found = {m.type for m in scan_content(PUBLIC_DOCS["refunds.md"]).matches}
    assert {"email", "api_key"} <= found
    # One more exchange that carries the shared document (the test may run alone).
    assert "/docs/public/refunds.md" in sources(world.ask(REFUND_QUESTION, k=3))
    frames = world.all_frames()
    assert {f["dir"] for f in frames} >= {"send", "recv", "link-out", "link-in"}
    for frame in frames:
        text = frame["frame"]
        assert "/docs/private/" not in text, frame
        for marker in PRIVATE_MARKERS:
            assert marker not in text, frame
        assert str(world.root) not in text, frame  # no local path of either side
    texts = peer_texts(world)
    assert any("[REDACTED]" in text for text in texts)  # DLP did redact on the way out
    for text in texts:
        assert not scan_content(text).has_match, text[:500]


# -- 10. the registry --------------------------------------------------------------------------
def test_startup_merges_profiles_and_reports_contacts_nobody_trusts(world: World) -> None:
    listed = finish(
        [
            world.alice.cli_start("p2p", "peers", "--json"),
            world.alice.cli_start("p2p", "peers", "--rank", "tide almanac", "--json"),
            world.bob.cli_start("p2p", "peers", "--json"),
        ]
    )
    peers = {p["name"]: p for p in json.loads(listed[0])}
    bob = peers["bob"]
    assert bob["contactId"] == ALICE_BOB and bob["description"] == "tides and refunds"
    assert bob["profileSyncedAt"] is not None
    assert bob["profile"]["displayName"] == "Bob's AutoRAG"
    assert bob["profile"]["shortDescr"] == "lighthouse kits and tides"
    ranked = json.loads(listed[1])
    assert ranked[0]["name"] == "bob" and ranked[0]["score"] > ranked[1]["score"]

    trusted = json.loads(listed[2])
    assert {p["name"] for p in trusted} == {"alice", "probe"}
    assert BOB_EVE not in {p["contactId"] for p in trusted}  # reported, never added
    assert all(p["profileSyncedAt"] is not None for p in trusted)
    assert f"SimpleX contact {BOB_EVE} ('eve') is not a trusted peer" in world.bob.stderr()
    registry = world.bob.workspace.simplex_peers_file
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600

    # Each serve ran its own simplex-chat (the double) on its port, with its database
    # prefix and bot name.
    for instance, name in ((world.alice, "Alice's AutoRAG"), (world.bob, "Bob's AutoRAG")):
        log = instance.workspace.simplex_log_file.read_text("utf-8")
        assert f"chat server listening on 127.0.0.1:{instance.ws_port}" in log
        state = Path(f"{instance.workspace.simplex_db_prefix}_double_state.json")
        assert json.loads(state.read_text("utf-8")) == {"displayName": name}
