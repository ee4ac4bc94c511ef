"""YouTube URLs: the shapes people paste, what is refused, and the links citations open."""

from __future__ import annotations

import pytest

from autorag.errors import InvalidInput
from autorag.sources import is_datasource_id, normalize_source
from autorag.youtube.service import render
from autorag.youtube.transcripts import Snippet
from autorag.youtube.urls import (
    citation_link,
    is_youtube_url,
    passage_second,
    source_id,
    video_id,
)

ID = "kT3aHx9_wQo"


@pytest.mark.parametrize(
    "text",
    [
        ID,
        f"https://www.youtube.com/watch?v={ID}",
        f"https://www.youtube.com/watch?feature=share&v={ID}&t=42s",
        f"http://youtube.com/watch?v={ID}",
        f"https://m.youtube.com/watch?v={ID}",
        f"https://youtu.be/{ID}",
        f"https://youtu.be/{ID}?si=abc",
        f"youtu.be/{ID}",
        f"www.youtube.com/watch?v={ID}",
        f"https://www.youtube.com/shorts/{ID}",
        f"https://www.youtube.com/embed/{ID}?start=10",
        f"https://www.youtube.com/live/{ID}/",
        f"  https://WWW.YouTube.com/watch?v={ID}  ",
    ],
)
def test_accepted_shapes(text: str) -> None:
    assert video_id(text) == ID


@pytest.mark.parametrize(
    "text",
    [
        "",
        "kT3aHx9_wQ",  # 10 characters
        f"https://evil.example/watch?v={ID}",
        f"https://www.youtube.com.evil.example/watch?v={ID}",
        f"https://user:pw@www.youtube.com/watch?v={ID}",
        f"https://www.youtube.com:8443/watch?v={ID}",
        f"ftp://www.youtube.com/watch?v={ID}",
        f"javascript:alert(1)//www.youtube.com/watch?v={ID}",
        f"https://www.youtube.com/watch?v={ID}x",
        f"https://www.youtube.com/playlist?list={ID}",
        f"https://www.youtube.com/channel/{ID}",
        "https://www.youtube.com/watch?v=../../etc",
        f"https://youtu.be/{ID}/more",
        f"file:///{ID}",
        "x" * 5000,
    ],
)
def test_refused_with_a_clear_reason(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        video_id(text)
    assert refused.value.code == "invalid_youtube_url" and "not a YouTube video" in str(
        refused.value
    )
    assert len(refused.value.message) < 400


def test_add_sends_urls_not_file_names_here() -> None:
    assert is_youtube_url(f"https://youtu.be/{ID}") and is_youtube_url(f"youtu.be/{ID}")
    assert not is_youtube_url(ID)  # a bare word given to `autorag add` is a file name
    assert not is_youtube_url("./docs") and not is_youtube_url("https://example.com/a")


def test_identity_is_a_datasource_id_never_a_url() -> None:
    sid = source_id(ID)
    assert sid == f"/youtube/videos/{ID}"
    assert normalize_source(sid, []) == sid and is_datasource_id(sid)


def test_every_chunk_opens_at_its_second() -> None:
    snippets = [Snippet(f"sentence number {i} of the talk.", i * 10.0) for i in range(400)]
    snippets.insert(10, Snippet("x" * 900, 45.0))  # a caption longer than a paragraph
    paragraphs = render(snippets, 333)
    assert all(len(p) <= 333 for p in paragraphs)
    assert paragraphs[0].startswith("[00:00] sentence number 0")
    assert any(p.startswith("[1:0") for p in paragraphs)  # past an hour
    for paragraph in paragraphs:
        second = passage_second(paragraph)
        assert second is not None
        link = citation_link(source_id(ID), paragraph)
        assert link == f"https://www.youtube.com/watch?v={ID}&t={second}s"
    assert passage_second("[1:02:03] words") == 3723
    # Starts that are no time keep the previous line's; each line fills a paragraph here.
    starts = [5.0, float("nan"), float("inf"), -3.0, 1e300, 8.0]
    odd = [Snippet(f"caption line number {n:03d}", start) for n, start in enumerate(starts)]
    heads = [paragraph.split("] ")[0] + "]" for paragraph in render(odd, 40)]
    assert heads == ["[00:05]"] * 5 + ["[00:08]"]
    assert citation_link(source_id(ID), "no heading") == f"https://www.youtube.com/watch?v={ID}"
    assert citation_link("/kakao/chat/chunks/chunk-1", "[00:10] words") is None
    assert citation_link("/youtube/videos/not-an-id", "[00:10] words") is None
