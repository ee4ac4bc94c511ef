"""A page's YAML front matter: split from the markdown on save, put back for diffs and
exports.

Front matter is hostile text: read with ``safe_load`` (no Python objects), without
anchors and aliases (no "billion laughs"), at most 64 KB, and only as a mapping whose
values are plain data (dates become ISO text), so it can be kept as JSON.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import yaml
from yaml.events import AliasEvent

from autorag.errors import InvalidInput

MAX_FRONT_MATTER_BYTES = 64 * 1024
_OPEN = "---"
_CLOSERS = ("---", "...")


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            raise InvalidInput(
                "the front matter uses a YAML alias ('*name'): write the value out",
                code="invalid_front_matter",
            )
        return super().compose_node(parent, index)


def split(markdown: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)``: the front matter is the block between a first line
    ``---`` and the next line ``---`` (or ``...``); without one, ``({}, markdown)``."""
    text = markdown.removeprefix("\ufeff")
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r ") != _OPEN:
        return {}, markdown
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r ") in _CLOSERS:
            raw = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1 :])
            return parse(raw), body
    raise InvalidInput(
        "the front matter opened with '---' is never closed by a line '---'",
        code="invalid_front_matter",
    )


def parse(raw: str) -> dict[str, Any]:
    """YAML text → a plain mapping (``{}`` for an empty block)."""
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES:
        raise InvalidInput(
            f"the front matter is larger than {MAX_FRONT_MATTER_BYTES // 1024} KB",
            code="invalid_front_matter",
        )
    try:
        loaded = yaml.load(raw, Loader=_NoAliasLoader)  # a SafeLoader
    except RecursionError:  # brackets nested thousands deep
        raise InvalidInput(
            "the front matter is nested too deeply", code="invalid_front_matter"
        ) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 2})" if where is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise InvalidInput(
            f"the front matter is not valid YAML{at}: {problem}", code="invalid_front_matter"
        ) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise InvalidInput(
            f"the front matter must be a mapping of keys to values, not a {_kind(loaded)}",
            code="invalid_front_matter",
        )
    plain: dict[str, Any] = _plain(loaded)
    return plain


def compose(front_matter: dict[str, Any], body: str) -> str:
    """The page's markdown: front matter (when there is any) above the body."""
    if not front_matter:
        return body
    dumped = yaml.safe_dump(front_matter, sort_keys=False, allow_unicode=True)
    return f"{_OPEN}\n{dumped}{_OPEN}\n{body}"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, bytes):
        raise InvalidInput(
            "the front matter holds binary data (!!binary): use text",
            code="invalid_front_matter",
        )
    raise InvalidInput(
        f"the front matter holds a value that is not plain data ({_kind(value)})",
        code="invalid_front_matter",
    )


def _key(key: Any) -> str:
    if isinstance(key, str | int | float | bool) or key is None:
        return str(key) if not isinstance(key, str) else key
    if isinstance(key, dt.date):
        return key.isoformat()
    raise InvalidInput(
        f"the front matter has a key that is not text ({_kind(key)})",
        code="invalid_front_matter",
    )


def _kind(value: Any) -> str:
    names = {list: "list", str: "text", int: "number", float: "number", bool: "true/false"}
    return names.get(type(value), type(value).__name__)
