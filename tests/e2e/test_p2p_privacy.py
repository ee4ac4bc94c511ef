"""Private data never leaves, whatever the file system or the question holds (issue 14).

Two `autorag serve` processes over linked simplex-chat doubles (``tests/p2p_world.py``),
bob's corpus salted with hostile entries: links into his private folder and out of every
search path, a link loop, a hard link, a file named ``public\\leak.md`` beside a real
``public/leak.md``, names with ``#``, ``?``, ``%2e%2e``, a newline and fullwidth dots.
Alice has private notes of her own. Every frame either double sees is audited: no private
word, no local absolute path, no secret.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autorag.dlp import scan_content
from tests.p2p_world import World, build_world

# Words only private text holds; no question below uses them.
SALARY = "Quillfeather earns nine hundred thousand crowns a year"
OUTSIDE = "The Marrowgate vault combination is kept on the third shelf"
HARD = "Thornbury settlement terms stay sealed until the hearing"
BACKSLASH = "Sablewick clause: the penalty doubles after the second breach"
MEMO = "Lanternfish memo: the night ferry timetable moves to twenty to eleven"
ALICE_PRIVATE = "Heronsbrook budget line HB-44821 covers the quiet acquisition of Tarn Mill"
PRIVATE_WORDS = ("Quillfeather", "Marrowgate", "Thornbury", "Sablewick", "Lanternfish",
                 "Heronsbrook", "HB-44821", "Tarn Mill")  # fmt: skip
SECRET_KEY = "sk-Zyx987Wvu654Tsr321Qpo098"
SECRET_MAIL = "pat.quinn@example.org"

# Public names that a file system permits and that must each keep their own id.
ODD_NAMES = {
    "q#1?.md": "Harbour pilot roster: pilots board at the outer buoy.",
    "%2e%2e/inside.md": "Percent folder note: the buoy lamps are checked weekly.",
    "new\nline.md": "Newline name note: the pier lights switch on at dusk.",
    "\uff0e\uff0e/wide.md": "Wide dots note: the breakwater is repainted each spring.",
}


def hostile_corpus(docs: Path, root: Path) -> None:
    # No 'ask' sources here: a reply waiting for an approval would only cost time.
    shutil.rmtree(docs / "review")
    public, private = docs / "public", docs / "private"
    (private / "salary.md").write_text(f"# Salary ledger\n\n{SALARY}.\n")
    (public / "salary-link.md").symlink_to(private / "salary.md")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Vault\n\n{OUTSIDE}.\n")
    (public / "outside-link.md").symlink_to(outside / "secret.md")
    (public / "outside-dir").symlink_to(outside, target_is_directory=True)
    (public / "loop").symlink_to(public, target_is_directory=True)
    (public / "self.md").symlink_to(public / "self.md")
    (private / "settlement.md").write_text(f"# Settlement\n\n{HARD}.\n")
    os.link(private / "settlement.md", public / "settlement.md")
    (docs / "public\\leak.md").write_text(f"# Leak\n\n{BACKSLASH}.\n")
    checklist = "The public leak checklist: call the harbour master."
    (public / "leak.md").write_text(f"# Leak checklist\n\n{checklist}\n")
    (public / "memo.md").write_text(f"# Memo\n\n{MEMO}.\n")
    for name, text in ODD_NAMES.items():
        path = public / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"# Note\n\n{text}\n")


def alice_notes(folder: Path) -> None:
    (folder / "plan.md").write_text(f"# Plan\n\n{ALICE_PRIVATE}.\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from build_world(
        tmp_path_factory.mktemp("p2p-privacy"), bob_files=hostile_corpus, alice_files=alice_notes
    )


def sources(reply: dict[str, Any]) -> list[str]:
    return [str(result["source"]) for result in reply.get("results", [])]


def bob_documents(world: World) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(world.bob.workspace.database_file, timeout=30) as db:
        rows = db.execute("SELECT source_id, status, error_code FROM documents").fetchall()
    return {str(source): (str(status), code) for source, status, code in rows}


def bob_search(world: World, query: str, k: int = 10) -> list[dict[str, Any]]:
    response = world.bob.call(
        "POST", "/api/workspaces/default/search", json={"query": query, "k": k}
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["hits"]
    return results


def test_links_are_indexed_under_their_real_path_or_recorded_never_as_the_link(
    world: World,
) -> None:
    documents = bob_documents(world)
    assert documents["/docs/private/salary.md"][0] == "ready"
    assert "/docs/public/salary-link.md" not in documents  # read as its target, once
    assert documents["/docs/public/outside-link.md"] == ("failed", "link_outside")
    assert documents["/docs/public/outside-dir"] == ("failed", "link_outside")
    assert documents["/docs/public/self.md"] == ("failed", "symlink_loop")
    assert not any(source.startswith("/docs/public/loop/") for source in documents)
    assert documents["/docs/public/settlement.md"] == ("failed", "hard_link")
    assert documents["/docs/private/settlement.md"] == ("failed", "hard_link")
    assert not any("secret.md" in source for source in documents)


def test_every_odd_name_has_its_own_id_and_search_returns_real_existing_paths(
    world: World,
) -> None:
    documents = bob_documents(world)
    assert documents["/docs/public%5Cleak.md"][0] == "ready"  # the backslash is data
    assert documents["/docs/public/leak.md"][0] == "ready"  # and no collision
    for name in ODD_NAMES:
        found = bob_search(world, ODD_NAMES[name].split(":")[0], k=3)
        real = str(world.docs / "public" / name)
        assert real in [hit["source"] for hit in found], (name, found)
    for query in ("Sablewick clause penalty", "public leak checklist harbour master"):
        for hit in bob_search(world, query):
            assert os.path.lexists(hit["source"]), hit  # a real path, never a made-up one
    found = bob_search(world, "Sablewick clause penalty")
    backslash = [hit for hit in found if "Sablewick" in hit["snippet"]]
    assert [h["source"] for h in backslash] == [str(world.docs / "public\\leak.md")]


def test_private_text_reached_through_links_names_or_hard_links_is_never_shared(
    world: World,
) -> None:
    for question in (
        "salary ledger crowns a year",
        "vault combination third shelf",
        "settlement terms sealed hearing",
        "clause penalty doubles second breach",
    ):
        reply = world.ask(question, k=10)
        shared = sources(reply)
        assert "/docs/public/salary-link.md" not in shared
        assert "/docs/public/leak.md" not in shared or "penalty" not in str(reply)
        assert all(not source.startswith("/docs/private/") for source in shared)
        assert not any("outside" in source for source in shared)


def test_a_shared_file_moved_into_private_after_indexing_is_not_sent(world: World) -> None:
    public, private = world.docs / "public" / "memo.md", world.docs / "private" / "memo.md"
    public.rename(private)  # bob never refreshes: his index still says /docs/public/memo.md
    try:
        reply = world.ask("night ferry timetable", k=10)
        assert "/docs/public/memo.md" not in sources(reply)
    finally:
        private.rename(public)


def test_a_question_quoting_a_private_note_does_not_leave(world: World) -> None:
    body = {"peer": "bob", "query": f"What does {ALICE_PRIVATE} mean for us?", "k": 3}
    response = world.alice.call("POST", "/api/p2p/ask", json=body)
    assert response.status_code == 403, response.text
    assert "may not leave" in response.json()["detail"]


def test_secrets_in_a_question_are_redacted_before_it_leaves(world: World) -> None:
    world.ask(f"Is {SECRET_KEY} the refund key? Mail {SECRET_MAIL} about refunds", k=3)
    sent = [f["frame"] for f in world.frames("alice") if f["dir"] in ("send", "link-out")]
    assert sent
    assert not any(SECRET_KEY in frame or SECRET_MAIL in frame for frame in sent)


def test_no_private_word_local_path_or_secret_is_in_any_frame(world: World) -> None:
    world.ask("harbour pilot roster", k=5)  # one more exchange (the test may run alone)
    frames = world.all_frames()
    assert frames
    for frame in frames:
        text = frame["frame"]
        for word in PRIVATE_WORDS:
            assert word not in text, (word, frame)
        assert str(world.root) not in text, frame
        assert SECRET_KEY not in text and SECRET_MAIL not in text, frame


def test_the_peer_is_told_a_code_not_local_rule_text(world: World) -> None:
    with sqlite3.connect(world.bob.workspace.database_file, timeout=30) as db:
        db.execute(
            "UPDATE policy_rules SET level = 'leak-/docs/private/**' WHERE glob = ?",
            ("/docs/private/**",),
        )
    try:
        reply = world.ask("harbour pilot roster", k=3)
        assert reply["diagnostic"]["code"] in ("malformed", "internal-error"), reply
        assert "/docs/" not in str(reply["diagnostic"]), reply
        assert not scan_content(str(reply)).has_match
    finally:
        with sqlite3.connect(world.bob.workspace.database_file, timeout=30) as db:
            db.execute(
                "UPDATE policy_rules SET level = 'private' WHERE glob = ?", ("/docs/private/**",)
            )
