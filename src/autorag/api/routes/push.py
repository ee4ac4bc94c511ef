"""Web Push over HTTP (issue 21): the server's public VAPID key, a browser's subscription,
the topics a user follows, a test notification, and the service worker.

The public key is public (``GET /api/push/vapid-key``: a page asks for it before anyone
signs in). Subscribing, unsubscribing and choosing topics are every user's
(``push:use``), each on their own subscriptions only: unsubscribing another user's
endpoint answers 404 exactly as one that does not exist. A test notification is an
admin's (``push:admin``), for the installation's users, so a caller confined to some
workspaces may not. ``/sw.js`` is served at the root so that its scope is the whole UI.
The service (``autorag.push.service``) does the work; these routes only translate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Header, Response
from fastapi.responses import FileResponse
from pydantic import Field

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep
from autorag.api.routes.archives import CamelIn, CamelOut
from autorag.auth.permissions import PUSH_ADMIN, PUSH_USE
from autorag.push.endpoints import MAX_ENDPOINT_CHARS
from autorag.push.models import SendReport, TopicChoice
from autorag.push.service import PushService
from autorag.push.topics import TOPIC_NAMES
from autorag.web import ASSETS_DIR, SECURITY_HEADERS

router = APIRouter(tags=["push"])
PREFIX = "/api/push"
SERVICE_WORKER = ASSETS_DIR / "sw.js"  # also at /ui/sw.js, where its scope would be /ui/

User = Annotated[Principal, Depends(require(PUSH_USE))]
Admin = Annotated[Principal, Depends(require(PUSH_ADMIN, every_workspace=True))]


def _service(context: AppDep) -> PushService:
    return PushService.for_context(context)


Push = Annotated[PushService, Depends(_service)]


# -- answers ----------------------------------------------------------------------------
class VapidKeyOut(CamelOut):
    public_key: str  # base64url uncompressed P-256 point: PushManager's applicationServerKey
    enabled: bool


class SubscriptionOut(CamelOut):
    id: int
    user_agent: str | None
    created_at: datetime


class TopicOut(CamelOut):
    topic: str
    label: str
    description: str
    enabled: bool
    applies: bool  # false: this user's role is never notified of it


class PreferencesOut(CamelOut):
    topics: list[TopicOut]
    subscriptions: int  # this user's browsers that get notifications


class SendReportOut(CamelOut):
    sent: int
    removed: int  # the push service forgot them (404/410): removed here too
    failed: int
    refused: int  # endpoints this server does not send to


# -- bodies ------------------------------------------------------------------------------
Endpoint = Annotated[
    str, Field(min_length=8, max_length=MAX_ENDPOINT_CHARS, description="The push endpoint")
]


class KeysIn(CamelIn):
    p256dh: str = Field(min_length=1, max_length=200)
    auth: str = Field(min_length=1, max_length=100)


class SubscriptionIn(CamelIn):
    """``PushSubscription.toJSON()``, as the browser gives it."""

    endpoint: Endpoint
    keys: KeysIn
    expiration_time: float | None = None


class EndpointIn(CamelIn):
    endpoint: Endpoint


class PreferencesIn(CamelIn):
    topics: dict[str, bool] = Field(
        description=f"Topic → on or off; only those named change. Topics: {', '.join(TOPIC_NAMES)}"
    )


class TestIn(CamelIn):
    usernames: list[str] | None = Field(
        default=None, max_length=100, description="Whose browsers; default: the caller's own"
    )


def _preferences(
    push: PushService, principal: Principal, topics: list[TopicChoice]
) -> PreferencesOut:
    return PreferencesOut(
        topics=[TopicOut.model_validate(t, from_attributes=True) for t in topics],
        subscriptions=len(push.subscriptions(principal.user_id)),
    )


def _report(report: SendReport) -> SendReportOut:
    return SendReportOut.model_validate(report, from_attributes=True)


# -- routes ------------------------------------------------------------------------------
@router.get(PREFIX + "/vapid-key", response_model=VapidKeyOut)
def vapid_key(push: Push) -> VapidKeyOut:
    """The server's VAPID public key, for ``PushManager.subscribe`` (no login needed)."""
    return VapidKeyOut(public_key=push.public_key(), enabled=push.settings.push.enabled)


@router.post(PREFIX + "/subscribe", status_code=201, response_model=SubscriptionOut)
def subscribe(
    principal: User,
    push: Push,
    body: SubscriptionIn,
    user_agent: Annotated[str | None, Header()] = None,
) -> SubscriptionOut:
    """Keep this browser's subscription for the caller. 400 for an endpoint that is not
    https on a public address, or keys that are not a browser's."""
    made = push.subscribe(
        principal.user_id, body.endpoint, body.keys.p256dh, body.keys.auth, user_agent
    )
    return SubscriptionOut.model_validate(made, from_attributes=True)


@router.delete(PREFIX + "/subscribe", status_code=204, response_class=Response)
def unsubscribe(principal: User, push: Push, body: Annotated[EndpointIn, Body()]) -> Response:
    """Remove the caller's own subscription of that endpoint (404 when they have none)."""
    push.unsubscribe(principal.user_id, body.endpoint)
    return Response(status_code=204)


@router.get(PREFIX + "/preferences", response_model=PreferencesOut)
def preferences(principal: User, push: Push) -> PreferencesOut:
    """The topics that may notify the caller, each on or off."""
    return _preferences(push, principal, push.preferences(principal.user_id))


@router.put(PREFIX + "/preferences", response_model=PreferencesOut)
def set_preferences(principal: User, push: Push, body: PreferencesIn) -> PreferencesOut:
    """Turn topics on or off (400 for a topic that does not exist)."""
    return _preferences(push, principal, push.set_preferences(principal.user_id, body.topics))


@router.post(PREFIX + "/test", response_model=SendReportOut)
def send_test(
    principal: Admin, push: Push, body: Annotated[TestIn | None, Body()] = None
) -> SendReportOut:
    """A test notification to these users' browsers (default: the caller's own); 404
    for a user that does not exist."""
    names = (body.usernames if body else None) or [principal.username]
    ids = push.user_ids(names)
    return _report(push.send_test(ids))


@router.get("/sw.js", include_in_schema=False)
def service_worker() -> FileResponse:
    """The UI's service worker, at the root so that it controls every page of the UI:
    it shows notifications and opens their page when one is clicked."""
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache", "Service-Worker-Allowed": "/"}
    return FileResponse(SERVICE_WORKER, media_type="text/javascript", headers=headers)
