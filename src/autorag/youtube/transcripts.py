"""A video's transcript, fetched through youtube-transcript-api, every failure mapped.

The library asks YouTube for the watch page (its innertube API key), the innertube
``player`` answer (the caption tracks) and one track's timed text. It is given the
``requests`` session to do that with: ours sets a time limit on every request and
reads the video's title from the ``player`` answer as it passes (the library keeps
only the tracks). Tests give it a session whose transport answers from recorded files.

What YouTube sends is data from outside: the title and the transcript's text are
cleaned and bounded, and no error message quotes more than a short line of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import ParseError

import requests
from defusedxml import DefusedXmlException
from requests.adapters import HTTPAdapter
from youtube_transcript_api import (
    AgeRestricted,
    CouldNotRetrieveTranscript,
    FailedToCreateConsentCookie,
    InvalidVideoId,
    NoTranscriptFound,
    PoTokenRequired,
    RequestBlocked,
    TranscriptList,
    TranscriptsDisabled,
    VideoUnavailable,
    VideoUnplayable,
    YouTubeDataUnparsable,
    YouTubeRequestFailed,
    YouTubeTranscriptApi,
)
from youtube_transcript_api import Transcript as LibraryTranscript

from autorag.errors import InvalidInput, Unavailable
from autorag.text import one_line

SessionFactory = Callable[[], requests.Session]

TITLE_CHARS = 300
_REASON_CHARS = 200  # of a reason YouTube gives, quoted in an error
_PLAYER_PATH = "/youtubei/v1/player"
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


class NoTranscript(InvalidInput):
    """The video exists (or existed) but gives no transcript to read: 422."""

    code = "no_transcript"
    status = 422


@dataclass(frozen=True)
class Snippet:
    text: str
    start: float  # seconds from the video's start


@dataclass(frozen=True)
class Track:
    """One transcript YouTube offers for a video."""

    language_code: str
    language: str
    generated: bool  # YouTube's speech recognition, not captions someone wrote

    def describe(self) -> str:
        # YouTube often names a generated track "English (auto-generated)" already.
        said = "auto" in self.language.lower()
        made = ", auto-generated" if self.generated and not said else ""
        return f"{self.language_code} ({self.language}{made})"


@dataclass(frozen=True)
class Transcript:
    video_id: str
    title: str | None  # the video's title, when YouTube sent it
    track: Track
    snippets: list[Snippet]
    available: list[Track] = field(default_factory=list)


@dataclass
class _Details:
    """What the ``player`` answer says of the video besides its tracks."""

    title: str | None = None


class _TimeLimit(HTTPAdapter):
    """Every request gets a time limit: the library sets none, and a silent server
    would otherwise hold a request (and the server's thread) forever."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(max_retries=0)
        self.timeout_s = timeout_s

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float | None, float | None] | None = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        limit = self.timeout_s if timeout is None else timeout
        return super().send(request, stream, limit, verify, cert, proxies)


def youtube_session(timeout_s: float) -> requests.Session:
    """A session for YouTube: a time limit on each request, no retries."""
    session = requests.Session()
    adapter = _TimeLimit(timeout_s)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def check_languages(languages: Sequence[str]) -> list[str]:
    """Language codes as YouTube names them (``en``, ``es-419``, ``pt-BR``)."""
    codes = [code.strip() for code in languages if code.strip()]
    if not codes or len(codes) > 20:
        raise InvalidInput("give between 1 and 20 languages", code="invalid_language")
    for code in codes:
        if not _LANGUAGE.fullmatch(code):
            raise InvalidInput(
                f"{one_line(code, 40)!r} is not a language code (such as en, es or pt-BR)",
                code="invalid_language",
            )
    return codes


def fetch_transcript(
    session: requests.Session, video_id: str, languages: Sequence[str]
) -> Transcript:
    """The video's transcript in the first of ``languages`` it has one in.

    ``NoTranscript`` (422) when it has none to give, ``Unavailable`` (503) when YouTube
    cannot be reached or answers what cannot be read.
    """
    details = _Details()
    session.hooks["response"].append(_reading_details(details))
    api = YouTubeTranscriptApi(http_client=session)
    try:
        tracks = api.list(video_id)
        available = _tracks(tracks)
        try:
            chosen = tracks.find_transcript(list(languages))
        except NoTranscriptFound:
            raise _none_in(video_id, languages, available) from None
        fetched = chosen.fetch()
    except CouldNotRetrieveTranscript as exc:
        raise _mapped(exc, video_id) from None
    except requests.Timeout:
        raise Unavailable(
            "YouTube did not answer in time; try again later", code="youtube_unreachable"
        ) from None
    except requests.RequestException as exc:
        raise Unavailable(
            f"YouTube could not be reached: {_network_reason(exc)}", code="youtube_unreachable"
        ) from None
    except (ParseError, DefusedXmlException, KeyError, IndexError, TypeError, ValueError):
        # The library read an answer of an unexpected shape (or hostile XML).
        raise _unreadable(video_id) from None
    track = _track(chosen)
    snippets = [Snippet(s.text, float(s.start)) for s in fetched.snippets]
    return Transcript(video_id, details.title, track, snippets, available)


def _tracks(tracks: TranscriptList) -> list[Track]:
    return [_track(track) for track in tracks]


def _track(track: LibraryTranscript) -> Track:
    # Names and codes are YouTube's data: shown and stored, so cleaned and bounded.
    return Track(clean(track.language_code, 20), clean(track.language, 80), track.is_generated)


def _none_in(video_id: str, languages: Sequence[str], available: list[Track]) -> NoTranscript:
    offered = ", ".join(track.describe() for track in available) or "none"
    return NoTranscript(
        f"video {video_id} has no transcript in {', '.join(languages)}; it has: {offered}."
        " Ask for one of those (--language, or youtube.languages in the settings)",
        code="no_transcript_in_languages",
    )


def _mapped(exc: CouldNotRetrieveTranscript, video_id: str) -> InvalidInput | Unavailable:
    """The library's error as ours: what the video lacks is 422, what failed is 503."""
    if isinstance(exc, TranscriptsDisabled):
        return NoTranscript(
            f"video {video_id} has no transcript: its uploader turned captions off",
            code="transcripts_disabled",
        )
    if isinstance(exc, VideoUnavailable | InvalidVideoId):
        return NoTranscript(
            f"video {video_id} is unavailable (removed, private or never published)",
            code="video_unavailable",
        )
    if isinstance(exc, RequestBlocked):  # IpBlocked (429, a captcha page) is one too
        return NoTranscript(
            f"YouTube blocked this server's request for video {video_id} (too many requests,"
            " or an address it does not serve, such as a cloud provider's); try later",
            code="youtube_blocked",
        )
    if isinstance(exc, AgeRestricted):
        return NoTranscript(
            f"video {video_id} is age-restricted: YouTube shows it only to signed-in users",
            code="video_age_restricted",
        )
    if isinstance(exc, PoTokenRequired):
        return NoTranscript(
            f"YouTube asks for a proof-of-origin token to give video {video_id}'s transcript",
            code="youtube_token_required",
        )
    if isinstance(exc, VideoUnplayable):
        why = "; ".join(clean(str(r), _REASON_CHARS) for r in [exc.reason, *exc.sub_reasons] if r)
        return NoTranscript(
            f"video {video_id} cannot be played: {why or 'YouTube gave no reason'}",
            code="video_unplayable",
        )
    if isinstance(exc, YouTubeRequestFailed):
        return Unavailable(
            f"YouTube refused the request: {clean(exc.reason, _REASON_CHARS)}",
            code="youtube_request_failed",
        )
    if isinstance(exc, FailedToCreateConsentCookie):
        return Unavailable(
            "YouTube's cookie consent page could not be passed", code="youtube_consent"
        )
    if isinstance(exc, YouTubeDataUnparsable):
        return _unreadable(video_id)
    return Unavailable(
        f"the transcript of video {video_id} could not be fetched ({type(exc).__name__})",
        code="youtube_failed",
    )


def _unreadable(video_id: str) -> Unavailable:
    return Unavailable(
        f"YouTube answered with pages AutoRAG cannot read for video {video_id} (its format"
        " may have changed: update youtube-transcript-api)",
        code="youtube_unreadable",
    )


def _network_reason(exc: requests.RequestException) -> str:
    # urllib3's MaxRetryError wraps the reason that says most (a name that does not
    # resolve, a refused connection).
    inner = exc.args[0] if exc.args else None
    reason = getattr(inner, "reason", None) or inner or type(exc).__name__
    return clean(str(reason), _REASON_CHARS)


def _reading_details(details: _Details) -> Callable[..., requests.Response]:
    """A response hook keeping the title from the ``player`` answer."""

    def hook(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        if response.request.method == "POST" and response.ok and _PLAYER_PATH in response.url:
            details.title = _title(response)
        return response

    return hook


def _title(response: requests.Response) -> str | None:
    try:
        data = response.json()
    except ValueError:
        return None  # the library reports the unreadable answer itself
    video = data.get("videoDetails") if isinstance(data, dict) else None
    title = video.get("title") if isinstance(video, dict) else None
    if not isinstance(title, str):
        return None
    return clean(title, TITLE_CHARS) or None


def clean(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, without control or direction marks."""
    return one_line(_CONTROL.sub(" ", text), limit)
