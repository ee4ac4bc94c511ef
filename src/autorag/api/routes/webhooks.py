"""Webhooks over HTTP (issue 21): list, register (201 with the secret, this once), read,
change, remove a webhook; send it a test event; read its delivery log.

Webhooks send the installation's events out: every route needs ``webhooks:admin``
(admins, in every workspace: an API key confined to some workspaces is refused), which
is protected: a password login, or an API key created with the ``admin:protection``
scope. The service (``autorag.webhooks.service``) does the work; these routes only
translate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import AppDep
from autorag.api.routes.archives import CamelIn
from autorag.auth.permissions import WEBHOOKS_ADMIN
from autorag.errors import InvalidInput
from autorag.store.catalog.outbox import EVENT_NAMES
from autorag.webhooks.guard import MAX_URL
from autorag.webhooks.models import Delivery, Webhook
from autorag.webhooks.service import MAX_DELIVERIES, NAME_PATTERN, WebhookService
from autorag.wiki.wire import CAMEL_CASE

router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])

Admin = Annotated[Principal, Depends(require(WEBHOOKS_ADMIN, every_workspace=True))]
Name = Annotated[str, Path(min_length=1, max_length=64, pattern=NAME_PATTERN)]
Url = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_URL,
        description="https:// (or http://) URL; private and loopback hosts are refused "
        "unless webhooks.allow_private",
    ),
]
Events = Annotated[
    list[Annotated[str, Field(max_length=64)]],
    Field(max_length=len(EVENT_NAMES), description="Event names; [] means every event"),
]


def _service(context: AppDep) -> WebhookService:
    return WebhookService.for_context(context)


Webhooks = Annotated[WebhookService, Depends(_service)]


# -- answers ----------------------------------------------------------------------------
class Out(BaseModel):
    model_config = ConfigDict(**CAMEL_CASE, from_attributes=True)


class DeliveryOut(Out):
    id: int
    webhook: str
    event_id: int | None  # None for a test event
    event: str
    delivery_id: str  # the X-Webhook-Id header
    attempt: int
    status: Literal["delivered", "failed", "refused"]
    response_code: int | None
    latency_ms: int | None
    error: str | None
    attempted_at: datetime


class WebhookOut(Out):
    name: str
    url: str
    events: list[str]  # [] = every event
    enabled: bool
    disabled_reason: str | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime
    last_delivery: DeliveryOut | None


class CreatedOut(WebhookOut):
    secret: str = Field(
        description="Signs every delivery (X-Webhook-Signature); shown this once only"
    )


class WebhookListOut(Out):
    webhooks: list[WebhookOut]
    event_names: dict[str, str]  # every event a webhook may want → what it means


class DeliveryListOut(Out):
    deliveries: list[DeliveryOut]  # newest first


def _out(webhook: Webhook) -> WebhookOut:
    return WebhookOut.model_validate(webhook)


# -- bodies -----------------------------------------------------------------------------
class WebhookIn(CamelIn):
    name: str = Field(min_length=1, max_length=64, pattern=NAME_PATTERN)
    url: Url
    events: Events = Field(default_factory=list)


class WebhookPatch(CamelIn):
    """Only the keys given change."""

    url: Url | None = None
    events: Events | None = None
    enabled: bool | None = None


# -- routes -----------------------------------------------------------------------------
@router.get("", response_model=WebhookListOut)
def list_webhooks(principal: Admin, webhooks: Webhooks) -> WebhookListOut:
    """The webhooks, each with its last delivery; and the events one may want."""
    listed = [_out(webhook) for webhook in webhooks.list()]
    return WebhookListOut(webhooks=listed, event_names=dict(EVENT_NAMES))


@router.post("", status_code=201, response_model=CreatedOut)
def create_webhook(principal: Admin, webhooks: Webhooks, body: WebhookIn) -> CreatedOut:
    """Register a webhook; the answer carries its secret, shown this once only (keep it:
    the receiver checks signatures with it). 400 for a URL refused (a private host),
    409 for a name taken."""
    webhook, secret = webhooks.create(body.name, body.url, body.events)
    return CreatedOut.model_validate({**_out(webhook).model_dump(), "secret": secret})


@router.get("/{name}", response_model=WebhookOut)
def get_webhook(principal: Admin, webhooks: Webhooks, name: Name) -> WebhookOut:
    return _out(webhooks.get(name))


@router.patch("/{name}", response_model=WebhookOut)
def update_webhook(
    principal: Admin, webhooks: Webhooks, name: Name, body: WebhookPatch
) -> WebhookOut:
    """Change its URL or events; ``enabled`` turns it on (its failure count cleared) or
    off."""
    given = body.model_dump(exclude_unset=True)
    if any(value is None for value in given.values()):
        raise InvalidInput("a webhook's settings cannot be null: leave out what does not change")
    if "url" in given or "events" in given:
        webhooks.update(name, url=given.get("url"), events=given.get("events"))
    if given.get("enabled") is True:
        webhooks.enable(name)
    elif given.get("enabled") is False:
        webhooks.disable(name, f"turned off by {principal.username}")
    return _out(webhooks.get(name))


@router.delete("/{name}", status_code=204, response_class=Response)
def delete_webhook(principal: Admin, webhooks: Webhooks, name: Name) -> Response:
    """Remove it, and its delivery log."""
    webhooks.delete(name)
    return Response(status_code=204)


@router.post("/{name}/rotate-secret", response_model=CreatedOut)
def rotate_secret(principal: Admin, webhooks: Webhooks, name: Name) -> CreatedOut:
    """A new secret for the webhook, shown this once; the old one signs nothing more
    (give the new one to the receiver). 404 for an unknown webhook."""
    webhook, secret = webhooks.rotate_secret(name)
    return CreatedOut.model_validate({**_out(webhook).model_dump(), "secret": secret})


@router.post("/{name}/test", response_model=DeliveryOut)
def send_test(principal: Admin, webhooks: Webhooks, name: Name) -> DeliveryOut:
    """POST a ``webhook.test`` event to it now, once (enabled or not), and answer how it
    went: ``status`` delivered, failed or refused, the receiver's code and the error."""
    delivery: Delivery = webhooks.send_test(name, actor=principal.username)
    return DeliveryOut.model_validate(delivery)


@router.get("/{name}/deliveries", response_model=DeliveryListOut)
def list_deliveries(
    principal: Admin,
    webhooks: Webhooks,
    name: Name,
    limit: Annotated[int, Query(ge=1, le=MAX_DELIVERIES)] = 50,
) -> DeliveryListOut:
    """Its delivery log, newest first: one row per attempt (retries included)."""
    found = webhooks.deliveries(name, limit)
    return DeliveryListOut(deliveries=[DeliveryOut.model_validate(d) for d in found])
