"""Who calls a tool, and the workspace a call reads: the API's own permission check.

A tool acts for its caller exactly as the API would: ``Caller.can`` (which is
``autorag.auth.permissions.is_allowed``) with the caller's role, how they signed in
and the workspaces they (and their API key) may act in. A workspace outside that scope
answers "no workspace 'x'", word for word what a missing one answers, so names cannot
be probed.
"""

from __future__ import annotations

from dataclasses import dataclass

from autorag.agent.skills.base import LOCAL_OPERATOR, Caller
from autorag.auth.permissions import in_scope
from autorag.chat.service import ChatService
from autorag.context import AppContext
from autorag.dlp.service import DlpContext, DlpService, DlpSession
from autorag.errors import Forbidden, InvalidInput, NotFound
from autorag.text import one_line

MAX_WORKSPACE_CHARS = 200


@dataclass(frozen=True)
class McpUser:
    """The caller of a tool. ``user_id`` None: the local operator (``autorag mcp``)."""

    user_id: int | None
    caller: Caller
    custom_instructions: str = ""


LOCAL_USER = McpUser(None, LOCAL_OPERATOR)


@dataclass(frozen=True)
class Services:
    """The running parts the tools use: one per process (the HTTP server's own)."""

    app: AppContext  # the configured (default) workspace's context
    chat: ChatService
    dlp: DlpService
    # The workspace a call that names none reads (``autorag mcp --default-workspace``);
    # None: the configured one, when the caller may read it.
    default_workspace: str | None = None


@dataclass(frozen=True)
class McpCall:
    """One tool call: the services, and whom it acts for."""

    services: Services
    user: McpUser

    def workspace(self, name: str | None, permission: str) -> AppContext:
        """The context of the workspace ``name`` (else the default one), when the caller
        holds ``permission`` there."""
        chosen = name.strip() if name and name.strip() else self._default_name()
        if len(chosen) > MAX_WORKSPACE_CHARS or not in_scope(self.user.caller.scope, chosen):
            raise NotFound(f"no workspace {one_line(chosen, 80)!r}")
        info = self.services.app.catalog.get_workspace(chosen)  # NotFound when missing
        if not self.user.caller.can(permission, chosen):
            raise Forbidden(f"not allowed: {permission} (role {self.user.caller.role})")
        return self.services.app.for_workspace(info)

    def _default_name(self) -> str:
        """The configured default workspace when the caller may read it, else the one
        workspace they may read; with several and none configured for them, they name one."""
        configured = self.services.default_workspace or self.services.app.info.name
        scope = self.user.caller.scope
        if scope is None or configured in scope:
            return configured
        if len(scope) == 1:
            return next(iter(scope))
        if not scope:
            raise Forbidden("these credentials may read no workspace")
        names = ", ".join(sorted(scope))
        raise InvalidInput(f"name a workspace: one of {one_line(names, 300)}")

    def dlp(self, app: AppContext, channel: str) -> DlpSession:
        """The DLP session of this caller in ``app``'s workspace, as the API's."""
        caller = self.user.caller
        context = DlpContext("chat", channel, self.user.user_id, caller.role, app.info.id)
        return self.services.dlp.session(context)
