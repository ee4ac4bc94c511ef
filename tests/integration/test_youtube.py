"""YouTube videos as documents, end to end, with YouTube answered from recorded files.

The network is not reachable here: the transcript library's ``requests`` session gets a
transport adapter (tests/doubles/youtube.py) answering the exact requests it makes (the
watch page, the innertube ``player`` call, the timed-text track) from files under
tests/fixtures/youtube/, reconstructed from the library's parser in the shape of
YouTube's real answers. Everything else is real: youtube-transcript-api itself, the
server on loopback (the recording given to it as the route's session dependency), the
catalog, the local embedding model, search and the extractive chat model; the CLI runs
through its entry point, and its unreachable-YouTube case through the real session.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp
from tests.cli import autorag
from tests.doubles.youtube import RecordedYouTube, recorded_session
from tests.integration.conftest import ApiServer
from tests.workspaces import new_workspace

from autorag.api.app import create_app
from autorag.api.routes.youtube import transcript_session
from autorag.auth import service as auth
from autorag.context import open_context
from autorag.errors import Unavailable
from autorag.youtube import service
from autorag.youtube.transcripts import NoTranscript, fetch_transcript, youtube_session
from autorag.youtube.urls import passage_second, stamp

PASSWORD = "a long enough password"
TEA = "kT3aHx9_wQo"  # English and Spanish captions, and English auto-generated ones
TEA_TITLE = "How to Whisk Matcha — A Japanese Tea Ceremony"
DISABLED = "nOcApTi0nS1"  # captions turned off
GERMAN = "dEfRoNlY_42"  # German captions and French auto-generated ones only
GONE = "gOnEvIdEo00"  # unavailable
URL = "/api/workspaces/default/documents/youtube"


@dataclass
class Api:
    server: ApiServer
    token: str
    youtube: RecordedYouTube

    def call(self, method: str, path: str, **kw: Any) -> Any:
        return self.server.call(method, path, self.token, **kw)

    def add(self, url: str, status: int, **body: Any) -> dict[str, Any]:
        response = self.call("POST", URL, json={"url": url, **body})
        assert response.status_code == status, response.text
        answer: dict[str, Any] = response.json()
        return answer


@pytest.fixture(scope="module")
def api(
    tmp_path_factory: pytest.TempPathFactory, serve_asgi: Callable[[ASGIApp], str]
) -> Iterator[Api]:
    workspace = new_workspace(tmp_path_factory.mktemp("youtube") / "kb")
    context = open_context(workspace)
    try:
        auth.create_user(context.catalog, "root", PASSWORD, "admin")
    finally:
        context.close()
    youtube = RecordedYouTube()
    app = create_app(workspace)
    app.dependency_overrides[transcript_session] = lambda: recorded_session(youtube)
    server = ApiServer(serve_asgi(app), app, workspace, None)
    login = server.call("POST", "/api/auth/login", json={"username": "root", "password": PASSWORD})
    yield Api(server, login.json()["access_token"], youtube)


# -- the adapter: youtube-transcript-api against the recorded answers ------------------------
def test_language_preference_is_honoured() -> None:
    youtube = RecordedYouTube()
    make = recorded_session(youtube)
    spanish = fetch_transcript(make(), TEA, ["es", "en"])
    assert (spanish.track.language_code, spanish.track.generated) == ("es", False)
    assert spanish.title == TEA_TITLE and spanish.snippets[0].text.startswith("Bienvenidos")
    english = fetch_transcript(make(), TEA, ["fr", "en"])  # no French: the next one
    assert english.track.language_code == "en" and not english.track.generated
    # The caption's double-escaped entities come out as text: it's, &.
    texts = [s.text for s in english.snippets]
    assert "Today we prepare matcha the way it's done" in texts
    assert any("the bowl & its glaze" in t for t in texts)
    assert youtube.asked == [
        ("GET", "/watch", TEA, None), ("POST", "/youtubei/v1/player", TEA, None),
        ("GET", "/api/timedtext", TEA, "es"),
        ("GET", "/watch", TEA, None), ("POST", "/youtubei/v1/player", TEA, None),
        ("GET", "/api/timedtext", TEA, "en"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("video", "code", "words"),
    [
        (DISABLED, "transcripts_disabled", "uploader turned captions off"),
        (GERMAN, "no_transcript_in_languages",
         "no transcript in en; it has: de (German), fr (French (auto-generated))"),
        (GONE, "video_unavailable", "is unavailable"),
        ("tOoMaNyReQs", "youtube_blocked", "YouTube blocked"),  # 429 Too Many Requests
        ("cApTcHa_p4g", "youtube_blocked", "YouTube blocked"),  # the reCAPTCHA page
        ("bOtChEcK_01", "youtube_blocked", "YouTube blocked"),  # "confirm you're not a bot"
    ],
)  # fmt: skip
def test_no_transcript_is_a_clear_422(video: str, code: str, words: str) -> None:
    with pytest.raises(NoTranscript) as refused:
        fetch_transcript(recorded_session(RecordedYouTube())(), video, ["en"])
    assert (refused.value.status, refused.value.code) == (422, code)
    assert words in refused.value.message and video in refused.value.message


def test_unreachable_youtube_is_unavailable() -> None:
    """The real session (its time limit adapter included), through a proxy that refuses."""
    session = youtube_session(5)
    session.trust_env = False
    session.proxies = {"https": f"http://127.0.0.1:{_closed_port()}"}
    with pytest.raises(Unavailable) as failed:
        fetch_transcript(session, TEA, ["en"])
    assert failed.value.code == "youtube_unreachable" and failed.value.status == 503
    assert failed.value.message.startswith("YouTube could not be reached: ")


# -- the API on a real server ------------------------------------------------------------
@pytest.fixture(scope="module")
def tea(api: Api) -> dict[str, Any]:
    """The video with two caption tracks, added once for the module (English)."""
    return api.add(f"https://youtu.be/{TEA}", 201)


def test_added_with_its_title_and_identity(tea: dict[str, Any]) -> None:
    assert (tea["sourceId"], tea["title"], tea["videoId"]) == (
        f"/youtube/videos/{TEA}",
        TEA_TITLE,
        TEA,
    )
    assert (tea["status"], tea["outcome"], tea["languageCode"]) == ("ready", "created", "en")
    assert tea["origin"] == "datasource" and tea["chunks"] >= 2 and tea["paragraphs"] >= 3
    assert tea["link"] == f"https://www.youtube.com/watch?v={TEA}"


def test_search_and_chat_cite_the_second(api: Api, tea: dict[str, Any]) -> None:
    search = api.call("POST", "/api/workspaces/default/search",
                      json={"query": "chasen bamboo whisk eighty prongs", "k": 3})  # fmt: skip
    assert search.status_code == 200, search.text
    hit = search.json()["hits"][0]
    assert hit["sourceId"] == tea["sourceId"] and "eighty prongs" in hit["snippet"]
    second = passage_second(hit["snippet"])
    assert second is not None and 0 < second <= 95  # "…the chasen, has eighty prongs" at 1:35
    assert hit["snippet"].startswith(stamp(second))
    assert hit["link"] == f"https://www.youtube.com/watch?v={TEA}&t={second}s"

    question = {"message": "How many prongs does the chasen bamboo whisk have?"}
    chat = api.call("POST", "/api/workspaces/default/chat", json=question)
    assert chat.status_code == 200, chat.text
    cited = [s for s in chat.json()["sources"] if s["sourceId"] == tea["sourceId"]]
    assert cited, chat.json()["sources"]
    for source in cited:
        at = passage_second(source["snippet"])
        assert at is not None and source["link"] == f"https://www.youtube.com/watch?v={TEA}&t={at}s"


def test_adding_again_updates_the_same_document(api: Api, tea: dict[str, Any]) -> None:
    spanish = api.add(TEA, 200, languages=["es"])
    assert (spanish["id"], spanish["outcome"], spanish["languageCode"]) == (
        tea["id"],
        "updated",
        "es",
    )
    back = api.add(f"https://www.youtube.com/watch?v={TEA}", 200)
    assert (back["id"], back["outcome"], back["languageCode"]) == (tea["id"], "updated", "en")
    again = api.add(f"https://m.youtube.com/watch?v={TEA}&feature=share", 200)
    assert (again["id"], again["outcome"]) == (tea["id"], "unchanged")
    listed = api.call("GET", "/api/workspaces/default/documents?limit=500").json()["items"]
    assert [d["sourceId"] for d in listed].count(f"/youtube/videos/{TEA}") == 1


@pytest.mark.parametrize(
    ("url", "status", "code"),
    [
        (f"https://youtu.be/{DISABLED}", 422, "transcripts_disabled"),
        (f"https://www.youtube.com/shorts/{GERMAN}", 422, "no_transcript_in_languages"),
        (f"https://www.youtube.com/embed/{GONE}", 422, "video_unavailable"),
        (f"https://vimeo.com/{TEA}", 400, "invalid_youtube_url"),
    ],
)
def test_refusals_are_problem_json(api: Api, url: str, status: int, code: str) -> None:
    refused = api.add(url, status)
    assert refused["code"] == code and refused["status"] == status and refused["detail"]


# -- the CLI -------------------------------------------------------------------------------
def test_cli_adds_a_video(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``autorag youtube add`` and ``autorag add URL``, YouTube answered from the recording."""
    workspace = new_workspace(tmp_path / "kb")
    youtube = RecordedYouTube()
    monkeypatch.setattr(service, "youtube_session", lambda timeout_s: recorded_session(youtube)())
    ws = str(workspace.root)
    made = autorag("-w", ws, "youtube", "add", f"https://youtu.be/{TEA}", "-l", "es", "--json")
    assert made.returncode == 0, made.stderr
    assert '"outcome": "created"' in made.stdout and '"languageCode": "es"' in made.stdout
    again = autorag("-w", ws, "add", f"https://www.youtube.com/watch?v={TEA}")
    assert again.returncode == 0, again.stderr
    assert f"updated: {TEA_TITLE}" in again.stdout and "en (English)" in again.stdout
    refused = autorag("-w", ws, "youtube", "add", GERMAN, "--language", "es")
    assert refused.returncode == 2
    assert "no transcript in es; it has: de (German)" in " ".join(refused.stderr.split())


def test_cli_says_when_youtube_cannot_be_reached(tmp_path: Path) -> None:
    """The real session, through a proxy that refuses: exit 5 and the reason."""
    workspace = new_workspace(tmp_path / "kb")
    proxy = f"http://127.0.0.1:{_closed_port()}"
    env: dict[str, str | None] = {"HTTPS_PROXY": proxy, "https_proxy": proxy,
                                  "NO_PROXY": None, "no_proxy": None}  # fmt: skip
    failed = autorag("-w", str(workspace.root), "add", f"https://youtu.be/{TEA}", env=env)
    assert failed.returncode == 5
    assert "YouTube could not be reached" in failed.stderr


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
