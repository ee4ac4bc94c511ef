"""The topics a user may follow, in people's words, and the notification each event
makes.

A topic is one event and who it concerns: the admins (a peer waits for approval, a
backup failed, a synthesis preview is ready: kept to admins, who see every archive) or
the event's actor (the user whose upload failed). A topic a user never chose is on:
turning notifications on in a browser is the choice that matters, and the switches only
narrow it.

A notification says what happened and where to look, never what a document or chat
says nor any secret: the only values it takes from an event are names (a workspace, a
peer, a job) that pass ``_NAME``, and counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from autorag.push.models import Notification

__all__ = [
    "ACTOR",
    "ADMINS",
    "TOPICS",
    "TOPIC_NAMES",
    "Audience",
    "EventLike",
    "Topic",
    "notification_for",
    "topic_for",
]

Audience = Literal["admins", "actor"]
ADMINS: Audience = "admins"
ACTOR: Audience = "actor"
DEFAULT_ENABLED = True
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:@-]{0,63}$")


class EventLike(Protocol):
    """What a notification reads of an outbox event (``store.catalog.outbox.Event``)."""

    @property
    def id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def workspace(self) -> str | None: ...
    @property
    def actor(self) -> str | None: ...
    @property
    def data(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Topic:
    name: str
    label: str
    description: str
    event: str
    audience: Audience
    words: Callable[[EventLike], Notification]

    def applies_to(self, role: str | None) -> bool:
        """Whether a user of ``role`` is ever notified of it."""
        return self.audience == ACTOR or role == "admin"


def _name(data: Mapping[str, Any], *keys: str) -> str | None:
    """The first of ``keys`` holding a short plain name: anything else stays out."""
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and _NAME.match(value):
            return value
    return None


def _in(event: EventLike) -> str:
    workspace = event.workspace if event.workspace and _NAME.match(event.workspace) else None
    return f" in workspace {workspace}" if workspace else ""


def _approval(event: EventLike) -> Notification:
    peer = _name(event.data, "peer", "peer_name", "requester")
    who = f"Peer {peer}" if peer else "A peer"
    return Notification(
        "Approval waiting",
        f"{who} asks to query this server{_in(event)}. Approve or refuse it in P2P.",
        "/#/p2p",
        event.name,
        "approvals",
    )


def _upload_failed(event: EventLike) -> Notification:
    return Notification(
        "Your upload failed",
        f"A document you uploaded{_in(event)} could not be processed. "
        "Open Documents to see why and try again.",
        "/#/documents",
        event.name,
        "upload_failed",
    )


def _backup_failed(event: EventLike) -> Notification:
    job = _name(event.data, "job")
    which = f"The backup job {job}" if job else "A backup"
    return Notification(
        "Backup failed",
        f"{which} failed. Open Backups to see its log.",
        "/#/backups",
        event.name,
        "backup_failed",
    )


def _synthesis_ready(event: EventLike) -> Notification:
    archive = _name(event.data, "archive")
    where = f" for the archive {archive}" if archive else ""
    return Notification(
        "Synthesis ready for review",
        f"Proposed wiki pages{where}{_in(event)} wait for your review.",
        "/#/wiki",
        event.name,
        "synthesis_ready",
    )


TOPICS: tuple[Topic, ...] = (
    Topic(
        "approvals",
        "Approvals waiting",
        "A peer asks to query this server and waits for an admin's approval.",
        "p2p.approval_requested",
        ADMINS,
        _approval,
    ),
    Topic(
        "upload_failed",
        "My upload failed",
        "A document you uploaded could not be processed.",
        "document.failed",
        ACTOR,
        _upload_failed,
    ),
    Topic(
        "backup_failed",
        "Backup failed",
        "A backup, scheduled or made by hand, failed.",
        "backup.failed",
        ADMINS,
        _backup_failed,
    ),
    Topic(
        "synthesis_ready",
        "Synthesis ready",
        "A synthesis run proposes wiki pages to review.",
        "synthesis.preview_ready",
        ADMINS,
        _synthesis_ready,
    ),
)
TOPIC_NAMES = tuple(topic.name for topic in TOPICS)
_BY_EVENT = {topic.event: topic for topic in TOPICS}


def topic_for(event_name: str) -> Topic | None:
    return _BY_EVENT.get(event_name)


def notification_for(event: EventLike) -> Notification | None:
    """The notification ``event`` makes; None for an event no topic follows."""
    topic = topic_for(event.name)
    return None if topic is None else topic.words(event)
