"""The simplex-chat bot API's JSON shapes that AutoRAG reads, parsed into small types (pure).

Follows the protocol brief (``simplex-bot-api.md`` §4-§7): every newer field is optional,
unknown fields and unknown ``type`` tags are ignored, and a malformed element is skipped
rather than failing the whole frame (a peer's profile must not break start-up).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# Profile fields are the peer's to choose; bounded so a hostile profile cannot bloat the
# registry or a terminal. The brief caps shortDescr at 160 characters; the rest are ours.
_TEXT_LIMIT = 4096
_NAME_LIMIT = 256
_IMAGE_LIMIT = 256 * 1024  # a data URI; SimpleX avatars are small JPEGs


@dataclass(frozen=True)
class Profile:
    """The profile a contact shares (the five fields seed 000's registry keeps)."""

    display_name: str = ""
    full_name: str = ""
    short_descr: str = ""
    description: str = ""
    image: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "displayName": self.display_name,
            "fullName": self.full_name,
            "shortDescr": self.short_descr,
            "description": self.description,
            "image": self.image,
        }


@dataclass(frozen=True)
class Contact:
    """One element of ``contactsList.contacts``."""

    contact_id: int
    local_display_name: str
    profile: Profile
    # Contact cards and pending contacts have no ``activeConn``: nothing can be sent to them.
    has_connection: bool
    status: str = "active"


@dataclass(frozen=True)
class IncomingMessage:
    """A text a contact sent us (``directRcv`` / ``rcvMsgContent``)."""

    contact_id: int
    contact_name: str
    text: str
    item_id: int | None = None


def parse_profile(raw: Any) -> Profile:
    """A Profile or LocalProfile object; anything missing or mistyped reads as empty."""
    data = raw if isinstance(raw, dict) else {}
    return Profile(
        display_name=_text(data.get("displayName"), _NAME_LIMIT),
        full_name=_text(data.get("fullName"), _NAME_LIMIT),
        short_descr=_text(data.get("shortDescr"), _TEXT_LIMIT),
        description=_text(data.get("description"), _TEXT_LIMIT),
        image=_text(data.get("image"), _IMAGE_LIMIT, cut=False),
    )


def parse_contact(raw: Any) -> Contact | None:
    if not isinstance(raw, dict):
        return None
    contact_id = as_id(raw.get("contactId"))
    if contact_id is None:
        return None
    profile = parse_profile(raw.get("profile"))
    name = raw.get("localDisplayName")
    status = raw.get("contactStatus")
    return Contact(
        contact_id=contact_id,
        local_display_name=name if isinstance(name, str) else profile.display_name,
        profile=profile,
        has_connection=isinstance(raw.get("activeConn"), dict),
        status=status if isinstance(status, str) else "active",
    )


def parse_contacts(resp: dict[str, Any]) -> list[Contact]:
    """``contactsList`` → contacts, skipping (and logging) elements that are not contacts."""
    raw = resp.get("contacts")
    items = raw if isinstance(raw, list) else []
    contacts = [c for c in map(parse_contact, items) if c is not None]
    if len(contacts) != len(items):
        log.warning("simplex: skipped %d malformed contacts", len(items) - len(contacts))
    return contacts


def parse_incoming(resp: dict[str, Any]) -> list[IncomingMessage]:
    """Texts received from contacts in a ``newChatItems`` (or legacy ``newChatItem``) event.

    Items that are not direct received messages (sent items, groups, feature changes,
    e2e info) are skipped: reacting to ``snd*`` items would echo our own messages.
    """
    kind = resp.get("type")
    if kind == "newChatItems":
        items = resp.get("chatItems")
    elif kind == "newChatItem":  # CLIs older than about v5.5
        items = [resp.get("chatItem")]
    else:
        return []
    if not isinstance(items, list):
        return []
    return [m for m in map(_incoming, items) if m is not None]


def chat_error_kind(resp: dict[str, Any]) -> str:
    """``errorStore/largeMsg``-style name of a ``chatCmdError`` / ``chatError`` payload."""
    error = resp.get("chatError")
    if not isinstance(error, dict):
        return str(resp.get("type", "unknown"))
    kind = str(error.get("type", "unknown"))
    for detail_key in ("errorType", "storeError", "agentError"):
        detail = error.get(detail_key)
        if isinstance(detail, dict) and "type" in detail:
            return f"{kind}/{detail['type']}"
    return kind


def as_id(value: Any) -> int | None:
    """An int64 id as SimpleX sends it (a JSON number); bools and negatives are not ids."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < 2**63 else None


def _incoming(item: Any) -> IncomingMessage | None:
    if not isinstance(item, dict):
        return None
    info, chat_item = item.get("chatInfo"), item.get("chatItem")
    if not isinstance(info, dict) or not isinstance(chat_item, dict):
        return None
    if info.get("type") != "direct" or not isinstance(info.get("contact"), dict):
        return None
    content = chat_item.get("content")
    if not isinstance(content, dict) or content.get("type") != "rcvMsgContent":
        return None
    message = content.get("msgContent")
    text = message.get("text") if isinstance(message, dict) else None
    contact = parse_contact(info["contact"])
    if contact is None or not isinstance(text, str):
        return None
    meta = chat_item.get("meta")
    item_id = as_id(meta.get("itemId")) if isinstance(meta, dict) else None
    return IncomingMessage(contact.contact_id, contact.local_display_name, text, item_id)


def _text(value: Any, limit: int, *, cut: bool = True) -> str:
    if not isinstance(value, str):
        return ""
    if len(value) <= limit:
        return value
    return value[:limit] if cut else ""  # a cut data URI is no image at all
