"""``WidgetService``: widgets as every face uses them (commands, routes, the web UI), and
``WidgetLimiter``, the per-visitor and per-widget rate limits of their answers.

An admin creates a widget in a workspace; it gets an unguessable public id (``wgt_`` and
16 random bytes) that the site puts on its script tag. Visitors reach a widget by that
id alone: a disabled or unknown one is "not found" to them, the same answer for both.
Every field is checked here (origins, colours, limits, lengths), so the API, the command
line and the web UI refuse the same things with the same words.
"""

from __future__ import annotations

import builtins
import ipaddress
import math
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from autorag.errors import Conflict, InvalidInput, NotFound, RateLimited
from autorag.widget import store
from autorag.widget.models import (
    DEFAULT_THEME,
    DEFAULT_VISITOR_PER_MINUTE,
    DEFAULT_WIDGET_PER_MINUTE,
    PUBLIC_ID_PREFIX,
    Widget,
    normalise_origin,
)

if TYPE_CHECKING:
    from autorag.context import AppContext

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
PUBLIC_ID_PATTERN = r"^wgt_[A-Za-z0-9_-]{8,60}$"
COLOUR_PATTERN = r"^#[0-9a-fA-F]{6}$"
_NAME, _COLOUR = re.compile(NAME_PATTERN), re.compile(COLOUR_PATTERN)
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"  # origins are lower-cased first
_HOST = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
MAX_ORIGINS = 20
MAX_ORIGIN_CHARS = 300
MAX_GREETING = 500
MAX_RAG_CONTEXT = 20_000
MAX_PER_MINUTE = 10_000
# Fields an update may change, and what each is checked with.
_FIELDS = (
    "name", "enabled", "allowed_origins", "model", "greeting", "theme",
    "visitor_per_minute", "widget_per_minute", "rag_context",
)  # fmt: skip


class WidgetService:
    """The widgets of an installation (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def for_context(cls, context: AppContext) -> WidgetService:
        return cls(context.catalog.engine)

    # -- an admin's ----------------------------------------------------------------------
    def create(
        self,
        workspace_id: int,
        name: str,
        *,
        allowed_origins: Sequence[str] = (),
        model: str | None = None,
        greeting: str = "",
        theme: Mapping[str, str] | None = None,
        visitor_per_minute: int = DEFAULT_VISITOR_PER_MINUTE,
        widget_per_minute: int = DEFAULT_WIDGET_PER_MINUTE,
        rag_context: str | None = None,
        enabled: bool = True,
        actor: str | None = None,
    ) -> Widget:
        """A new widget; ``Conflict`` when the name is taken in the workspace."""
        values = checked_values(
            {
                "name": name, "enabled": enabled, "allowed_origins": allowed_origins,
                "model": model, "greeting": greeting, "theme": theme or {},
                "visitor_per_minute": visitor_per_minute,
                "widget_per_minute": widget_per_minute, "rag_context": rag_context,
            }
        )  # fmt: skip
        public_id = PUBLIC_ID_PREFIX + secrets.token_urlsafe(16)
        row = {**values, "public_id": public_id, "created_by": actor}
        if not store.insert_widget(self.engine, workspace_id, row):
            raise _taken(name)
        return self.get(workspace_id, public_id)

    def list(self, workspace_id: int) -> builtins.list[Widget]:
        return store.list_widgets(self.engine, workspace_id)

    def get(self, workspace_id: int, public_id: str) -> Widget:
        widget = store.load_widget(self.engine, public_id, workspace_id)
        if widget is None:
            raise _missing(public_id)
        return widget

    def update(self, workspace_id: int, public_id: str, changes: Mapping[str, Any]) -> Widget:
        """Change the fields given (any of ``_FIELDS``), each checked as on creation."""
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise InvalidInput(f"a widget has no setting {unknown[0]!r}")
        values = checked_values(changes)
        try:
            found = store.update_widget(self.engine, workspace_id, public_id, values)
        except IntegrityError:
            raise _taken(str(changes.get("name", ""))) from None
        if not found:
            raise _missing(public_id)
        return self.get(workspace_id, public_id)

    def delete(self, workspace_id: int, public_id: str) -> None:
        if not store.delete_widget(self.engine, workspace_id, public_id):
            raise _missing(public_id)

    # -- a visitor's ---------------------------------------------------------------------
    def public(self, public_id: str) -> Widget:
        """The enabled widget with this id; unknown and disabled ones are alike to a
        visitor (404), so a visitor learns nothing of widgets it cannot use."""
        widget = store.load_widget(self.engine, public_id)
        if widget is None or not widget.enabled:
            raise NotFound("no such widget, or it is turned off", code="widget_not_found")
        return widget


class WidgetLimiter:
    """Answers per minute, per visitor of a widget and per widget: a sliding window of
    60 s each, in this process's memory (thread-safe). A refused request is not counted,
    so a visitor who waits as told gets through."""

    WINDOW_S = 60.0
    _SWEEP_ABOVE = 10_000  # tracked keys before idle ones are dropped (bounded memory)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, widget: Widget, visitor: str) -> None:
        """Count one answer for ``visitor`` (an address) of ``widget``, or raise
        ``RateLimited`` with the seconds to wait."""
        keys = (
            (f"{widget.public_id}|v|{visitor}", widget.visitor_per_minute, "you"),
            (f"{widget.public_id}|w", widget.widget_per_minute, "this site's chat"),
        )
        with self._lock:
            now = self._clock()
            windows = [(self._window(key, now), limit, who) for key, limit, who in keys]
            for window, limit, who in windows:
                if len(window) >= limit:
                    wait = max(1, math.ceil(window[0] + self.WINDOW_S - now))
                    raise RateLimited(
                        f"too many questions from {who}; try again in {wait} s",
                        retry_after=wait,
                    )
            for window, _limit, _who in windows:
                window.append(now)
            if len(self._hits) > self._SWEEP_ABOVE:
                self._sweep(now)

    def _window(self, key: str, now: float) -> deque[float]:
        window = self._hits.setdefault(key, deque())
        while window and window[0] <= now - self.WINDOW_S:
            window.popleft()
        return window

    def _sweep(self, now: float) -> None:
        idle = [k for k, w in self._hits.items() if not w or w[-1] <= now - self.WINDOW_S]
        for key in idle:
            del self._hits[key]


# -- checks ------------------------------------------------------------------------------
def checked_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The given settings checked and normalised; ``InvalidInput`` names the first bad."""
    checks: dict[str, Callable[[Any], Any]] = {
        "name": _checked_name,
        "enabled": bool,
        "allowed_origins": checked_origins,
        "model": _checked_model,
        "greeting": lambda v: _bounded_text(v, "greeting", MAX_GREETING) or "",
        "theme": _checked_theme,
        "visitor_per_minute": lambda v: _checked_rate(v, "visitor"),
        "widget_per_minute": lambda v: _checked_rate(v, "widget"),
        "rag_context": lambda v: _bounded_text(v, "ragContext", MAX_RAG_CONTEXT) or None,
    }
    return {key: checks[key](value) for key, value in values.items() if key in checks}


def checked_origins(origins: Sequence[str]) -> list[str]:
    """Each an origin (``https://host[:port]``, ``http://`` too), normalised, no repeats."""
    if isinstance(origins, str) or len(origins) > MAX_ORIGINS:
        raise InvalidInput(f"give at most {MAX_ORIGINS} allowed origins, as a list")
    found: list[str] = []
    for origin in origins:
        normal = normalise_origin(str(origin))
        if normal and normal not in found:
            found.append(_checked_origin(normal))
    return found


def _checked_origin(origin: str) -> str:
    bad = InvalidInput(
        f"bad origin {origin[:80]!r}: scheme and host only, like https://www.example.com",
        code="bad_origin",
    )
    if len(origin) > MAX_ORIGIN_CHARS:
        raise bad
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad
    if parts.path or parts.query or parts.fragment or parts.username or parts.password:
        raise bad
    if not _is_host(parts.hostname):  # "*.example.com": browsers send no wildcards
        raise InvalidInput(
            f"bad origin {origin[:80]!r}: a host name or address, no wildcards; list each "
            "site's origin",
            code="bad_origin",
        )
    return origin


def _is_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_HOST.fullmatch(host))
    return True


def _checked_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput(
            f"bad widget name {str(name)[:80]!r}: letters, digits, '.', '_' and '-', "
            "at most 64, starting with a letter or digit"
        )
    return name


def _checked_model(model: Any) -> str | None:
    text = _bounded_text(model, "model", 300)
    return text.strip() or None if text is not None else None


def _checked_theme(theme: Mapping[str, str]) -> dict[str, str]:
    colours = dict(theme)
    unknown = sorted(set(colours) - set(DEFAULT_THEME))
    if unknown:
        raise InvalidInput(
            f"unknown theme colour {unknown[0][:40]!r}: one of {', '.join(DEFAULT_THEME)}"
        )
    for key, value in colours.items():
        if not isinstance(value, str) or not _COLOUR.match(value):
            raise InvalidInput(f"theme colour {key!r} must look like #1a2b3c")
    return {**DEFAULT_THEME, **{k: v.lower() for k, v in colours.items()}}


def _checked_rate(value: Any, who: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PER_MINUTE:
        raise InvalidInput(f"the per-{who} limit is a whole number from 1 to {MAX_PER_MINUTE}")
    return value


def _bounded_text(value: Any, what: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidInput(f"the {what} is text of at most {limit} characters")
    return value


def _missing(public_id: str) -> NotFound:
    return NotFound(f"no widget {public_id[:80]!r} in this workspace", code="widget_not_found")


def _taken(name: str) -> Conflict:
    return Conflict(f"a widget named {name[:80]!r} exists in this workspace", code="widget_exists")
