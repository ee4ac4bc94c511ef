"""Two AutoRAG instances talking over SimpleX doubles, each a real `autorag serve` process.

Alice and Bob each have a workspace, an admin, and an `autorag serve` started as a
subprocess with P2P on; each serve starts its own ``simplex-chat`` (the test double,
first on PATH) as a child process. The two doubles share one link folder, so a message
alice's server sends to her contact "bob" arrives at bob's double as a message from its
contact "alice", and the other way round. Every frame either double sees is recorded.

Besides the two servers, the test plays contacts of bob's double itself by writing to
and reading from the link folder: ``probe`` (trusted by bob) and ``eve`` (a SimpleX
contact bob does not trust). Alice's double also has a contact ``ghost`` that nobody
answers for.

Bob's corpus lives under a search path named ``docs``: ``/docs/public/**`` is shared,
``/docs/review/**`` needs the owner's approval, ``/docs/private/**`` is private. One
shared document holds an e-mail address and an API key that DLP must redact.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx

from autorag.auth.service import create_user
from autorag.context import open_context, open_policy
from autorag.ingest.minsync import refresh
from autorag.p2p.registry import PeerRegistry
from autorag.p2p.simplex.chunks import Reassembler
from autorag.workspace import Workspace, init_workspace
from tests.doubles.simplex_chat import double_env, write_inbox_file
from tests.ports import free_port

T = TypeVar("T")
AUTORAG = [sys.executable, "-m", "autorag"]
ADMIN = "owner"
PASSWORD = "a long enough password"
START_TIMEOUT_S = 90.0
HTTP_TIMEOUT = httpx.Timeout(120.0)

# -- bob's corpus ------------------------------------------------------------------------------
EMAIL = "jane.doe@example.com"
API_KEY = "sk-Abc123Def456Ghi789Jkl012"
SECRETS = (EMAIL, API_KEY)
# Words of the private documents that no query uses: none may ever cross the wire.
PRIVATE_MARKERS = ("Nightjar", "Kestrel", "Ostrava", "forty-one million")
REVIEW_MARKER = "Brightwater"

PUBLIC_DOCS = {
    "refunds.md": (
        "# Refunds for lighthouse kits\n\n"
        "A lighthouse kit may be returned for a refund within thirty days of delivery. "
        "The refund window starts on the day the parcel is signed for. "
        f"Refund questions go to {EMAIL} during office hours. "
        f"The payment gateway key {API_KEY} is rotated every month.\n"
    ),
    "returns-faq.md": (
        "# Returns FAQ\n\n"
        "The refund window for damaged kits is sixty days from delivery. "
        "Refunds are paid back to the original card within five working days.\n"
    ),
    "shipping.md": (
        "# Shipping\n\n"
        "Every kit ships in one parcel by courier. "
        "A refund also covers the shipping cost when the parcel arrives damaged.\n"
    ),
    "vendors.md": (
        "# Vendors\n\n"
        "Our vendor for lamp glass is listed in the catalogue; vendor contracts are "
        "signed for two years at a time, and every vendor is audited once a year.\n"
    ),
}
ALMANAC_DOCS = 8  # long shared documents: a k=20 reply is far over one SimpleX message
REVIEW_DOCS = {
    "audit.md": (
        "# Quarterly vendor audit\n\n"
        f"The quarterly vendor audit found three late invoices from {REVIEW_MARKER} Supplies. "
        "The auditors recommend holding the final payment until the invoices are corrected.\n"
    ),
}
PRIVATE_DOCS = {
    "merger-a.md": (
        "# Project Nightjar\n\n"
        "The merger with Kestrel Holdings closes in March. "
        "The acquisition price is forty-one million for all shares.\n"
    ),
    "merger-b.md": (
        "# Board notes on the merger\n\n"
        "The board approved the merger timetable; the Nightjar diligence found no "
        "blocking acquisition issues.\n"
    ),
    "merger-c.md": (
        "# After the acquisition\n\n"
        "After the merger and acquisition the Kestrel teams move to the Ostrava office.\n"
    ),
}
POLICIES = {"/docs/public/**": "share", "/docs/review/**": "ask", "/docs/private/**": "private"}

# SimpleX contact ids, as each double numbers its contacts.
ALICE_BOB, ALICE_GHOST = 2, 3  # in alice's double
BOB_ALICE, BOB_EVE, BOB_PROBE = 7, 9, 11  # in bob's double
# On bob's side the double mixes corrIds up, storms events around replies, reorders
# replies and sends malformed frames: the exchange must work regardless.
BOB_FAULTS = {"corrIdMixups": True, "storm": 1, "reorderMs": 20, "malformedEvery": 3, "seed": 5}


def almanac(number: int) -> str:
    lines = [f"# Tide almanac {number}\n"]
    for entry in range(24):
        lines.append(
            f"Tide almanac entry {number}.{entry}: at the harbour of Port {number} the "
            f"flood tide peaks at {2 + entry % 5}.{entry % 10} metres two hours after "
            "moonrise, and the ebb leaves the harbour mouth shallow until dawn."
        )
    return "\n".join(lines) + "\n"


def write_corpus(docs: Path) -> None:
    almanacs = {f"almanac-{n}.md": almanac(n) for n in range(1, 1 + ALMANAC_DOCS)}
    folders: list[tuple[str, Mapping[str, str]]] = [
        ("public", {**PUBLIC_DOCS, **almanacs}),
        ("review", REVIEW_DOCS),
        ("private", PRIVATE_DOCS),
    ]
    for folder, documents in folders:
        (docs / folder).mkdir(parents=True)
        for name, text in documents.items():
            (docs / folder / name).write_text(text, encoding="utf-8")


# -- waiting -----------------------------------------------------------------------------------
def wait_for(check: Callable[[], T | None], timeout: float, what: str) -> T:
    """``check()`` once it is not None (or not False), polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


# -- one AutoRAG instance ----------------------------------------------------------------------
@dataclass
class Instance:
    """A workspace and its `autorag serve` (started by ``start``)."""

    name: str
    workspace: Workspace
    logs: Path
    api_port: int = field(default_factory=free_port)
    ws_port: int = field(default_factory=free_port)
    env: dict[str, str] = field(default_factory=dict)  # AUTORAG_* for the server
    process: subprocess.Popen[bytes] | None = None
    token: str = ""
    starts: int = 0

    @property
    def root(self) -> Path:
        return self.workspace.root

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def stderr_file(self) -> Path:
        return self.logs / f"{self.name}-serve-{self.starts}.stderr"

    def server_env(self) -> dict[str, str]:
        env = double_env()
        env.update(
            {
                "AUTORAG_P2P__ENABLED": "true",
                "AUTORAG_P2P__WS_PORT": str(self.ws_port),
                "AUTORAG_P2P__BOT_NAME": f"{self.name.title()}'s AutoRAG",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.update(self.env)
        return env

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start `autorag serve` (``wait_ready`` waits until it serves peer queries)."""
        self.starts += 1
        command = [*AUTORAG, "-w", str(self.root), "serve", "--port", str(self.api_port)]
        with (
            (self.logs / f"{self.name}-serve-{self.starts}.stdout").open("wb") as out,
            self.stderr_file.open("wb") as err,
        ):
            # Its own session: the server and its simplex-chat child can be ended together.
            self.process = subprocess.Popen(
                command,
                env=self.server_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def wait_ready(self) -> None:
        wait_for(self._healthy, START_TIMEOUT_S, f"{self.name}'s server ({self.stderr_file})")
        self.token = self.login()
        wait_for(self._p2p_running, START_TIMEOUT_S, f"P2P on {self.name} ({self.stderr_file})")

    def _healthy(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name}'s server exited:\n{self.stderr()[-3000:]}")
        try:
            return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def _p2p_running(self) -> bool:
        response = self.call("GET", "/api/p2p/status")
        assert response.status_code == 200, (
            f"GET /api/p2p/status on {self.name}: {response.status_code} {response.text}"
        )
        return bool(response.json()["running"])

    def login(self) -> str:
        response = httpx.post(
            f"{self.url}/api/auth/login",
            json={"username": ADMIN, "password": PASSWORD},
            timeout=HTTP_TIMEOUT,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    def stop(self, timeout: float = 30) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)  # uvicorn shuts down; the lifespan ends simplex
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)

    def restart(self, **env: str) -> None:
        self.stop()
        self.env.update(env)
        self.start()

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.request(
            method, self.url + path, headers=headers, timeout=HTTP_TIMEOUT, **kwargs
        )

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*AUTORAG, "-w", str(self.root), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=double_env(),
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"autorag {' '.join(args)} on {self.name} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def cli_start(self, *args: str) -> subprocess.Popen[str]:
        """``cli`` without waiting (for ``finish``): start-ups run side by side."""
        return subprocess.Popen(
            [*AUTORAG, "-w", str(self.root), *args],
            env=double_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def stderr(self) -> str:
        """Everything every run of this server wrote on stderr."""
        runs = sorted(self.logs.glob(f"{self.name}-serve-*.stderr"))
        return "".join(path.read_text("utf-8", "replace") for path in runs)

    def seen_counts(self) -> dict[str, int]:
        """How often the egress gate considered each source (policy_seen_sources)."""
        with sqlite3.connect(self.workspace.database_file, timeout=30) as db:
            rows = db.execute("SELECT source_id, count FROM policy_seen_sources").fetchall()
        return {str(source): int(count) for source, count in rows}


# -- a contact the test plays itself -----------------------------------------------------------
@dataclass
class PlayedContact:
    """A contact of bob's double whose messages the test writes and whose replies it reads
    from the link folder (no double runs for it)."""

    node: str  # its name in the link folder
    target: str  # the double it talks to
    link_dir: Path
    parts: Reassembler = field(default_factory=Reassembler)

    @property
    def inbox(self) -> Path:
        return self.link_dir / self.node

    def send(self, text: str) -> None:
        document = {"from": self.node, "text": text, "sentAt": _now()}
        write_inbox_file(self.link_dir / self.target, document)

    def send_json(self, message: Mapping[str, Any]) -> None:
        self.send(json.dumps(message))

    def messages(self) -> list[str]:
        """Whole messages that arrived since the last call (parts reassembled)."""
        if not self.inbox.is_dir():
            return []
        out = []
        for path in sorted(p for p in self.inbox.iterdir() if not p.name.startswith(".")):
            document = json.loads(path.read_text("utf-8"))
            path.unlink()
            whole = self.parts.feed(document["from"], document["text"])
            if whole is not None:
                out.append(whole)
        return out

    def next_reply(self, timeout: float = 30) -> dict[str, Any]:
        """The next message, decoded as JSON (replies are wire protocol v1)."""
        got: list[str] = []

        def arrived() -> bool:
            got.extend(self.messages())
            return bool(got)

        wait_for(arrived, timeout, f"a reply to {self.node}")
        assert len(got) == 1, f"expected one reply, got {got}"
        reply: dict[str, Any] = json.loads(got[0])
        return reply

    def silence(self, seconds: float) -> list[str]:
        """Whatever arrives within ``seconds`` (for asserting that nothing does)."""
        deadline = time.monotonic() + seconds
        got: list[str] = []
        while time.monotonic() < deadline:
            got += self.messages()
            time.sleep(0.05)
        return got


# -- the world ---------------------------------------------------------------------------------
@dataclass
class World:
    root: Path
    docs: Path  # bob's search path: canonical ids start with /docs/
    link_dir: Path
    records: Path
    alice: Instance
    bob: Instance
    probe: PlayedContact
    eve: PlayedContact

    def frames(self, node: str) -> list[dict[str, Any]]:
        """Every frame ``node``'s double recorded so far (it may still be writing one)."""
        path = self.records / f"{node}.jsonl"
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        complete = text[: text.rfind("\n") + 1]  # a line still being written waits
        return [json.loads(line) for line in complete.splitlines() if line]

    def all_frames(self) -> list[dict[str, Any]]:
        return self.frames("alice") + self.frames("bob")

    def ask(self, query: str, *, k: int = 5, peer: str = "bob", timeout_s: float = 60) -> Any:
        """Alice asks through her server's API; the peer's final reply."""
        body = {"peer": peer, "query": query, "k": k, "timeoutS": timeout_s}
        response = self.alice.call("POST", "/api/p2p/ask", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    def stop(self) -> None:
        for instance in (self.alice, self.bob):
            instance.stop()


def _double_config(node: str, link_dir: Path, records: Path, contacts: list[dict[str, Any]],
                   faults: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    config: dict[str, Any] = {
        "node": node,
        "linkDir": str(link_dir),
        "record": str(records / f"{node}.jsonl"),
        "contacts": contacts,
    }
    if faults:
        config["faults"] = faults
    return config


def _write_double_config(workspace: Workspace, config: dict[str, Any]) -> None:
    """``<db prefix>_double.json`` next to the prefix simplex-chat is started with."""
    prefix = workspace.simplex_db_prefix
    prefix.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    Path(f"{prefix}_double.json").write_text(json.dumps(config), encoding="utf-8")


def _prepare(workspace: Workspace, *, index: bool, policies: Mapping[str, str] = POLICIES) -> None:
    """The admin, the policies and the index (before any server runs)."""
    context = open_context(workspace)
    try:
        create_user(context.catalog, ADMIN, PASSWORD, "admin")
        if index:
            policy = open_policy(context)
            for glob, level in policies.items():
                policy.set_rule(glob, level)
            refresh(context.catalog, context.info, context.indexer, context.roots, ignore=[".*"])
    finally:
        context.close()


def build_world(
    root: Path,
    *,
    bob_files: Callable[[Path, Path], None] | None = None,
    alice_files: Callable[[Path], None] | None = None,
) -> Iterator[World]:
    """Set everything up, start both servers; stop them when the generator is closed.

    ``bob_files(docs, root)`` adds to bob's corpus before it is indexed; with
    ``alice_files(folder)`` alice gets a search path of her own (indexed, no rules: all
    of it private)."""
    link_dir, records, logs = root / "link", root / "records", root / "logs"
    for folder in (link_dir, records, logs):
        folder.mkdir()
    docs = root / "bob-files" / "docs"
    write_corpus(docs)
    if bob_files is not None:
        bob_files(docs, root)

    alice_ws = init_workspace(root / "alice")
    bob_ws = init_workspace(root / "bob")
    bob_ws.write_config({"search_paths": [str(docs)]})
    if alice_files is not None:
        alice_docs = root / "alice-files" / "notes"
        alice_docs.mkdir(parents=True)
        alice_files(alice_docs)
        alice_ws.write_config({"search_paths": [str(alice_docs)]})
    _write_double_config(
        alice_ws,
        _double_config(
            "alice",
            link_dir,
            records,
            [
                {"contactId": ALICE_BOB, "localDisplayName": "bob", "link": "bob",
                 "profile": {"displayName": "Bob's AutoRAG", "fullName": "Bob Lamp",
                             "shortDescr": "lighthouse kits and tides",
                             "description": "Answers about refunds and tide almanacs"}},
                {"contactId": ALICE_GHOST, "localDisplayName": "ghost", "link": "ghost",
                 "profile": {"displayName": "Ghost"}},
            ],
        ),
    )  # fmt: skip
    _write_double_config(
        bob_ws,
        _double_config(
            "bob",
            link_dir,
            records,
            [
                {"contactId": BOB_ALICE, "localDisplayName": "alice", "link": "alice",
                 "profile": {"displayName": "Alice's AutoRAG", "fullName": "Alice Tern"}},
                {"contactId": BOB_EVE, "localDisplayName": "eve", "link": "eve",
                 "profile": {"displayName": "Eve"}},
                {"contactId": BOB_PROBE, "localDisplayName": "probe", "link": "probe",
                 "profile": {"displayName": "Probe"}},
            ],
            BOB_FAULTS,
        ),
    )  # fmt: skip
    _prepare(alice_ws, index=alice_files is not None, policies={})
    alice = Instance("alice", alice_ws, logs)
    bob = Instance("bob", bob_ws, logs)
    # Alice and bob trust each other with the CLI, as a user would; the contacts the test
    # plays are trusted through the registry directly (a CLI start-up costs seconds).
    trusting = [
        alice.cli_start(
            "p2p", "peers", "add", "bob", str(ALICE_BOB), "--note", "tides and refunds"
        ),
        bob.cli_start("p2p", "peers", "add", "alice", str(BOB_ALICE)),
    ]
    PeerRegistry(alice_ws.simplex_peers_file).add("ghost", ALICE_GHOST)
    PeerRegistry(bob_ws.simplex_peers_file).add("probe", BOB_PROBE)  # the registry locks
    _prepare(bob_ws, index=True)  # meanwhile
    finish(trusting)

    world = World(
        root=root,
        docs=docs,
        link_dir=link_dir,
        records=records,
        alice=alice,
        bob=bob,
        probe=PlayedContact("probe", "bob", link_dir),
        eve=PlayedContact("eve", "bob", link_dir),
    )
    try:
        alice.launch()
        bob.launch()
        alice.wait_ready()
        bob.wait_ready()
        yield world
    finally:
        world.stop()


def finish(running: list[subprocess.Popen[str]]) -> list[str]:
    """The standard output of each CLI started with ``cli_start`` (each must succeed)."""
    out = []
    for child in running:
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 0, f"{child.args!r} failed:\n{stdout}\n{stderr}"
        out.append(stdout)
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
