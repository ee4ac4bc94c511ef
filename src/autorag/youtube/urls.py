"""YouTube video URLs and ids, and the identities and links made from them.

A video is known by its 11-character id. People paste it in many shapes (a watch page,
a short link, a Short, an embed, the mobile site); anything else is refused, so nothing
but an id ever reaches the transcript library. The document's identity is a datasource
slash identity ``/youtube/videos/<id>`` (seed 000: never a URL, whose scheme the
normalisation refuses); the link people open is built from the id, never taken from
the input.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from autorag.errors import InvalidInput

KIND = "youtube"
NAMESPACE = f"/{KIND}/videos/"
MAX_URL_CHARS = 2000

_VIDEO_ID = re.compile(r"[A-Za-z0-9_-]{11}")
_WATCH_HOSTS = frozenset({"youtube.com", "www.youtube.com", "m.youtube.com"})
_SHORT_HOST = "youtu.be"
# Paths whose next segment is the id: /shorts/ID, /embed/ID, /live/ID.
_ID_PATHS = frozenset({"shorts", "embed", "live"})
# A passage's start, as the transcript's paragraphs are headed: [m:ss], [mm:ss], [h:mm:ss].
_STAMP = re.compile(r"\[(?:(\d{1,3}):)?(\d{1,2}):(\d{2})\]")


def video_id(text: str) -> str:
    """The video id in ``text``: a bare id, or a URL of one of the accepted shapes."""
    candidate = text.strip()
    if _VIDEO_ID.fullmatch(candidate):
        return candidate
    if len(candidate) > MAX_URL_CHARS:
        raise _not_a_video(candidate[:80] + "…")
    found = _id_from_url(candidate if "://" in candidate else f"https://{candidate}")
    if found is None:
        raise _not_a_video(candidate)
    return found


def is_youtube_url(text: str) -> bool:
    """Whether ``text`` names a YouTube video (``autorag add`` sends those here)."""
    try:
        video_id(text)
    except InvalidInput:
        return False
    return "/" in text or "." in text  # a bare 11-character word is a file name there


def _id_from_url(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password:
        return None
    if port not in (None, 80, 443):
        return None
    segments = [s for s in parts.path.split("/") if s]
    if host == _SHORT_HOST:
        found = segments[0] if len(segments) == 1 else None
    elif host not in _WATCH_HOSTS:
        found = None
    elif segments == ["watch"]:
        values = parse_qs(parts.query).get("v")
        found = values[0] if values else None
    elif len(segments) == 2 and segments[0] in _ID_PATHS:
        found = segments[1]
    else:
        found = None
    return found if found is not None and _VIDEO_ID.fullmatch(found) else None


def _not_a_video(text: str) -> InvalidInput:
    return InvalidInput(
        f"{text!r} is not a YouTube video: give a video id or a link such as"
        " https://www.youtube.com/watch?v=ID, https://youtu.be/ID, …/shorts/ID or …/embed/ID",
        code="invalid_youtube_url",
    )


def source_id(video: str) -> str:
    """``/youtube/videos/<id>``: the video's document identity."""
    return f"{NAMESPACE}{video}"


def video_of(source: str) -> str | None:
    """The video id of a YouTube document's identity; None for any other source."""
    if not source.startswith(NAMESPACE):
        return None
    rest = source[len(NAMESPACE) :]
    return rest if _VIDEO_ID.fullmatch(rest) else None


def watch_url(video: str, second: int | None = None) -> str:
    """The video's page, at ``second`` when given."""
    at = f"&t={second}s" if second is not None else ""
    return f"https://www.youtube.com/watch?v={video}{at}"


def stamp(second: float) -> str:
    """``[m:ss]``, or ``[h:mm:ss]`` from an hour on: a paragraph's heading."""
    whole = max(0, int(second))
    hours, rest = divmod(whole, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"[{hours}:{minutes:02d}:{seconds:02d}]" if hours else f"[{minutes:02d}:{seconds:02d}]"


def passage_second(text: str) -> int | None:
    """The second a passage starts at: its first paragraph's heading, when it has one."""
    match = _STAMP.match(text.lstrip())
    if match is None:
        return None
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def citation_link(source: str, passage: str) -> str | None:
    """Where a citation of ``passage`` opens: a YouTube video at the passage's second.

    None for a source that is no YouTube video. The link is rebuilt from the id, so no
    text of the document can choose where it leads.
    """
    video = video_of(source)
    if video is None:
        return None
    return watch_url(video, passage_second(passage))
