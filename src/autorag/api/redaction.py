"""The DLP session a request redacts through: who asks, in which workspace, on which
channel, and whether through the embeddable widget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Header

from autorag.api.auth import Principal, PrincipalDep
from autorag.api.deps import DlpServiceDep, WorkspaceDep
from autorag.context import AppContext
from autorag.dlp.service import DlpContext, DlpService, DlpSession, source_from_widget

WidgetHeader = Annotated[
    str | None,
    Header(alias="X-Widget-Id", max_length=200, description="Set by the embeddable widget"),
]


def workspace_dlp(channel: str) -> Callable[..., DlpSession]:
    """A dependency: the DLP session of a request on ``/api/workspaces/{workspace}/…``.

    Declare it after the route's ``require(…)``: it looks the workspace up.
    """

    def dependency(
        principal: PrincipalDep,
        context: WorkspaceDep,
        service: DlpServiceDep,
        widget: WidgetHeader = None,
    ) -> DlpSession:
        return dlp_session(service, principal, context, channel, widget)

    return dependency


def dlp_session(
    service: DlpService,
    principal: Principal,
    context: AppContext,
    channel: str,
    widget: str | None = None,
) -> DlpSession:
    """The DLP session of ``principal`` acting in ``context``'s workspace."""
    source = source_from_widget(widget)
    return service.session(
        DlpContext(source, channel, principal.user_id, principal.role, context.info.id)
    )
