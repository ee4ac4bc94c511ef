"""Wire protocol v1 between AutoRAG peers (docs/p2p-protocol.md).

A message is one JSON object sent as a SimpleX text message (split and reassembled by
``simplex.chunks`` when larger than SimpleX allows). Every field is bounded; anything that
is not a valid v1 message is answered with an error reply, never an exception.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PROTOCOL: Final = "autorag-p2p"
VERSION = 1
MAX_MESSAGE_CHARS = 256_000  # a whole message, before chunking
MAX_K = 20
NO_VERIFIED_RESULTS = "No verified results were found for this query."

Code = Literal[
    "no-verified-results",  # searched: nothing found (seed 000)
    "policy-denied",  # found, but every result's source policy kept it here
    "internal-error",
    "timeout",  # no answer within the time budget (or an approval expired)
    "not-trusted",  # the sender is not in the trusted peer registry
    "approval-pending",  # the owner must approve some results; the answer follows
    "approval-denied",  # the owner refused: the results needing approval stay here
    "unsupported-version",
    "malformed",  # not a valid v1 message
    "rate-limited",
]
Severity = Literal["info", "warning", "error"]
ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
_ID = re.compile(ID_PATTERN)
Id = Annotated[str, Field(pattern=ID_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Filters(_Strict):
    documentTypes: list[Annotated[str, Field(max_length=10)]] = Field(
        default_factory=list, max_length=8
    )
    dateFrom: str | None = Field(default=None, max_length=40)
    dateTo: str | None = Field(default=None, max_length=40)


class Query(_Strict):
    protocol: Literal["autorag-p2p"] = PROTOCOL
    v: int = VERSION
    type: Literal["query"] = "query"
    id: Id
    text: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=5, ge=1, le=MAX_K)
    filters: Filters = Field(default_factory=Filters)


class Result(_Strict):
    source: str = Field(max_length=1000)  # the canonical source id (seed 000)
    title: str = Field(default="", max_length=300)
    snippet: str = Field(default="", max_length=2000)
    score: float = Field(ge=0, le=1e6)
    page: int | None = Field(default=None, ge=0, le=10_000_000)


class Diagnostic(_Strict):
    code: Code
    severity: Severity
    message: str = Field(default="", max_length=500)


class Reply(_Strict):
    protocol: Literal["autorag-p2p"] = PROTOCOL
    v: int = VERSION
    type: Literal["reply"] = "reply"
    id: Id | None  # the query's; None when the query could not be read
    final: bool = True  # False: more will follow (approval pending)
    results: list[Result] = Field(default_factory=list, max_length=MAX_K)
    answer: str | None = Field(default=None, max_length=8000)
    diagnostic: Diagnostic | None = None


Message = Query | Reply


class WireError(Exception):
    """A message that cannot be read; ``code`` is the reply's diagnostic code."""

    def __init__(self, code: Code, message: str, query_id: str | None = None) -> None:
        super().__init__(message)
        self.code: Code = code
        self.message = message
        self.query_id = query_id


def encode(message: Message) -> str:
    return message.model_dump_json(exclude_none=True)


def looks_like_protocol(text: str) -> bool:
    """A cheap test that spares ordinary chat messages the JSON parser."""
    return text.lstrip().startswith("{") and PROTOCOL in text[:200]


def decode(text: str) -> Message:
    """The message in ``text``, or ``WireError`` saying what is wrong with it."""
    if len(text) > MAX_MESSAGE_CHARS:
        raise WireError("malformed", f"message over {MAX_MESSAGE_CHARS} characters")
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise WireError("malformed", "not JSON") from None
    if not isinstance(raw, dict) or raw.get("protocol") != PROTOCOL:
        raise WireError("malformed", f"not an {PROTOCOL} message")
    query_id = _readable_id(raw.get("id"))
    if raw.get("v") != VERSION:
        raise WireError("unsupported-version", f"this peer speaks v{VERSION}", query_id)
    kind = raw.get("type")
    if kind not in ("query", "reply"):
        raise WireError("malformed", f"unknown message type {kind!r}", query_id)
    try:
        return Query.model_validate(raw) if kind == "query" else Reply.model_validate(raw)
    except ValidationError as exc:
        raise WireError("malformed", _first_problem(exc), query_id) from None


def error_reply(error: WireError) -> Reply:
    severity: Severity = "warning" if error.code == "unsupported-version" else "error"
    diagnostic = Diagnostic(code=error.code, severity=severity, message=error.message[:500])
    return Reply(id=error.query_id, diagnostic=diagnostic)


def empty_reply(query_id: str) -> Reply:
    """The seed's structured empty response of a remote session that found nothing."""
    return Reply(
        id=query_id,
        answer=NO_VERIFIED_RESULTS,
        diagnostic=Diagnostic(code="no-verified-results", severity="info"),
    )


def _readable_id(value: Any) -> str | None:
    """The query id to answer to, if the sender gave a valid one."""
    return value if isinstance(value, str) and _ID.fullmatch(value) else None


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(p) for p in problem["loc"]) or "message"
    return f"{where}: {problem['msg']}"[:500]
