"""YouTube, as youtube-transcript-api meets it, answered from files: a ``requests``
transport adapter mounted on ``https://www.youtube.com`` for the library's session.

The network is not reachable where the tests run, so nothing here was captured from
YouTube: the files under ``tests/fixtures/youtube/`` were reconstructed from the
library's parser (``youtube_transcript_api/_transcripts.py``, 1.2.x) in the shape of
YouTube's real answers: the watch page carrying ``INNERTUBE_API_KEY``, the innertube
``player`` answer with ``playabilityStatus``, ``captions`` and ``videoDetails``, and
the timed-text XML of each caption track. The adapter answers exactly the requests the
library makes, checks what it must carry (the API key, the video id, the ANDROID client
context), and records them; anything else is a 404, as from YouTube.

Per video (its folder): ``player.json``, ``timedtext.<lang>.xml``; the watch page is
the shared ``watch.html`` unless the folder holds ``watch.html`` (a 200 page, such as
the reCAPTCHA page) or ``watch.429.html`` (answered with 429 Too Many Requests).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "youtube"
API_KEY = "AIzaSyAO_FJ2SlqU8Q4STEHLGCilw_Y9_11qcW8"  # the one in watch.html


@dataclass
class RecordedYouTube(BaseAdapter):
    """Answers the library's three requests from ``FIXTURES``; ``asked`` keeps what
    it was asked, in order, as ``(method, path, video id, language)``."""

    root: Path = FIXTURES
    asked: list[tuple[str, str, str | None, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        assert request.url is not None
        url = urlsplit(request.url)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if request.method == "GET" and url.path == "/watch":
            return self._watch(request, query.get("v", ""))
        if request.method == "POST" and url.path == "/youtubei/v1/player":
            return self._player(request, query.get("key"))
        if request.method == "GET" and url.path == "/api/timedtext":
            return self._timedtext(request, query)
        self.asked.append((str(request.method), url.path, None, None))
        return _response(request, 404, b"<html>404 Not Found</html>", "text/html")

    def close(self) -> None:
        pass

    def _watch(self, request: requests.PreparedRequest, video: str) -> requests.Response:
        self.asked.append(("GET", "/watch", video, None))
        folder = self.root / video
        if (folder / "watch.429.html").is_file():
            return _response(request, 429, (folder / "watch.429.html").read_bytes(), "text/html")
        page = (
            folder / "watch.html" if (folder / "watch.html").is_file() else self.root / "watch.html"
        )
        return _response(request, 200, page.read_bytes().replace(b"VIDEO_ID", video.encode()),
                         "text/html; charset=utf-8")  # fmt: skip

    def _player(self, request: requests.PreparedRequest, key: str | None) -> requests.Response:
        body = json.loads(request.body or b"{}")
        video = body.get("videoId", "")
        self.asked.append(("POST", "/youtubei/v1/player", video, None))
        if (
            key != API_KEY
            or body.get("context", {}).get("client", {}).get("clientName") != "ANDROID"
        ):
            error = {
                "error": {
                    "code": 400,
                    "message": "API key not valid.",
                    "status": "INVALID_ARGUMENT",
                }
            }
            return _response(request, 400, json.dumps(error).encode(), "application/json")
        answer = self.root / video / "player.json"
        if not answer.is_file():
            # What the player answers for an id that never existed.
            answer = self.root / "gOnEvIdEo00" / "player.json"
        return _response(request, 200, answer.read_bytes(), "application/json; charset=UTF-8")

    def _timedtext(
        self, request: requests.PreparedRequest, query: dict[str, str]
    ) -> requests.Response:
        video, language = query.get("v", ""), query.get("lang", "")
        self.asked.append(("GET", "/api/timedtext", video, language))
        track = self.root / video / f"timedtext.{language}.xml"
        if "fmt" in query or not track.is_file():
            return _response(request, 404, b"", "text/html")
        return _response(request, 200, track.read_bytes(), "text/xml; charset=UTF-8")


def recorded_session(youtube: RecordedYouTube) -> Callable[[], requests.Session]:
    """Makes sessions whose requests to YouTube the recording answers."""

    def make() -> requests.Session:
        session = requests.Session()
        session.mount("http://", _Refused())  # nothing else may be reached
        session.mount("https://", _Refused())
        session.mount("https://www.youtube.com/", youtube)  # the longest prefix wins
        return session

    return make


class _Refused(BaseAdapter):
    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        raise requests.ConnectionError(f"the test allows no request to {request.url}")

    def close(self) -> None:
        pass


def _response(
    request: requests.PreparedRequest, status: int, body: bytes, content_type: str
) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}[
        status
    ]
    response.headers = CaseInsensitiveDict({"Content-Type": content_type})
    response._content = body
    response.encoding = "utf-8"
    response.url = request.url or ""
    response.request = request
    return response
