"""``DlpService``: DLP as the rest of AutoRAG uses it.

It knows which patterns are on (the ``dlp_patterns`` table, cached for five minutes;
the built-ins alone when the catalog cannot be read), whether DLP applies to a caller
(``dlp.enabled``, ``dlp.bypass_roles``), and writes the audit trail: ``dlp.redacted``
when something was redacted, ``dlp.bypassed`` when a role skipped DLP, ``dlp.revealed``
when an admin read an original. Every event carries its source (``chat`` or
``widget``: a request with an ``X-Widget-Id`` header), the user, the workspace, the
pattern types and the time, never the secret.

How a feature calls it, one ``DlpSession`` per request::

    session = service.session(DlpContext(source=source_from_widget(widget_id),
                                         channel="chat", user_id=user.id,
                                         role=user.role, workspace_id=workspace.id))
    question = session.scan(text, channel="chat_input")   # send question.redacted_text on
    stream = session.stream(channel="chat_output")        # then, for each model token:
    visible = stream.feed(token)           #   emit what comes back (maybe "")
    visible += stream.flush()              # at the end
    dlp_warning = question.has_match or stream.redacted     # SSE ``done``

Originals are kept for an admin's reveal: after storing a redacted message, call
``session.record(original, redacted, types, ref=f"message:{message_id}")`` (it answers
an opaque id; nothing is stored when nothing was redacted). ``service.reveal(ref=…)``
or ``reveal(original_id=…)`` reads it back and audits ``dlp.revealed``; the API exposes
it to admins with a login session only. ``service.forget(ref)`` drops the originals of
a deleted message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from autorag import audit
from autorag.audit import AuditEvent, AuditQuery
from autorag.config import DlpSettings
from autorag.dlp import store
from autorag.dlp.patterns import (
    BUILTIN_NAMES,
    BUILTINS,
    DEFAULT_PATTERNS,
    MAX_CUSTOM_PATTERNS,
    Pattern,
    builtin,
    compile_custom,
    validate_name,
)
from autorag.dlp.scanner import ScanResult, scan_content
from autorag.dlp.store import OriginalRecord, PatternRecord
from autorag.dlp.streaming import PassThrough, StreamingRedactor, TokenRedactor
from autorag.errors import Conflict, InvalidInput
from autorag.models import ParsedDocument
from autorag.store.catalog.repository import Catalog

log = logging.getLogger(__name__)

Source = Literal["chat", "widget", "p2p"]  # p2p: replies to trusted peers
SOURCES: tuple[Source, ...] = ("chat", "widget")
CACHE_TTL_S = 300.0
# After a failed read, the fallback is kept this long before the catalog is tried again.
RETRY_S = 30.0
REDACTED_EVENT, BYPASSED_EVENT, REVEALED_EVENT = "dlp.redacted", "dlp.bypassed", "dlp.revealed"


def source_from_widget(widget_id: str | None) -> Source:
    """``widget`` for a request carrying an ``X-Widget-Id`` header, else ``chat``."""
    return "widget" if widget_id and widget_id.strip() else "chat"


@dataclass(frozen=True)
class DlpContext:
    """Who a text belongs to, for the bypass decision and the audit trail."""

    source: Source = "chat"
    channel: str = "chat"  # what the text is: "chat_input", "chat_output", "search"…
    user_id: int | None = None
    role: str | None = None
    workspace_id: int | None = None


@dataclass(frozen=True)
class HistoryQuery:
    """Filters of the match history (newest first)."""

    type: str | None = None  # a pattern name
    source: str | None = None
    event: str | None = None  # one dlp.* event; None: all of them
    user_id: int | None = None
    workspace_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    before_id: int | None = None
    limit: int = 100


class DlpService:
    def __init__(
        self,
        catalog: Catalog,
        settings: DlpSettings | None = None,
        *,
        ttl_s: float = CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.catalog = catalog
        self.settings = settings or DlpSettings()
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[Pattern, ...] | None = None
        self._expires = 0.0
        self._seeded = False

    # -- which patterns are on ------------------------------------------------------
    def active_patterns(self) -> tuple[Pattern, ...]:
        """The enabled patterns, built-ins first; cached for ``ttl_s``."""
        now = self._clock()
        with self._lock:
            if self._cached is not None and now < self._expires:
                return self._cached
        patterns, ttl = self._load()
        with self._lock:
            self._cached, self._expires = patterns, now + ttl
        return patterns

    def streaming_patterns(self) -> tuple[Pattern, ...]:
        """The enabled built-ins: what a streamed answer is redacted with."""
        return tuple(p for p in self.active_patterns() if p.builtin)

    def invalidate(self) -> None:
        with self._lock:
            self._expires = 0.0

    def _load(self) -> tuple[tuple[Pattern, ...], float]:
        try:
            records = self._records()
        except SQLAlchemyError as exc:
            fallback = self._cached if self._cached is not None else DEFAULT_PATTERNS
            log.warning("DLP patterns unreadable (%s); using %d known ones", exc, len(fallback))
            return fallback, min(self._ttl_s, RETRY_S)
        return _patterns(records), self._ttl_s

    def _records(self) -> list[PatternRecord]:
        if not self._seeded:
            store.seed_builtins(self.catalog)
            self._seeded = True
        return store.list_patterns(self.catalog)

    # -- scanning for a caller ------------------------------------------------------
    def session(self, context: DlpContext) -> DlpSession:
        return DlpSession(self, context)

    def scan(self, text: str) -> ScanResult:
        """Scan with the enabled patterns: no settings, no audit (tools, the CLI)."""
        return scan_content(text, patterns=self.active_patterns())

    def redact_document(self, document: ParsedDocument) -> ParsedDocument:
        """``document`` with each segment redacted (a workspace's ``redact_on_ingest``)."""
        patterns = self.active_patterns()
        segments = [
            replace(s, text=scan_content(s.text, patterns=patterns).redacted_text)
            for s in document.segments
        ]
        return replace(document, segments=segments)

    def bypasses(self, role: str | None) -> bool:
        return role is not None and role in self.settings.bypass_roles

    # -- originals and their reveal -------------------------------------------------
    def record_redaction(
        self,
        original: str,
        redacted: str,
        types: Sequence[str],
        context: DlpContext,
        *,
        ref: str | None = None,
    ) -> str:
        """Keep the original of a redacted text for an audited reveal; its opaque id."""
        return store.insert_original(
            self.catalog,
            original=original,
            redacted=redacted,
            types=types,
            source=context.source,
            user_id=context.user_id,
            workspace_id=context.workspace_id,
            ref=ref,
        )

    def reveal(
        self,
        *,
        original_id: str | None = None,
        ref: str | None = None,
        user_id: int,
        source: Source = "chat",
    ) -> OriginalRecord:
        """An original, by id or by what it belongs to; audited in the same transaction
        (no audit, no reveal)."""
        if (original_id is None) == (ref is None):
            raise InvalidInput("give either an original id or a ref")
        with Session(self.catalog.engine) as session, session.begin():
            record = store.get_original(session, original_id=original_id, ref=ref)
            details = {"originalId": record.id, "ref": record.ref, "types": list(record.types)}
            audit.record(
                self.catalog,
                REVEALED_EVENT,
                user_id=user_id,
                workspace_id=record.workspace_id,
                source=source,
                details=details,
                connection=session.connection(),
            )
        return record

    def forget(self, ref: str) -> int:
        """Drop the originals recorded for ``ref`` (its message was deleted)."""
        return store.delete_originals(self.catalog, ref)

    def match_history(self, query: HistoryQuery) -> list[AuditEvent]:
        """dlp.* audit events, newest first, filtered."""
        base = AuditQuery(
            events=(query.event,) if query.event else (),
            prefix="dlp.",
            user_id=query.user_id,
            workspace_id=query.workspace_id,
            source=query.source,
            since=query.since,
            until=query.until,
            details_contain=f'"{query.type}"' if query.type else None,
            before_id=query.before_id,
            limit=query.limit,
        )
        if query.type is None:
            return audit.list_events(self.catalog, base)
        return _with_type(self.catalog, base, query.type)

    # -- administration -------------------------------------------------------------
    def list_patterns(self) -> list[PatternRecord]:
        self._records()  # seeds on first use
        return store.list_patterns(self.catalog)

    def find_pattern(self, name: str) -> PatternRecord:
        self._records()
        return store.find_pattern(self.catalog, name)

    def create_pattern(
        self, name: str, regex: str, description: str = "", *, enabled: bool = True
    ) -> PatternRecord:
        self._check_custom_name(name)
        compile_custom(name, regex, description)
        record = store.insert_custom(
            self.catalog, name, regex, description, enabled, limit=MAX_CUSTOM_PATTERNS
        )
        self.invalidate()
        return record

    def update_pattern(
        self,
        pattern_id: int,
        *,
        name: str | None = None,
        regex: str | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> PatternRecord:
        """Edit a custom pattern; a built-in can only be enabled or disabled."""
        current = store.get_pattern(self.catalog, pattern_id)
        changes: dict[str, Any] = {
            k: v
            for k, v in {"name": name, "regex": regex, "description": description}.items()
            if v is not None
        }
        if current.builtin and changes:
            raise Conflict(
                f"{current.name!r} is a built-in pattern: it can be enabled or disabled, "
                "not edited",
                code="builtin_pattern",
            )
        if changes:
            if name is not None and name != current.name:
                self._check_custom_name(name)
            compile_custom(name or current.name, regex or current.regex)
        if enabled is not None:
            changes["enabled"] = enabled
        record = store.update_pattern(self.catalog, pattern_id, changes)
        self.invalidate()
        return record

    def delete_pattern(self, pattern_id: int) -> None:
        current = store.get_pattern(self.catalog, pattern_id)
        if current.builtin:
            raise Conflict(
                f"{current.name!r} is a built-in pattern: disable it instead",
                code="builtin_pattern",
            )
        store.delete_pattern(self.catalog, pattern_id)
        self.invalidate()

    def test_patterns(self, text: str, regex: str | None = None, name: str = "test") -> ScanResult:
        """A live preview: ``regex`` alone when given, else every enabled pattern."""
        if regex is None:
            return self.scan(text)
        return scan_content(text, patterns=[compile_custom(name, regex)])

    @staticmethod
    def _check_custom_name(name: str) -> None:
        validate_name(name)
        if name in BUILTIN_NAMES:
            raise Conflict(f"{name!r} is the name of a built-in pattern")


class DlpSession:
    """DLP for one request: applies the settings to its caller and audits what it does."""

    def __init__(self, service: DlpService, context: DlpContext) -> None:
        self.service = service
        self.context = context
        self._bypass_noted = False

    @property
    def enabled(self) -> bool:
        return self.service.settings.enabled

    @property
    def bypassed(self) -> bool:
        """DLP is on, but the caller's role is exempt."""
        return self.enabled and self.service.bypasses(self.context.role)

    @property
    def active(self) -> bool:
        return self.enabled and not self.bypassed

    def scan(self, text: str, *, channel: str | None = None) -> ScanResult:
        return self.scan_many([text], channel=channel)[0]

    def scan_many(self, texts: Sequence[str], *, channel: str | None = None) -> list[ScanResult]:
        """Each text redacted when DLP applies; one ``dlp.redacted`` event for them all.

        ``channel`` names what the texts are in the audit trail (the context's if None).
        """
        if not texts or not self._applies():
            return [ScanResult((), text) for text in texts]
        patterns = self.service.active_patterns()
        results = [scan_content(text, patterns=patterns) for text in texts]
        found = [m.type for r in results for m in r.matches]
        if found:
            self._redacted(found, channel)
        return results

    def stream(self, *, channel: str | None = None) -> TokenRedactor:
        """A redactor for a streamed answer (the built-ins); audited when it flushes."""
        if not self._applies():
            return PassThrough()
        redactor = StreamingRedactor(self.service.streaming_patterns())
        return _AuditedStream(redactor, lambda found: self._redacted(found, channel))

    def record(
        self, original: str, redacted: str, types: Sequence[str], *, ref: str | None = None
    ) -> str | None:
        """Keep ``original`` for an admin's reveal when it was redacted; its id."""
        if original == redacted:
            return None
        return self.service.record_redaction(original, redacted, types, self.context, ref=ref)

    def _applies(self) -> bool:
        if self.bypassed and not self._bypass_noted:
            self._bypass_noted = True
            self._audit(
                BYPASSED_EVENT, {"channel": self.context.channel, "role": self.context.role}
            )
        return self.active

    def _redacted(self, found: Sequence[str], channel: str | None) -> None:
        """Audit redactions; ``found`` has a pattern name per match."""
        details = {
            "channel": channel or self.context.channel,
            "types": sorted(set(found)),
            "count": len(found),
        }
        self._audit(REDACTED_EVENT, details)

    def _audit(self, event: str, details: dict[str, Any]) -> None:
        context = self.context
        try:
            audit.record(
                self.service.catalog,
                event,
                user_id=context.user_id,
                workspace_id=context.workspace_id,
                source=context.source,
                details=details,
            )
        except SQLAlchemyError as exc:  # redaction must go on when the catalog is down
            log.warning("DLP audit event %s not written: %s", event, exc)


class _AuditedStream:
    """A streaming redactor that reports what it redacted when the stream ends."""

    def __init__(self, inner: StreamingRedactor, report: Callable[[Sequence[str]], None]) -> None:
        self._inner = inner
        self._report = report

    @property
    def redacted(self) -> bool:
        return self._inner.redacted

    @property
    def types(self) -> list[str]:
        return self._inner.types

    def feed(self, token: str) -> str:
        return self._inner.feed(token)

    def flush(self) -> str:
        text = self._inner.flush()
        if self._inner.redacted:
            self._report(self._inner.found)
        return text


def _patterns(records: Iterable[PatternRecord]) -> tuple[Pattern, ...]:
    """The enabled records as patterns: built-ins from code, customs compiled."""
    builtins: list[Pattern] = []
    customs: list[Pattern] = []
    for record in records:
        if not record.enabled:
            continue
        if record.builtin:
            if record.name in BUILTIN_NAMES:  # a newer version's built-in is not known here
                builtins.append(builtin(record.name))
            continue
        try:
            customs.append(compile_custom(record.name, record.regex, record.description))
        except InvalidInput as exc:  # stored by a version whose RE2 accepted it
            log.warning("DLP pattern %r skipped: %s", record.name, exc.message)
    order = {p.name: index for index, p in enumerate(BUILTINS)}
    return tuple(sorted(builtins, key=lambda p: order[p.name])) + tuple(customs)


def _with_type(catalog: Catalog, base: AuditQuery, pattern_type: str) -> list[AuditEvent]:
    """Events whose details list ``pattern_type``: the SQL filter is a substring match,
    so pages are refilled until ``limit`` exact ones are found or none are left."""
    found: list[AuditEvent] = []
    before = base.before_id
    while len(found) < base.limit:
        page = audit.list_events(catalog, replace(base, before_id=before))
        found += [e for e in page if pattern_type in e.details.get("types", [])]
        if len(page) < base.limit:
            break
        before = page[-1].id
    return found[: base.limit]
