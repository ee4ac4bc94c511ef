"""``PushSubscriber``: the event dispatcher's Web Push subscriber
(``autorag.jobs.dispatcher.Subscriber``).

For an event a topic follows (``push.topics``), every browser of every user it concerns
who has not turned that topic off gets its notification; other events pass by at once.
A push service's failure is logged and not retried (push services keep messages for the
browser themselves, for ``push.ttl_s``), and a 404/410 removes the subscription
(``PushService.notify``). Keys that cannot be had (a malformed AUTORAG_VAPID_PRIVATE_KEY,
a sealed key no key of the ring opens) are logged as the operator's to fix, and the
event passes: deliver raises only on a bug.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from autorag.errors import InvalidInput, Unavailable
from autorag.push.service import PushService

if TYPE_CHECKING:
    from autorag.context import AppContext
    from autorag.store.catalog.outbox import Event

__all__ = ["PushSubscriber"]

log = logging.getLogger(__name__)


class PushSubscriber:
    name = "push"

    def __init__(self, service: PushService) -> None:
        self.service = service

    @classmethod
    def for_context(cls, context: AppContext) -> PushSubscriber:
        return cls(PushService.for_context(context))

    def deliver(self, event: Event) -> None:
        try:
            self.service.notify(event)
        except (InvalidInput, Unavailable) as error:
            log.error("web push: event %s not notified: %s", event.id, error)
