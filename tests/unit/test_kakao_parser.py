"""KakaoTalk exports: every layout and language, encodings, chunks and their identities."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from autorag.datasources.kakao import (
    KakaoChat,
    build_chunks,
    check_namespace_free,
    chunk_id,
    parse_kakao,
    read_export,
    validate_instance,
)
from autorag.errors import Conflict, InvalidInput, PayloadTooLarge
from autorag.sources import SourceRoot, is_datasource_id, normalize_source

PC_KO = """\
홍길동 님과 카카오톡 대화
저장한 날짜 : 2024-01-05 15:14:22

--------------- 2024년 1월 5일 금요일 ---------------
[홍길동] [오전 12:05] 자정 넘었네
[김철수] [오전 9:30] 좋은 아침
[홍길동] [오후 12:10] 점심 먹자
[김철수] [오후 3:14] 안녕하세요
회의는 목요일로 옮겼어요

장소는 등대 카페
김영희님이 들어왔습니다.
[김영희] [오후 3:20] 사진
[김영희] [오후 3:21] 파일: 예산안.pdf

--------------- 2024년 1월 6일 토요일 ---------------
[홍길동] [오후 11:59] 잘 자
"""

PC_EN = """\
Team with KakaoTalk Chats
Date Saved : 2024-01-05 15:14:22

--------------- Friday, January 5, 2024 ---------------
[Alice] [12:05 AM] past midnight
[Bob] [12:10 PM] lunch?
[Alice] [3:14 PM] hello
[Bob] [11:59 PM] good night
Bob left this chatroom.
[Alice] [11:59 PM] Photo
"""

MOBILE_KO_ANDROID = """\
가족 님과 카카오톡 대화
저장한 날짜 : 2024년 1월 6일 오전 9:00


2024년 1월 5일 오후 3:14
2024년 1월 5일 오후 3:14, 홍길동님이 김철수님을 초대했습니다.
2024년 1월 5일 오후 3:14, 홍길동 : 안녕하세요
2024년 1월 5일 오후 3:15, 김철수 : 네 반가워요 : 정말로
2024년 1월 5일 오후 3:16, 김철수 : <사진>
"""

MOBILE_KO_IOS = """\
가족 (3명)과 카카오톡 대화-1.txt
저장한 날짜 : 2024. 1. 6. 오전 9:00



2024년 1월 5일 금요일
2024. 1. 5. 오후 3:14: 홍길동님이 김철수님을 초대했습니다.
2024. 1. 5. 오후 3:14, 홍길동 : 안녕하세요
2024. 1. 5. 15:30, 김철수 : 24시간제
"""

MOBILE_EN = """\
KakaoTalk Chats with Team (3 people)-1.txt
Date Saved : Jan 6, 2024, 9:00 AM



Friday, January 5, 2024
Jan 5, 2024, 3:14 PM: Alice invited Bob.
Jan 5, 2024, 3:14 PM, Alice : hello
1/5/24, 3:15 PM, Bob : hi Alice
January 5, 2024 at 3:16 PM, Alice : how are you?
3:17pm, January 5, 2024, Bob : fine
"""


def _times(chat: KakaoChat) -> list[str]:
    return [f"{m.timestamp:%Y-%m-%d %H:%M}" for m in chat.messages]


def test_korean_pc_export() -> None:
    chat = parse_kakao(PC_KO)
    assert (chat.name, chat.format) == ("홍길동", "pc-ko")
    assert _times(chat)[:4] == [
        "2024-01-05 00:05",  # 오전 12 is midnight
        "2024-01-05 09:30",
        "2024-01-05 12:10",  # 오후 12 is noon
        "2024-01-05 15:14",
    ]
    assert [m.sender for m in chat.messages[:4]] == ["홍길동", "김철수", "홍길동", "김철수"]
    assert _times(chat)[-1] == "2024-01-06 23:59"  # the date line moved the day on


def test_english_pc_export() -> None:
    chat = parse_kakao(PC_EN)
    assert (chat.name, chat.format) == ("Team", "pc-en")
    assert _times(chat)[:4] == [
        "2024-01-05 00:05",
        "2024-01-05 12:10",
        "2024-01-05 15:14",
        "2024-01-05 23:59",
    ]
    assert [m.text for m in chat.messages[:3]] == ["past midnight", "lunch?", "hello"]


def test_korean_mobile_exports() -> None:
    android = parse_kakao(MOBILE_KO_ANDROID)
    assert (android.name, android.format) == ("가족", "mobile-ko")
    assert [(m.sender, m.text, m.kind) for m in android.messages] == [
        ("", "홍길동님이 김철수님을 초대했습니다.", "system"),
        ("홍길동", "안녕하세요", "text"),
        ("김철수", "네 반가워요 : 정말로", "text"),  # only the first " : " ends the sender
        ("김철수", "<사진>", "media"),
    ]
    assert _times(android)[0] == "2024-01-05 15:14"
    ios = parse_kakao(MOBILE_KO_IOS)
    assert (ios.name, ios.format) == ("가족 (3명)", "mobile-ko")
    assert [(m.sender, m.kind) for m in ios.messages] == [
        ("", "system"),
        ("홍길동", "text"),
        ("김철수", "text"),
    ]
    assert _times(ios) == ["2024-01-05 15:14", "2024-01-05 15:14", "2024-01-05 15:30"]


def test_english_mobile_export() -> None:
    chat = parse_kakao(MOBILE_EN)
    assert (chat.name, chat.format) == ("Team (3 people)", "mobile-en")
    assert [(m.sender, m.text) for m in chat.messages] == [
        ("", "Alice invited Bob."),
        ("Alice", "hello"),
        ("Bob", "hi Alice"),
        ("Alice", "how are you?"),
        ("Bob", "fine"),
    ]
    assert _times(chat) == [
        "2024-01-05 15:14",
        "2024-01-05 15:14",
        "2024-01-05 15:15",
        "2024-01-05 15:16",
        "2024-01-05 15:17",
    ]


def test_multi_line_messages_keep_their_lines() -> None:
    chat = parse_kakao(PC_KO)
    assert chat.messages[3].text == "안녕하세요\n회의는 목요일로 옮겼어요\n장소는 등대 카페"
    android = parse_kakao(
        "2024년 1월 5일 오후 3:14, 홍길동 : 첫 줄\n\n둘째 줄\nDate: not a header here\n"
    )
    assert android.messages[0].text == "첫 줄\n둘째 줄\nDate: not a header here"


def test_system_lines_and_attachments() -> None:
    chat = parse_kakao(PC_KO)
    joined = chat.messages[4]
    assert (joined.sender, joined.text, joined.kind) == ("", "김영희님이 들어왔습니다.", "system")
    assert joined.timestamp == chat.messages[3].timestamp  # a PC system line has no time
    assert [(m.text, m.kind) for m in chat.messages[5:7]] == [
        ("사진", "media"),
        ("파일: 예산안.pdf", "text"),  # a file name is worth finding
    ]
    english = parse_kakao(PC_EN)
    assert [(m.text, m.kind) for m in english.messages[-2:]] == [
        ("Bob left this chatroom.", "system"),
        ("Photo", "media"),
    ]


def test_chunks_format_lines_and_skip_attachments() -> None:
    chunks = build_chunks(parse_kakao(PC_KO), "family", max_chars=1000)
    assert chunks[2].record.text.splitlines() == [
        "2024-01-05 15:14 김철수: 안녕하세요",
        "회의는 목요일로 옮겼어요",
        "장소는 등대 카페",
        "2024-01-05 15:14 김영희님이 들어왔습니다.",
        "2024-01-05 15:21 김영희: 파일: 예산안.pdf",  # the photo before it is left out
    ]
    first = chunks[0].record
    assert first.text == "2024-01-05 00:05 홍길동: 자정 넘었네"
    assert first.title == "KakaoTalk 홍길동 — 2024-01-05"
    assert first.doc_date == datetime(2024, 1, 5, 0, 5, tzinfo=UTC)
    assert first.doc_type == "txt"


def test_chunks_break_at_days_silences_and_size() -> None:
    # PC_KO: 00:05 | 09:30 (a silence of over 3 hours) | 12:10 | 15:14 ... | next day.
    chunks = build_chunks(parse_kakao(PC_KO), "family", max_chars=1000)
    assert [c.record.text.splitlines()[0][:16] for c in chunks] == [
        "2024-01-05 00:05",
        "2024-01-05 09:30",
        "2024-01-05 15:14",
        "2024-01-06 23:59",
    ]
    lines = "".join(f"2024. 1. 5. 오후 3:{m:02d}, A : message number {m}\n" for m in range(40))
    small = build_chunks(parse_kakao(lines), "x", max_chars=200)
    assert len(small) > 1
    assert all(len(c.record.text) <= 200 for c in small)
    assert sum(c.messages for c in small) == 40


def test_chunk_ids_are_sequential_stable_and_canonical() -> None:
    chat = parse_kakao(PC_KO)
    first = build_chunks(chat, "family", max_chars=1000)
    again = build_chunks(parse_kakao(PC_KO), "family", max_chars=1000)
    ids = [c.record.source_id for c in first]
    assert ids == [f"/kakao/family/chunks/chunk-{n}" for n in range(1, len(first) + 1)]
    assert [c.number for c in first] == list(range(1, len(first) + 1))
    assert [(c.record.source_id, c.record.content_hash) for c in again] == [
        (c.record.source_id, c.record.content_hash) for c in first
    ]
    for source_id in ids:
        assert normalize_source(source_id, []) == source_id
        assert is_datasource_id(source_id)
        assert not source_id.startswith("kakao:")


def test_a_longer_export_keeps_earlier_chunks() -> None:
    separator = "--------------- 2024년 1월 7일 일요일 ---------------"
    next_day = f"{separator}\n[홍길동] [오전 8:00] 일어나\n"
    longer = PC_KO + "[김철수] [오후 11:59] 너도\n" + next_day
    before = build_chunks(parse_kakao(PC_KO), "family", max_chars=1000)
    after = build_chunks(parse_kakao(longer), "family", max_chars=1000)
    assert len(after) == len(before) + 1
    kept = [(c.record.source_id, c.record.content_hash) for c in before[:-1]]
    assert [(c.record.source_id, c.record.content_hash) for c in after[: len(kept)]] == kept
    assert after[len(before) - 1].record.text.endswith("김철수: 너도")  # the last one grew


def test_retired_colon_scheme_is_rejected() -> None:
    roots = [SourceRoot("docs", "/home/me/docs")]
    for source in ("kakao:family/alice/chunk-1", "kakao:/family/chunks/chunk-1"):
        assert normalize_source(source, []) is None
        assert normalize_source(source, roots) is None
        assert not is_datasource_id(source)


@pytest.mark.parametrize(
    "instance", ["", "Family", "a b", "a/b", "..", "-x", "kakao:x", "é", "x" * 65, "a\\b"]
)
def test_bad_instance_names_are_refused(instance: str) -> None:
    with pytest.raises(InvalidInput, match="instance"):
        validate_instance(instance)
    with pytest.raises(InvalidInput):
        chunk_id(instance, 1)


def test_good_instance_names() -> None:
    for instance in ("family", "work-2024", "a_b", "0", "x" * 64):
        assert chunk_id(instance, 3) == f"/kakao/{instance}/chunks/chunk-3"


def test_a_search_path_in_the_kakao_namespace_is_refused() -> None:
    check_namespace_free([SourceRoot("docs", "/home/me/docs")])
    with pytest.raises(Conflict, match="/kakao/"):
        check_namespace_free([SourceRoot("kakao", "/home/me/kakao")])


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("utf-8", "utf-8"),
        ("utf-8-sig", "utf-8-sig"),
        ("utf-16", "utf-16"),  # Windows PC exports: UTF-16 LE with a BOM
        ("utf-16-le", "utf-16-le"),  # no BOM
        ("cp949", "cp949"),  # old Windows exports
    ],
)
def test_encodings_are_detected(tmp_path: Path, encoding: str, expected: str) -> None:
    path = tmp_path / "chat.txt"
    path.write_bytes(PC_KO.replace("\n", "\r\n").encode(encoding))
    text, found = read_export(path, max_bytes=1 << 20)
    assert found == expected
    assert parse_kakao(text) == parse_kakao(PC_KO)


def test_euc_kr_text_reads_as_cp949(tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    path.write_bytes(MOBILE_KO_ANDROID.encode("euc_kr"))
    text, found = read_export(path, max_bytes=1 << 20)
    assert found == "cp949"
    assert parse_kakao(text).messages[1].text == "안녕하세요"


def test_files_over_the_size_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    path.write_text(PC_KO)
    with pytest.raises(PayloadTooLarge, match="limit"):
        read_export(path, max_bytes=100)


def test_unreadable_and_binary_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read"):
        read_export(tmp_path / "missing.txt", max_bytes=1 << 20)
    blob = tmp_path / "blob.txt"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InvalidInput):
        text, _ = read_export(blob, max_bytes=1 << 20)
        parse_kakao(text, source=str(blob))


def test_a_text_that_is_no_export_names_the_file_and_line() -> None:
    notes = "Shopping list\n\nmilk\neggs\n"
    with pytest.raises(InvalidInput) as caught:
        parse_kakao(notes, source="/tmp/notes.txt")
    assert caught.value.message == (
        "/tmp/notes.txt is not a KakaoTalk chat export: line 1 is neither a header, a date"
        " nor a message: 'Shopping list'"
    )
    with pytest.raises(InvalidInput, match=r"line 3 is neither.*'hello there'"):
        parse_kakao("홍길동 님과 카카오톡 대화\n\nhello there\n", source="chat.txt")


def test_exports_without_messages_are_refused() -> None:
    for text in ("", "홍길동 님과 카카오톡 대화\n저장한 날짜 : 2024-01-05 15:14:22\n"):
        with pytest.raises(InvalidInput, match="holds no KakaoTalk messages"):
            parse_kakao(text, source="empty.txt")
    with pytest.raises(InvalidInput, match="line 1 is a message before any date line"):
        parse_kakao("[홍길동] [오후 3:14] 안녕\n", source="cut.txt")
    with pytest.raises(InvalidInput, match="line 2 is text before the first message"):
        parse_kakao("2024년 1월 5일 금요일\nloose text\n", source="cut.txt")


def test_impossible_dates_are_not_date_lines() -> None:
    with pytest.raises(InvalidInput, match="line 1"):
        parse_kakao("--------------- 2024년 2월 30일 금요일 ---------------\n")
    with pytest.raises(InvalidInput, match="line 1"):
        parse_kakao("2024년 1월 5일 오후 13:14, 홍길동 : 안녕\n")
