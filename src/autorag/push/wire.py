"""One Web Push message to one subscription: pywebpush encrypts the payload for the
browser (RFC 8291, aes128gcm) and signs a VAPID JWT for the push service (RFC 8292:
``sub`` the admin's contact, ``aud`` the endpoint's origin, ``exp`` 12 hours ahead).

The endpoint is checked before each send (``push.endpoints``) and the POST goes to the
address checked (``_Pinned``); redirects are not followed (a 3xx could point into the
LAN): a push service answers the POST itself. Nothing is read from the environment (no
proxies, no .netrc credentials).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from py_vapid import Vapid02
from pywebpush import WebPushException, webpush
from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest

from autorag.errors import InvalidInput
from autorag.push.endpoints import check_endpoint
from autorag.push.models import Outcome, Subscription
from autorag.push.vapid import VapidKeys

log = logging.getLogger(__name__)

VAPID_LIFETIME_S = 12 * 3600  # RFC 8292 allows 24 h; pywebpush's and browsers' habit
GONE = (404, 410)  # the push service forgot the subscription: the browser dropped it


class _NoRedirects(requests.Session):
    def get_redirect_target(self, resp: requests.Response) -> str | None:
        return None


class _Pinned(HTTPAdapter):
    """Connects to ``address`` whatever the URL's host resolves to now; the host stays
    in ``Host`` and in TLS's SNI and certificate check."""

    def __init__(self, host: str, address: str) -> None:
        self._host = host
        self._address = address
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["server_hostname"] = self._host
        super().init_poolmanager(*args, **kwargs)

    def send(self, request: PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        parts = urlsplit(request.url or "")
        shown = f"[{self._address}]" if ":" in self._address else self._address
        netloc = shown if parts.port is None else f"{shown}:{parts.port}"
        request.headers["Host"] = parts.netloc
        request.url = urlunsplit(parts._replace(netloc=netloc))
        return super().send(request, *args, **kwargs)


@dataclass(frozen=True)
class WireSettings:
    subject: str  # mailto: or https: a push service may contact
    ttl_s: int
    timeout_s: float
    allow_private: bool


def origin(endpoint: str) -> str:
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


def send(
    subscription: Subscription,
    payload: Mapping[str, Any],
    keys: VapidKeys,
    settings: WireSettings,
) -> Outcome:
    """Send ``payload`` (JSON) to the subscription; what came of it."""
    try:
        address = check_endpoint(subscription.endpoint, allow_private=settings.allow_private)
    except InvalidInput as refusal:
        log.warning("push subscription %s refused: %s", subscription.id, refusal)
        return "refused"
    claims: dict[str, str | int] = {
        "sub": settings.subject,
        "aud": origin(subscription.endpoint),
        "exp": int(time.time()) + VAPID_LIFETIME_S,
    }
    info = {
        "endpoint": subscription.endpoint,
        "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
    }
    with _NoRedirects() as session:
        session.trust_env = False
        pinned = _Pinned(urlsplit(subscription.endpoint).hostname or "", address)
        session.mount("https://", pinned)
        session.mount("http://", pinned)
        try:
            webpush(
                info,
                data=json.dumps(payload, separators=(",", ":")),
                vapid_private_key=Vapid02(private_key=keys.private_key),
                vapid_claims=claims,
                timeout=settings.timeout_s,
                ttl=settings.ttl_s,
                requests_session=session,
            )
        except WebPushException as error:
            code = error.response.status_code if error.response is not None else None
            if code in GONE:
                return "gone"
            log.warning("push to subscription %s failed: HTTP %s", subscription.id, code)
            return "failed"
        except (requests.RequestException, ValueError, TypeError) as error:
            log.warning("push to subscription %s failed: %s", subscription.id, error)
            return "failed"
    return "sent"
