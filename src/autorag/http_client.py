"""The one HTTP seam for model servers (chat, vision, embeddings): a pooled client per
server, its timeouts, retries of transient failures, and one mapping of what goes wrong
onto the error tree.

httpx is imported on first use, not at module import, so that loading a provider
registry does not slow down CLI start-up.

Errors: a server that cannot be reached, times out, fails (5xx), rate-limits (429) or
rejects our credentials (401/403) raises ``Unavailable`` (the caller may fall back to
another model, or retry later); a request the server refuses as wrong (400, 404 unknown
model, 422) or a URL httpx cannot use raises ``InvalidInput``. Messages name the server
(``ModelServer.where``) and quote at most a snippet of its reason, never the API key:
servers sometimes echo the key they reject, so it is scrubbed from every quoted text.
"""

from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from autorag.errors import AutoragError, InvalidInput, Unavailable

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

# How much of a server's error body we quote: enough for its reason, not a whole page.
ERROR_SNIPPET_CHARS = 200
# A server that does not accept the connection within this is down, however patient
# we are with a slow model (``timeout_s`` covers the wait for each piece of the answer).
CONNECT_TIMEOUT_S = 10.0
_USERINFO = re.compile(r"(?<=//)[^/?#]*@")


def display_url(url: str) -> str:
    """``url`` without any ``user:password@``, fit for error messages and logs."""
    return _USERINFO.sub("", url)


def snippet(text: str) -> str:
    """``text`` on one line, at most ``ERROR_SNIPPET_CHARS`` long; without its final full
    stop, since our messages go on after the quote."""
    return " ".join(text.split())[:ERROR_SNIPPET_CHARS].rstrip(".") or "no details"


def error_text(error: Any) -> str:
    """The human part of an error body: OpenAI's ``{"error": {"message"}}``, Ollama's
    ``{"error": "..."}``, FastAPI's ``{"detail"}``, else the body itself (unabridged)."""
    if isinstance(error, Mapping):
        for key in ("error", "message", "detail"):
            if key in error:
                return error_text(error[key])
    return error if isinstance(error, str) else json.dumps(error)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure (429, 5xx, network)."""

    retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise InvalidInput(f"retry settings must not be negative: {self}")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based).

        Exponential with jitter, so that several workers rate-limited together do not
        come back together; a server's Retry-After wins when it asks for longer.
        """
        backoff = self.base_delay * 2.0 ** (retry - 1) * random.uniform(0.5, 1.0)
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, self.max_delay)


NO_RETRIES = RetryPolicy(retries=0)
_Kind = Literal["url", "connect_timeout", "timeout", "connect", "connection", "status"]


class _Failure(Exception):
    """What went wrong on the wire, before ``ModelServer._error`` names it in the tree."""

    def __init__(
        self, kind: _Kind, detail: str, *, status: int = 0, retry_after: float | None = None
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail  # one line, the key scrubbed
        self.status = status
        self.retry_after = retry_after

    @property
    def retriable(self) -> bool:
        """Whether the server may answer if asked again (a bad URL or request never will)."""
        if self.kind == "status":
            return self.status == 429 or self.status >= 500
        return self.kind != "url"


class ModelServer:
    """One model server's HTTP side: a pooled client made on first use and shared by
    threads, JSON calls with retries, streamed lines; every failure surfaces as
    ``Unavailable`` or ``InvalidInput`` naming the server (see the module docstring).

    ``label`` names the server in messages (``LLM provider 'lab'``); ``not_found_hint``
    says what to check when it answers 404; ``retry`` applies to ``get_json`` and
    ``post_json``, never to streams (an answer half-streamed cannot be taken back);
    ``transport`` replaces httpx's (tests pass an ``httpx.MockTransport``).
    """

    def __init__(
        self,
        label: str,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float,
        not_found_hint: str = "",
        retry: RetryPolicy = NO_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.where = f"{label} at {display_url(self.base_url)}"
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._not_found_hint = not_found_hint
        self._retry = retry
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def get_json(self, path: str) -> Any:
        return self._retrying(path, lambda client: client.get(self.base_url + path))

    def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._retrying(path, lambda client: client.post(self.base_url + path, json=body))

    @contextmanager
    def stream_lines(self, path: str, body: Mapping[str, Any]) -> Iterator[Iterator[str]]:
        """POST ``body`` and give the response's lines as they arrive.

        Leaving the ``with`` block (also by closing the generator that holds it) closes
        the response and its connection at once: an aborted generation stops there.
        """
        url = self.base_url + path
        try:
            with self._mapped(), self._http().stream("POST", url, json=body) as response:
                if not response.is_success:
                    response.read()
                    self._check(response)
                yield response.iter_lines()
        except _Failure as failure:
            raise self._error(failure, path) from None

    def decode(self, text: str) -> Any:
        """``text`` as JSON; a server that sends something else is ``Unavailable``."""
        try:
            return json.loads(text)
        except ValueError:
            quoted = snippet(self.scrub(text))
            message = f"{self.where} sent a response that is not valid JSON: {quoted}"
            raise Unavailable(message) from None

    def reported_error(self, error: Any) -> AutoragError:
        """The error a server reported inside an answer it began (``{"error": ...}``)."""
        reason = snippet(self.scrub(error_text(error)))
        # Ollama reports a model it cannot find this way: a wrong name, not an outage.
        if "not found" in reason.lower():
            return InvalidInput(self._hinted(f"{self.where}: {reason}."))
        return Unavailable(f"{self.where} failed while answering: {reason}")

    def scrub(self, text: str) -> str:
        """``text`` with the API key masked."""
        return text.replace(self._api_key, "***") if self._api_key else text

    def close(self) -> None:
        """Release pooled connections; the next call reconnects."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _error(self, failure: _Failure, path: str, attempts: int = 1) -> AutoragError:
        """The one mapping of a failure onto the error tree."""
        detail = failure.detail
        if attempts > 1:
            detail = f"after {attempts} attempts: {detail}"
        where = self.where
        if failure.kind == "status":
            return self._status_error(failure.status, detail, path)
        if failure.kind == "url":
            return InvalidInput(f"{where} has a bad URL ({detail}): check its base_url")
        if failure.kind == "connect_timeout":
            connect = min(self.timeout_s, CONNECT_TIMEOUT_S)
            return Unavailable(
                f"{where} did not accept a connection within {connect:g}s ({detail})"
            )
        if failure.kind == "timeout":
            return Unavailable(f"{where} did not answer within {self.timeout_s:g}s ({detail})")
        if failure.kind == "connect":
            return Unavailable(f"{where} cannot be reached ({detail}): is the server running?")
        return Unavailable(f"{where}: the connection failed ({detail})")

    def _status_error(self, status: int, detail: str, path: str) -> AutoragError:
        where = self.where
        if status in (401, 403):
            fix = "check its api_key" if self._api_key else "it needs an api_key"
            message = f"{where} refused the credentials ({detail}): {fix}"
            return Unavailable(message, code="llm_unauthorized")
        if status == 404:
            return InvalidInput(self._hinted(f"{where} answered {path or 'us'} with {detail}."))
        if status == 429:
            return Unavailable(f"{where} is rate limiting ({detail})", code="llm_rate_limited")
        if 400 <= status < 500:
            return InvalidInput(f"{where} refused the request ({detail})")
        return Unavailable(f"{where} failed ({detail})")

    def _hinted(self, message: str) -> str:
        return f"{message} {self._not_found_hint}".rstrip()

    def _retrying(self, path: str, send: Callable[[httpx.Client], httpx.Response]) -> Any:
        attempts = self._retry.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                with self._mapped():
                    response = send(self._http())
                    self._check(response)
            except _Failure as failure:
                if not failure.retriable or attempt == attempts:
                    raise self._error(failure, path, attempt) from None
                delay = self._retry.delay(attempt, failure.retry_after)
                logger.info("retrying %s%s in %.2fs: %s", self.where, path, delay, failure.detail)
                time.sleep(delay)
            else:
                return self.decode(response.text)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(
                    headers=headers, timeout=_timeout(self.timeout_s), transport=self._transport
                )
            return self._client

    def _check(self, response: httpx.Response) -> None:
        if not response.is_success:
            status = response.status_code
            quoted = snippet(self.scrub(error_text(_json_or_text(response.text))))
            retry_after = _retry_after(response.headers.get("retry-after"))
            raise _Failure(
                "status", f"HTTP {status}: {quoted}", status=status, retry_after=retry_after
            )

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        """httpx's exceptions as ``_Failure``s, as httpx maps those of its own transport."""
        import httpx

        try:
            yield
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            detail = snippet(self.scrub(f"{type(exc).__name__}: {exc}".rstrip(": ")))
            raise _Failure(_kind(exc), detail) from exc


def _kind(exc: Exception) -> _Kind:
    import httpx

    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
        return "url"
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect_timeout"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect"
    return "connection"


def _timeout(seconds: float) -> httpx.Timeout:
    """The one place timeouts are set: ``seconds`` for each read, write and pool wait,
    at most ``CONNECT_TIMEOUT_S`` to connect."""
    import httpx

    return httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT_S))


def _json_or_text(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body


def _retry_after(value: str | None) -> float | None:
    """The Retry-After header in seconds; the HTTP-date form is rare enough to ignore."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
