"""The HTTP side of the cloud-drive destinations (Dropbox, Google Drive): one pooled
httpx client with the OAuth token, and one mapping of their answers onto our errors.

401 (the token expired or was revoked), 403 that is not a rate limit, and other 4xx are
``DestinationRefused`` (asking again will not help); 429, 5xx and network failures are
``DestinationError``; a missing archive is ``NotFound``. Messages quote the service's
own reason with the token masked. httpx is imported on first use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from autorag.backup.destinations.base import DestinationError, DestinationRefused, naive_utc, scrub
from autorag.errors import AutoragError, InvalidInput, NotFound
from autorag.http_client import error_text

if TYPE_CHECKING:
    import httpx

# Each read or write of an upload chunk may take this long (a slow uplink).
TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 10.0
_RATE_LIMIT_WORDS = ("ratelimit", "rate_limit", "too_many")


class CloudApi:
    """One cloud service's HTTP calls for one destination (``label`` names it in
    messages, ``token_setting`` says where a refused token comes from)."""

    def __init__(
        self,
        label: str,
        token: SecretStr | None,
        token_setting: str,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if token is None or not token.get_secret_value():
            raise InvalidInput(
                f"backup destination {label!r} needs an access token: set {token_setting}"
            )
        self.label = label
        self._token = token.get_secret_value()
        self._token_setting = token_setting
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def call(
        self,
        method: str,
        url: str,
        *,
        what: str,
        missing: str | None = None,
        ok: tuple[int, ...] = (200,),
        **options: Any,
    ) -> httpx.Response:
        """Send one request; its response when the status is in ``ok``, else the error."""
        with self._mapped(what):
            response = self._http().request(method, url, **options)
        if response.status_code not in ok:
            raise self.status_error(response, what, missing)
        return response

    @contextmanager
    def stream(
        self, method: str, url: str, *, what: str, missing: str | None = None, **options: Any
    ) -> Iterator[Iterator[bytes]]:
        """The body of a 200 response, in pieces as it arrives (a download)."""
        with self._mapped(what), self._http().stream(method, url, **options) as response:
            if response.status_code != 200:
                response.read()
                raise self.status_error(response, what, missing)
            yield response.iter_bytes()

    def refused(self, what: str, reason: str) -> DestinationRefused:
        return DestinationRefused(f"{self.label} refused to {what} ({self.scrub(reason)})")

    def failed(self, what: str, reason: str) -> DestinationError:
        return DestinationError(f"{self.label}: {what} failed ({self.scrub(reason)})")

    def scrub(self, text: str) -> str:
        return scrub(text, [self._token])

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def status_error(
        self, response: httpx.Response, what: str, missing: str | None = None
    ) -> AutoragError:
        """The error a response that is not a success stands for."""
        status = response.status_code
        reason = f"HTTP {status}: {_reason(response)}"
        lowered = reason.lower()
        if missing is not None and (status == 404 or (status == 409 and "not_found" in lowered)):
            return NotFound(f"no backup {missing!r} in {self.label}")
        if status == 401:
            return DestinationRefused(
                f"{self.label} refused the access token ({self.scrub(reason)}): it may have "
                f"expired; set a new one in {self._token_setting}"
            )
        rate_limited = status == 403 and any(word in lowered for word in _RATE_LIMIT_WORDS)
        if status == 429 or status >= 500 or rate_limited:
            return self.failed(what, reason)
        return self.refused(what, reason)

    @contextmanager
    def _mapped(self, what: str) -> Iterator[None]:
        import httpx

        try:
            yield
        except httpx.HTTPError as exc:
            raise self.failed(what, f"{type(exc).__name__}: {exc}") from None

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                import httpx

                self._client = httpx.Client(
                    headers={"Authorization": f"Bearer {self._token}"},
                    timeout=httpx.Timeout(TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
                    transport=self._transport,
                )
            return self._client


def _reason(response: httpx.Response) -> str:
    """The service's reason: Dropbox's ``error_summary``, Google's ``error.message``
    (with its ``errors[].reason``), else the body."""
    try:
        body = json.loads(response.text)
    except ValueError:
        return response.text or response.reason_phrase
    if isinstance(body, Mapping) and "error_summary" in body:
        return str(body["error_summary"])
    reasons = _google_reasons(body)
    text = error_text(body)
    return f"{text} [{', '.join(reasons)}]" if reasons else text


def _google_reasons(body: Any) -> list[str]:
    error = body.get("error") if isinstance(body, Mapping) else None
    details = error.get("errors") if isinstance(error, Mapping) else None
    if not isinstance(details, list):
        return []
    return [
        str(item["reason"]) for item in details if isinstance(item, Mapping) and "reason" in item
    ]


def json_body(response: httpx.Response, api: CloudApi, what: str) -> dict[str, Any]:
    """A response's JSON object; a destination answering junk is ``DestinationError``."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise api.failed(what, f"the answer is not a JSON object: {response.text}")
    return body


def parse_time(value: Any) -> datetime:
    """An RFC 3339 time (``2024-05-01T12:00:00Z``) as naive UTC; the epoch when missing
    or malformed (the archive is still listed)."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return datetime(1970, 1, 1)
    return naive_utc(moment)
