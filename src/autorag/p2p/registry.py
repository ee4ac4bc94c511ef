"""The trusted peer registry: ``<workspace>/.autorag/p2p/simplex-peers.json`` (seed 000).

The registry is the allowlist for inbound peer queries. A record is keyed by the name you
call the contact locally and holds the SimpleX ``contactId``, the ``profile`` the peer
shared (refreshed from ``/_contacts`` at start-up, stamped ``profileSyncedAt``) and your
own note (``description``)::

    {"version": 1, "peers": {"bob": {"contactId": 4, "profile": {"displayName": "Bob",
      "fullName": "", "shortDescr": "", "description": "", "image": ""},
      "profileSyncedAt": "2026-01-02T03:04:05Z", "description": "tax lawyer"}}}

A bare ``{"bob": {...}}`` map (no ``version``) is read too. The file is kept at mode 0600
(checked and repaired on every open), replaced atomically, and changed only under an
exclusive lock, so the CLI and a running server can both edit it. Bad JSON is an error
naming the file: an allowlist is never silently emptied.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autorag.errors import Conflict, InvalidInput, NotFound
from autorag.p2p.files import write_json_atomic
from autorag.p2p.simplex.shapes import Contact, Profile, as_id, parse_profile
from autorag.text.stemming import stems
from autorag.times import as_utc

log = logging.getLogger(__name__)

REGISTRY_VERSION = 1
FILE_MODE = 0o600
# Persona fields of the retired record layout; the SimpleX profile replaced them.
RETIRED_FIELDS = ("displayName", "role", "org", "accessHint")
_KNOWN_FIELDS = frozenset({"contactId", "profile", "profileSyncedAt", "description"})
MAX_NAME_CHARS = 64
MAX_NOTE_CHARS = 2000
# How much a query word found in each field counts when ranking.
_NAME_WEIGHT = 3.0
_FIELD_WEIGHTS = {"note": 2.0, "displayName": 2.0, "fullName": 1.5, "profile": 1.0}


@dataclass(frozen=True)
class Peer:
    """A trusted contact: your local name for it and what SimpleX says about it."""

    name: str
    contact_id: int
    profile: Profile = field(default_factory=Profile)
    profile_synced_at: datetime | None = None
    description: str = ""  # your note


@dataclass
class MergeReport:
    synced: list[str] = field(default_factory=list)  # local names whose profile was refreshed
    untrusted: list[Contact] = field(default_factory=list)  # never added to the registry
    missing: list[Peer] = field(default_factory=list)  # trusted, but SimpleX did not list them


@dataclass
class _Record:
    peer: Peer
    extra: dict[str, Any]  # fields a newer AutoRAG wrote, kept as they are


@dataclass
class _Parsed:
    records: dict[str, _Record]
    warnings: list[str]
    dirty: bool  # retired fields were dropped: worth writing back


class PeerRegistry:
    """The registry file. Reads notice changes other processes made; writes are atomic."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.warnings: list[str] = []  # from the latest read
        self._cache: tuple[tuple[int, int, int], dict[str, _Record]] | None = None

    # -- reading ---------------------------------------------------------------------------
    def load(self) -> list[str]:
        """Read the file now; return (and log) what was wrong with it and was repaired."""
        self._cache, self.warnings = None, []
        self._records()
        return list(self.warnings)

    def peers(self) -> list[Peer]:
        return [r.peer for r in self._records().values()]

    def get(self, name: str) -> Peer | None:
        record = self._records().get(name)
        return record.peer if record else None

    def by_contact_id(self, contact_id: int) -> Peer | None:
        return next((p for p in self.peers() if p.contact_id == contact_id), None)

    def rank(self, query: str) -> list[tuple[Peer, float]]:
        """Every peer with a score in [0, 1], best first (ties by name).

        Matches query words (lightly stemmed) against your local name and note and the
        profile the peer shared; the name weighs most. Peers that match nothing score 0.
        """
        terms = stems(query)
        scored = [(peer, _score(peer, terms)) for peer in self.peers()]
        return sorted(scored, key=lambda item: (-item[1], item[0].name))

    # -- changing --------------------------------------------------------------------------
    def add(self, name: str, contact_id: int, description: str = "") -> Peer:
        _check_name(name)
        checked_id = as_id(contact_id)
        if checked_id is None:
            raise InvalidInput(f"contact id must be a non-negative integer, not {contact_id!r}")
        peer = Peer(name, checked_id, description=_check_note(description))

        def change(records: dict[str, _Record]) -> None:
            if name in records:
                raise Conflict(f"a peer named {name!r} is already trusted")
            holder = next(
                (r.peer for r in records.values() if r.peer.contact_id == peer.contact_id), None
            )
            if holder is not None:
                raise Conflict(f"contact {peer.contact_id} is already trusted as {holder.name!r}")
            records[name] = _Record(peer, {})

        self._mutate(change)
        return peer

    def remove(self, name: str) -> Peer:
        removed: list[Peer] = []
        self._mutate(lambda records: removed.append(_pop(records, name).peer))
        return removed[0]

    def set_note(self, name: str, text: str) -> Peer:
        note = _check_note(text)
        return self._update(name, lambda peer: replace(peer, description=note))

    def merge_profiles(
        self, contacts: Iterable[Contact], *, now: datetime | None = None
    ) -> MergeReport:
        """Copy each contact's profile into the record with its ``contactId``.

        Contacts with no trusted record are returned in ``untrusted`` and never added:
        the registry stays the allowlist.
        """
        listed = {c.contact_id: c for c in contacts}
        stamp = (now or datetime.now(UTC)).replace(microsecond=0)
        report = MergeReport()

        def change(records: dict[str, _Record]) -> None:
            trusted = {r.peer.contact_id for r in records.values()}
            report.untrusted = [c for c in listed.values() if c.contact_id not in trusted]
            for name, record in records.items():
                contact = listed.get(record.peer.contact_id)
                if contact is None:
                    report.missing.append(record.peer)
                    continue
                record.peer = replace(record.peer, profile=contact.profile, profile_synced_at=stamp)
                report.synced.append(name)

        self._mutate(change)
        return report

    # -- internals -------------------------------------------------------------------------
    def _update(self, name: str, change: Callable[[Peer], Peer]) -> Peer:
        updated: list[Peer] = []

        def apply(records: dict[str, _Record]) -> None:
            record = records.get(name)
            if record is None:
                raise NotFound(f"no trusted peer named {name!r}")
            record.peer = change(record.peer)
            updated.append(record.peer)

        self._mutate(apply)
        return updated[0]

    def _records(self) -> dict[str, _Record]:
        """The records, re-read when the file changed; retired fields are written away."""
        parsed = self._read()
        if parsed is None:
            return self._cache[1] if self._cache else {}
        if parsed.dirty:  # rewrite without the retired fields, warning only once
            self._mutate(lambda records: None, quiet=True)
        return parsed.records

    def _read(self, *, quiet: bool = False) -> _Parsed | None:
        """Parse the file, or None when it is unchanged since the cached read."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._cache = ((0, 0, 0), {})
            return _Parsed({}, [], dirty=False)
        with os.fdopen(fd, "rb") as handle:
            mode_warning = _repair_mode(handle.fileno(), self.path)
            info = os.fstat(handle.fileno())
            key = (info.st_ino, info.st_mtime_ns, info.st_size)
            if self._cache is not None and self._cache[0] == key and mode_warning is None:
                return None
            parsed = _parse(handle.read(), self.path)
        if mode_warning:
            parsed.warnings.insert(0, mode_warning)
        self._cache = (key, parsed.records)
        if not quiet:
            for warning in parsed.warnings:
                log.warning("%s", warning)
            self.warnings = parsed.warnings
        return parsed

    def _mutate(self, change: Callable[[dict[str, _Record]], None], *, quiet: bool = False) -> None:
        """Read, change and write the records under the lock (one writer at a time)."""
        with self._locked():
            self._cache = None
            try:
                parsed = self._read(quiet=quiet)
                records = parsed.records if parsed else {}
                change(records)
                _write(self.path, records)
            finally:
                self._cache = None  # the next read sees the file, whatever happened

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_file = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the OS drops it if we are killed
            _remove_stale_temp_files(self.path)
            yield
        finally:
            os.close(fd)


# -- the file --------------------------------------------------------------------------------
def _repair_mode(fd: int, path: Path) -> str | None:
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode == FILE_MODE:
        return None
    os.fchmod(fd, FILE_MODE)
    return f"{path}: mode was {mode:04o}, set to {FILE_MODE:04o} (it lists who may query you)"


def _parse(data: bytes, path: Path) -> _Parsed:
    try:
        document = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path}: not valid JSON ({exc}); fix or move the file") from None
    entries = _entries(document, path)
    parsed = _Parsed({}, [], dirty=False)
    for name, raw in entries.items():
        parsed.records[name] = _record(name, raw, path, parsed)
    return parsed


def _entries(document: Any, path: Path) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise InvalidInput(f"{path}: expected a JSON object of peers")
    if "version" not in document:
        return document  # a bare map of records
    version = document["version"]
    if version != REGISTRY_VERSION:
        raise InvalidInput(f"{path}: registry version {version!r} is not {REGISTRY_VERSION}")
    peers = document.get("peers", {})
    if not isinstance(peers, dict):
        raise InvalidInput(f"{path}: 'peers' must be an object keyed by local name")
    return peers


def _record(name: str, raw: Any, path: Path, parsed: _Parsed) -> _Record:
    if not isinstance(raw, dict):
        raise InvalidInput(f"{path}: peer {name!r} is not an object")
    contact_id = as_id(raw.get("contactId"))
    if contact_id is None:
        raise InvalidInput(f"{path}: peer {name!r} has no valid contactId")
    retired = [key for key in RETIRED_FIELDS if key in raw]
    if retired:
        parsed.warnings.append(
            f"{path}: peer {name!r}: dropped retired fields {', '.join(retired)} "
            "(the SimpleX profile replaces them)"
        )
        parsed.dirty = True
    synced = _timestamp(raw.get("profileSyncedAt"))
    note = raw.get("description")
    peer = Peer(
        name=name,
        contact_id=contact_id,
        profile=parse_profile(raw.get("profile")),
        profile_synced_at=synced,
        description=note if isinstance(note, str) else "",
    )
    extra = {k: v for k, v in raw.items() if k not in _KNOWN_FIELDS and k not in RETIRED_FIELDS}
    return _Record(peer, extra)


def _write(path: Path, records: dict[str, _Record]) -> None:
    document = {
        "version": REGISTRY_VERSION,
        "peers": {name: _record_json(records[name]) for name in sorted(records)},
    }
    write_json_atomic(path, document)


def _record_json(record: _Record) -> dict[str, Any]:
    peer = record.peer
    out: dict[str, Any] = {**record.extra, "contactId": peer.contact_id}
    out["profile"] = peer.profile.to_json()
    if peer.profile_synced_at is not None:
        out["profileSyncedAt"] = peer.profile_synced_at.isoformat().replace("+00:00", "Z")
    out["description"] = peer.description
    return out


def _remove_stale_temp_files(path: Path) -> None:
    """Temp files left by a writer that was killed (we hold the lock: none is live)."""
    for temp in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


# -- values ----------------------------------------------------------------------------------
def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return as_utc(parsed)


def _check_name(name: str) -> None:
    if not name or name != name.strip() or len(name) > MAX_NAME_CHARS:
        raise InvalidInput(
            f"a peer name is 1 to {MAX_NAME_CHARS} characters, without surrounding spaces"
        )
    if any(not ch.isprintable() for ch in name):
        raise InvalidInput("a peer name cannot contain control characters")


def _check_note(text: str) -> str:
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput(f"a note is at most {MAX_NOTE_CHARS} characters")
    return text


def _pop(records: dict[str, _Record], name: str) -> _Record:
    if name not in records:
        raise NotFound(f"no trusted peer named {name!r}")
    return records.pop(name)


def _score(peer: Peer, terms: frozenset[str]) -> float:
    if not terms:
        return 0.0
    profile = peer.profile
    fields = [
        (stems(peer.name.replace("_", " ").replace("-", " ")), _NAME_WEIGHT),
        (stems(peer.description), _FIELD_WEIGHTS["note"]),
        (stems(profile.display_name), _FIELD_WEIGHTS["displayName"]),
        (stems(profile.full_name), _FIELD_WEIGHTS["fullName"]),
        (stems(f"{profile.short_descr} {profile.description}"), _FIELD_WEIGHTS["profile"]),
    ]
    total = sum(
        max((w for words, w in fields if _matches(term, words)), default=0.0) for term in terms
    )
    return round(total / (len(terms) * _NAME_WEIGHT), 4)


def _matches(term: str, words: frozenset[str]) -> bool:
    """Equal, or nearly (the light stemmer leaves "taxe" beside "tax")."""
    if term in words:
        return True
    return any(_near(term, word) for word in words)


def _near(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return len(short) >= 3 and len(long) - len(short) <= 2 and long.startswith(short)
