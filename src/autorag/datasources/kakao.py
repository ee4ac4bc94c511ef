"""KakaoTalk chat exports (``.txt``): parsed into messages, grouped into datasource chunks.

KakaoTalk writes a chat export in one of two layouts, each in the Korean or the English UI
language (and 12- or 24-hour time):

* PC (Windows/macOS): a date line per day and the sender and time in brackets::

      --------------- 2024년 1월 5일 금요일 ---------------
      [홍길동] [오후 3:14] 안녕하세요

* Mobile (Android/iOS): every message carries its full timestamp::

      2024년 1월 5일 오후 3:14, 홍길동 : 안녕하세요
      Jan 5, 2024, 3:14 PM, Alice : hello

A message's further lines follow it unprefixed. Each chunk of consecutive messages is one
datasource document ``/kakao/<instance>/chunks/chunk-N`` (seed 000); the retired
``kakao:`` colon scheme is never produced.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from charset_normalizer import from_bytes

from autorag.datasources.sync import DatasourceRecord, sync_namespace
from autorag.errors import Conflict, InvalidInput, PayloadTooLarge
from autorag.ingest.minsync import RefreshObserver, refresh_lock
from autorag.ingest.parsers.guards import human_size
from autorag.ingest.pipeline import IngestOutcome
from autorag.sources import SourceRoot

if TYPE_CHECKING:
    from autorag.context import AppContext

KIND = "kakao"
MessageKind = Literal["text", "system", "media"]
Layout = Literal["pc", "mobile"]

# A new chunk starts after this long a silence: it is a new conversation.
CONVERSATION_GAP = timedelta(hours=3)
_INSTANCE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_EXCERPT = 80  # characters of an offending line quoted in an error

# -- dates and times ---------------------------------------------------------------------
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_WEEKDAY_EN = r"(?:Mon|Tue(?:s)?|Wed(?:nes)?|Thu(?:rs)?|Fri|Sat(?:ur)?|Sun)(?:day)?\.?"
_WEEKDAY_KO = r"[월화수목금토일]요일"
# Each form names its parts y, m or mon, d; Python forbids reusing names across one pattern.
_DATE_FORMS = (
    rf"(?P<y>\d{{4}})년\s*(?P<m>\d{{1,2}})월\s*(?P<d>\d{{1,2}})일(?:\s*{_WEEKDAY_KO})?",
    r"(?P<y>\d{4})\.\s*(?P<m>\d{1,2})\.\s*(?P<d>\d{1,2})\.?",
    r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})",
    rf"(?:{_WEEKDAY_EN},?\s*)?(?P<mon>{_MONTH})\s+(?P<d>\d{{1,2}}),?\s+(?P<y>\d{{4}})",
    rf"(?:{_WEEKDAY_EN},?\s*)?(?P<d>\d{{1,2}})\s+(?P<mon>{_MONTH}),?\s+(?P<y>\d{{4}})",
    r"(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})",  # US order, as KakaoTalk writes it
)
_TIME = (
    r"(?P<time>(?:오전|오후)\s*\d{1,2}:\d{2}(?::\d{2})?"
    r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp]\.?\s?[Mm]\.?)?)"
)
_TIME_PARTS = re.compile(
    r"(?P<ko>오전|오후)?\s*(?P<h>\d{1,2}):(?P<m>\d{2})(?::\d{2})?"
    r"\s*(?:(?P<en>[AaPp])\.?\s?[Mm]\.?)?"
)
# The mobile layouts: date then time ("2024. 1. 5. 오후 3:14", "Jan 5, 2024, 3:14 PM",
# "January 5, 2024 at 3:14 PM") or, in old Android exports, time then date.
_STAMPS = tuple(
    re.compile(pattern)
    for form in _DATE_FORMS
    for pattern in (rf"{form}(?:,|\s+at)?\s+{_TIME}", rf"{_TIME},\s*{form}")
)
_DATES = tuple(re.compile(form) for form in _DATE_FORMS)
_PC_SEPARATOR = re.compile(r"-{3,}\s*(?P<date>.+?)\s*-{3,}")
_PC_MESSAGE = re.compile(rf"\[(?P<sender>.+?)\] \[{_TIME}\](?:\s+(?P<text>.*))?")
# What follows a mobile timestamp: ", Sender : text", or ": event" / ", event" for system.
_MOBILE_SENDER = re.compile(r"(?P<sender>.+?) :(?:\s+(?P<text>.*))?")

# -- headers, system lines, media placeholders --------------------------------------------
_HEADERS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"(?P<name>.+?) 님과 카카오톡 대화(?:-\d+)?(?:\.txt)?",
        r"(?P<name>.+?)(?:과|와) 카카오톡 대화(?:-\d+)?(?:\.txt)?",
        r"(?P<name>.+?) with KakaoTalk Chats",
        r"KakaoTalk Chats with (?P<name>.+?)(?:-\d+)?(?:\.txt)?",
        r"(?:Kakao)?Talk_[^/\\]*\.txt",
        r"(?:저장한 날짜|Date Saved)\s*:.*",
    )
)
# PC exports write joins, leaves and invitations as bare lines, without sender or time.
_PC_SYSTEM = re.compile(
    r".+님이 (?:들어왔습니다|나갔습니다)\.?"
    r"|.+님(?:이|을) .*초대(?:했|하였)습니다\.?"
    r"|.+님을 내보냈습니다\.?"
    r"|.+ (?:joined|left) this chatroom\.?"
    r"|.+ invited .+\."
    r"|.+ has been removed from this chatroom\.?"
)
# Attachments and deletions leave a placeholder with nothing to search for.
_MEDIA = re.compile(
    r"[<(]?(?:사진|동영상|이모티콘|음성메시지|photos?|videos?|emoticons?|stickers?"
    r"|voice (?:note|message)s?)[>)]?(?:\s*\d+\s*장)?"
    r"|(?:사진|photos?)\s*\d+\s*(?:장|photos?)?|\d+\s+photos"
    r"|삭제된 메시지입니다\.?|this message (?:has been|was) deleted\.?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class KakaoMessage:
    timestamp: datetime  # wall-clock time as the export shows it (exports carry no zone)
    sender: str  # "" for a system line
    text: str
    kind: MessageKind = "text"


@dataclass(frozen=True)
class KakaoChat:
    name: str | None  # from the export's header, when it has one
    layout: Layout
    language: Literal["ko", "en"]
    messages: list[KakaoMessage]

    @property
    def format(self) -> str:
        return f"{self.layout}-{self.language}"


@dataclass(frozen=True)
class KakaoChunk:
    number: int  # 1-based position in the export: chunk-N
    record: DatasourceRecord
    messages: int


@dataclass
class ImportReport:
    file: str
    instance: str
    chat: str
    format: str
    encoding: str
    messages: int = 0  # text messages and system lines, the indexed content
    media: int = 0  # attachment placeholders, counted but not indexed
    chunks: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    failures: list[IngestOutcome] = field(default_factory=list)


# -- identities ----------------------------------------------------------------------------
def validate_instance(instance: str) -> str:
    """The instance name, if it can be one path segment of a datasource identity."""
    if not _INSTANCE.fullmatch(instance):
        raise InvalidInput(
            f"instance {instance!r} is not a valid name: use 1-64 lowercase letters, digits,"
            " '-' or '_', starting with a letter or digit"
        )
    return instance


def namespace(instance: str) -> str:
    """``/kakao/<instance>/``: every identity of one imported chat lies under it."""
    return f"/{KIND}/{validate_instance(instance)}/"


def chunk_id(instance: str, number: int) -> str:
    return f"{namespace(instance)}chunks/chunk-{number}"


def check_namespace_free(roots: Sequence[SourceRoot]) -> None:
    """Refuse when a search path's virtual ids would also be ``/kakao/...``.

    Such ids would then name files under that folder, and policy and retrieval would treat
    chat chunks as files there.
    """
    for root in roots:
        if root.prefix == KIND:
            raise Conflict(
                f"the search path {root.path} uses the /{KIND}/ namespace of KakaoTalk"
                " imports; rename that folder or remove it from the search paths first"
            )


# -- reading -------------------------------------------------------------------------------
def read_export(path: Path, *, max_bytes: int) -> tuple[str, str]:
    """The export's text and the encoding it was read in.

    PC exports on Windows are UTF-16 (with a BOM) or, from old versions, CP949; mobile
    exports are UTF-8, with or without a BOM.
    """
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise PayloadTooLarge(
                f"{path} is {human_size(size)}, over the {human_size(max_bytes)} limit"
                " (ingest.max_file_mb)"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    text, encoding = decode_export(data, source=str(path))
    return text.replace("\r\n", "\n").replace("\r", "\n"), encoding


def decode_export(data: bytes, *, source: str) -> tuple[str, str]:
    """Decode by BOM, then strict UTF-8, then charset detection among Korean encodings."""
    for bom, encoding in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return _decode(data, encoding, source), encoding
    if data.count(b"\x00") > len(data) // 4:
        # UTF-16 without a BOM: ASCII characters put their NUL byte on one side.
        encoding = "utf-16-le" if data[1::2].count(0) > data[0::2].count(0) else "utf-16-be"
        return _decode(data, encoding, source), encoding
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    best = from_bytes(data, cp_isolation=["cp949", "euc_kr", "utf_16", "utf_8"]).best()
    if best is None:
        raise InvalidInput(f"{source} is not text in a known encoding (a binary file?)")
    # CP949 is the superset of EUC-KR that Windows really writes (똠, 햏, …).
    encoding = "cp949" if best.encoding in ("euc_kr", "cp949") else best.encoding
    return _decode(data, encoding, source), encoding


def _decode(data: bytes, encoding: str, source: str) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source} is not valid {encoding}: {exc.reason}") from exc
    if "\x00" in text:
        raise InvalidInput(f"{source} holds NUL characters: binary data, not a chat export")
    return text


# -- parsing -------------------------------------------------------------------------------
def parse_kakao(text: str, *, source: str = "<text>") -> KakaoChat:
    """Every message of an export, in order. ``InvalidInput`` for text that is not one."""
    parser = _Parser(source)
    for number, line in enumerate(text.split("\n"), start=1):
        parser.feed(number, line.strip().lstrip("\ufeff"))
    return parser.finish()


@dataclass
class _Draft:
    timestamp: datetime
    sender: str
    lines: list[str]
    kind: MessageKind

    def message(self) -> KakaoMessage | None:
        text = "\n".join(line for line in self.lines if line)
        if not text:
            return None
        kind: MessageKind = "media" if self.kind == "text" and _MEDIA.fullmatch(text) else self.kind
        return KakaoMessage(self.timestamp, self.sender, text, kind)


@dataclass
class _Parser:
    source: str
    name: str | None = None
    layout: Layout | None = None
    language: Literal["ko", "en"] = "en"
    day: date | None = None  # the PC layout's current date line
    drafts: list[_Draft] = field(default_factory=list)

    def feed(self, number: int, line: str) -> None:
        if not line:
            return  # blank lines separate days or pad messages; they carry nothing
        if self.layout is None and self._header(line):
            return
        if self.layout is None:
            detected = _detect_layout(line)
            if detected is None:
                raise self._offending(number, line, "neither a header, a date nor a message")
            self.layout, self.language = detected
        handled = self._pc(number, line) if self.layout == "pc" else self._mobile(line)
        if not handled:
            self._continue(number, line)

    def finish(self) -> KakaoChat:
        messages = [m for m in (d.message() for d in self.drafts) if m is not None]
        if self.layout is None or not messages:
            raise InvalidInput(f"{self.source} holds no KakaoTalk messages")
        return KakaoChat(self.name, self.layout, self.language, messages)

    def _header(self, line: str) -> bool:
        for pattern in _HEADERS:
            match = pattern.fullmatch(line)
            if match:
                name = match.groupdict().get("name")
                if name and self.name is None:
                    self.name = name.strip()
                return True
        return False

    def _pc(self, number: int, line: str) -> bool:
        separator = _PC_SEPARATOR.fullmatch(line)
        day = _parse_date(separator.group("date")) if separator else None
        if day is not None:
            self.day = day
            return True
        match = _PC_MESSAGE.fullmatch(line)
        clock = _parse_time(match.group("time")) if match else None
        if match and clock is not None:
            if self.day is None:
                raise self._offending(number, line, "a message before any date line")
            stamp = datetime.combine(self.day, clock)
            self._add(stamp, match.group("sender"), match.group("text") or "", "text")
            return True
        if _PC_SYSTEM.fullmatch(line) and (self.drafts or self.day):
            self._add(self._last_time(), "", line, "system")
            return True
        return False

    def _mobile(self, line: str) -> bool:
        found = _match_stamp(line)
        if found is None:
            return _parse_date(line) is not None  # an iOS day line: "2024년 1월 5일 금요일"
        stamp, rest = found
        if not rest:
            return True  # an Android day line: the first message's timestamp, alone
        body = rest[1:].strip()
        sender = _MOBILE_SENDER.fullmatch(body) if rest[0] == "," else None
        if sender:
            self._add(stamp, sender.group("sender").strip(), sender.group("text") or "", "text")
        else:
            self._add(stamp, "", body, "system")
        return True

    def _continue(self, number: int, line: str) -> None:
        if not self.drafts:
            raise self._offending(number, line, "text before the first message")
        self.drafts[-1].lines.append(line)

    def _add(self, stamp: datetime, sender: str, text: str, kind: MessageKind) -> None:
        self.drafts.append(_Draft(stamp, sender, [text.strip()], kind))

    def _last_time(self) -> datetime:
        if self.drafts and (self.day is None or self.drafts[-1].timestamp.date() == self.day):
            return self.drafts[-1].timestamp
        assert self.day is not None  # _pc only adds system lines after a date or message
        return datetime.combine(self.day, time())

    def _offending(self, number: int, line: str, why: str) -> InvalidInput:
        excerpt = line if len(line) <= _EXCERPT else line[:_EXCERPT] + "…"
        return InvalidInput(
            f"{self.source} is not a KakaoTalk chat export: line {number} is {why}: {excerpt!r}"
        )


def _detect_layout(line: str) -> tuple[Layout, Literal["ko", "en"]] | None:
    """The layout of the first date or message line, and its UI language."""
    if message := _PC_MESSAGE.fullmatch(line):
        return "pc", _language(message.group("time"))
    separator = _PC_SEPARATOR.fullmatch(line)
    if separator and _parse_date(separator.group("date")):
        return "pc", _language(separator.group("date"))
    if stamp := _match_stamp(line):
        return "mobile", _language(line[: len(line) - len(stamp[1])])
    if _parse_date(line) is not None:
        return "mobile", _language(line)
    return None


def _language(stamp: str) -> Literal["ko", "en"]:
    # Only the date and time tell: names and messages are Korean in English exports too.
    return "ko" if re.search(r"[년월일]|오전|오후|\d{4}\.\s*\d", stamp) else "en"


def _match_stamp(line: str) -> tuple[datetime, str] | None:
    """A mobile line's leading timestamp and what follows it (``""``, ``", …"``, ``": …"``)."""
    for pattern in _STAMPS:
        match = pattern.match(line)
        if match is None:
            continue
        rest = line[match.end() :]
        if rest and rest[0] not in ",:":
            continue
        day = _date_of(match)
        clock = _parse_time(match.group("time"))
        if day is not None and clock is not None:
            return datetime.combine(day, clock), rest
    return None


def _parse_date(text: str) -> date | None:
    """A whole-line date in any of the export's forms."""
    for pattern in _DATES:
        match = pattern.fullmatch(text.strip())
        if match:
            return _date_of(match)
    return None


def _date_of(match: re.Match[str]) -> date | None:
    parts = match.groupdict()
    year = int(parts["y"])
    year += 2000 if year < 100 else 0
    month = _month_number(parts["mon"]) if parts.get("mon") else int(parts["m"])
    try:
        return date(year, month, int(parts["d"]))
    except ValueError:
        return None  # 2024. 2. 30.: not a date, so not a date line either


def _month_number(name: str) -> int:
    return _MONTHS.index(name[:3].lower()) + 1


def _parse_time(text: str) -> time | None:
    """24-hour time from ``오후 3:14``, ``3:14 PM``, ``3:14pm`` or ``15:14``."""
    match = _TIME_PARTS.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute = int(match.group("h")), int(match.group("m"))
    meridiem = match.group("ko") or (match.group("en") or "").lower()
    if meridiem:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if meridiem in ("오후", "p") else 0)
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


# -- chunks --------------------------------------------------------------------------------
def format_message(message: KakaoMessage) -> str:
    """``YYYY-MM-DD HH:MM Sender: text``; a system line has no sender."""
    who = f"{message.sender}: " if message.sender else ""
    return f"{message.timestamp:%Y-%m-%d %H:%M} {who}{message.text}"


def build_chunks(chat: KakaoChat, instance: str, *, max_chars: int) -> list[KakaoChunk]:
    """Consecutive messages grouped by day, conversation and size, numbered from 1.

    Grouping only looks back, so the same export always yields the same chunks, and an
    export that grew at its end keeps every chunk but its last one unchanged.
    """
    name = chat.name or instance
    chunks: list[KakaoChunk] = []
    for number, group in enumerate(_groups(chat.messages, max_chars), start=1):
        first = group[0].timestamp
        record = DatasourceRecord(
            source_id=chunk_id(instance, number),
            title=f"KakaoTalk {name} — {first:%Y-%m-%d}",
            text="\n".join(format_message(message) for message in group),
            # Exports carry no time zone: the wall-clock time is stored as UTC, so that
            # date filters match the dates the chat shows.
            doc_date=first.replace(tzinfo=UTC),
        )
        chunks.append(KakaoChunk(number, record, len(group)))
    return chunks


def _groups(messages: Sequence[KakaoMessage], max_chars: int) -> Iterator[list[KakaoMessage]]:
    group: list[KakaoMessage] = []
    size = 0
    for message in messages:
        if message.kind == "media":
            continue
        length = len(format_message(message))
        if group and _starts_new(group[-1], message, size + 1 + length, max_chars):
            yield group
            group, size = [], 0
        size += length + (1 if group else 0)
        group.append(message)
    if group:
        yield group


def _starts_new(previous: KakaoMessage, message: KakaoMessage, size: int, max_chars: int) -> bool:
    """A chunk ends at the size limit, at a new day and after a long silence."""
    return (
        size > max_chars
        or message.timestamp.date() != previous.timestamp.date()
        or message.timestamp - previous.timestamp > CONVERSATION_GAP
    )


# -- importing -----------------------------------------------------------------------------
def import_kakao(
    app: AppContext,
    path: Path,
    instance: str,
    *,
    observer: RefreshObserver | None = None,
) -> ImportReport:
    """Index a KakaoTalk export as ``/kakao/<instance>/chunks/chunk-N`` documents.

    Re-importing the same export changes nothing. A newer export of the same chat
    re-indexes the chunks that changed, adds new ones and removes those it no longer has.
    """
    prefix = namespace(instance)
    check_namespace_free(app.roots)
    settings = app.settings.ingest
    text, encoding = read_export(path, max_bytes=int(settings.max_file_mb * 1024**2))
    chat = parse_kakao(text, source=str(path))
    chunks = build_chunks(chat, instance, max_chars=settings.chunk_size)
    records = [chunk.record for chunk in chunks]
    with refresh_lock(app.workspace.refresh_lock_file):
        synced = sync_namespace(
            app.catalog, app.info, app.indexer, prefix, records, observer=observer
        )
    media = sum(message.kind == "media" for message in chat.messages)
    return ImportReport(
        file=str(path),
        instance=instance,
        chat=chat.name or instance,
        format=chat.format,
        encoding=encoding,
        messages=len(chat.messages) - media,
        media=media,
        chunks=len(chunks),
        indexed=synced.indexed,
        unchanged=synced.unchanged,
        removed=synced.removed,
        failed=synced.failed,
        failures=synced.failures,
    )
