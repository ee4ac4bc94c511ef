"""``McpToolService``: a workspace's MCP tool servers, as every face uses them.

``install`` connects once (the command started, or the URL reached), lists the server's
tools and stores them with the allowlist (the tools given; none given: every tool the
server listed then — a tool the server adds later is never offered until allowed); a
server that cannot be reached is refused with the reason. ``update`` changes the
allowlist, ``test`` connects again and refreshes the stored tools, ``uninstall`` removes
it. Installing and uninstalling write ``mcp.installed`` / ``mcp.uninstalled``.
"""

from __future__ import annotations

import builtins
import json
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from autorag.errors import Conflict, InvalidInput, NotFound, Unavailable
from autorag.mcp_tools import client, store
from autorag.mcp_tools.guard import check_url
from autorag.mcp_tools.models import (
    NAME_PATTERN,
    SECRET_PURPOSE,
    Endpoint,
    McpServer,
    TestOutcome,
    ToolInfo,
    offerable,
)
from autorag.secretbox import catalog_box

if TYPE_CHECKING:
    from autorag.context import AppContext

_NAME = re.compile(NAME_PATTERN)
MAX_ARGV = 64
MAX_ARG_CHARS = 4000
MAX_HEADERS = 20
MAX_TIMEOUT_S = 600.0
_HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,100}$")


class McpToolService:
    """The MCP servers of ``app``'s workspace (see the module docstring)."""

    def __init__(self, app: AppContext) -> None:
        self.app = app
        self.engine = app.catalog.engine
        self.settings = app.settings.mcp_tools

    # -- installing ------------------------------------------------------------------------
    def install(
        self,
        name: str,
        *,
        command: str | Sequence[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[str] | None = None,
        timeout_s: float | None = None,
        actor: str | None = None,
    ) -> McpServer:
        """Install a server (one of ``command`` and ``url``). ``InvalidInput`` for a bad
        name, command, URL (a private host refused) or an allowed tool the server does not
        list; ``mcp_server_unreachable`` when it cannot be reached; ``Conflict`` when the
        name is taken in this workspace."""
        checked = _checked_name(name)
        endpoint = self._endpoint(command, url, headers or {})
        if self._find(checked) is not None:
            raise _taken(checked)
        listed = self._list_tools(endpoint, checked)
        allowed = _checked_allowlist(checked, listed, tools)
        new = store.NewServer(
            checked, endpoint.transport, endpoint.argv, endpoint.url, endpoint.headers,
            listed, allowed, _checked_timeout(timeout_s),
        )  # fmt: skip
        box = catalog_box(self.engine, SECRET_PURPOSE)
        inserted = store.insert_server(
            self.engine, self.app.info.id, self.app.info.name, new,
            seal=lambda text, bound: box.seal(text, bound_to=bound), actor=actor,
        )  # fmt: skip
        if not inserted:
            raise _taken(checked)
        return self.get(checked)

    def list(self) -> builtins.list[McpServer]:
        return [s.server for s in store.list_servers(self.engine, *self._ws)]

    def get(self, name: str) -> McpServer:
        return self._stored(name).server

    def update(
        self,
        name: str,
        *,
        tools: Sequence[str] | None = None,
        timeout_s: float | None = None,
        clear_timeout: bool = False,
    ) -> McpServer:
        """The allowlist replaced by ``tools`` (each one the server listed), the call
        bound set to ``timeout_s`` (or cleared); what is not given stays."""
        server = self.get(name)
        if tools is not None:
            allowed = _checked_allowlist(server.name, builtins.list(server.tools), tools)
            store.set_allowed(self.engine, self.app.info.id, server.name, allowed)
        if timeout_s is not None or clear_timeout:
            bound = None if clear_timeout else _checked_timeout(timeout_s)
            store.set_timeout(self.engine, self.app.info.id, server.name, bound)
        return self.get(name)

    def uninstall(self, name: str, *, actor: str | None = None) -> None:
        if not store.delete_server(self.engine, *self._ws, name, actor=actor):
            raise _missing(name)

    def test(self, name: str) -> TestOutcome:
        """Connect again and list the tools (kept as the server's current ones); the
        allowlist is unchanged, its tools the server no longer lists are reported."""
        stored = self._stored(name)
        began = time.perf_counter()
        try:
            listed = self._list_tools(self.endpoint(stored), stored.server.name)
        except (InvalidInput, Unavailable) as exc:
            elapsed = int((time.perf_counter() - began) * 1000)
            return TestOutcome(False, (), (), elapsed, exc.message)
        elapsed = int((time.perf_counter() - began) * 1000)
        store.set_tools(self.engine, self.app.info.id, stored.server.name, listed)
        names = tuple(t.name for t in listed)
        missing = tuple(t for t in stored.server.allowed if t not in names)
        return TestOutcome(True, names, missing, elapsed)

    # -- for the skills --------------------------------------------------------------------
    def endpoint(self, stored: store.StoredServer) -> Endpoint:
        """Where ``stored`` is reached, its headers unsealed."""
        server = stored.server
        if server.transport == "stdio":
            return Endpoint("stdio", argv=server.command)
        headers: dict[str, str] = {}
        if stored.headers_sealed:
            box = catalog_box(self.engine, SECRET_PURPOSE)
            headers = json.loads(box.open(stored.headers_sealed, bound_to=str(stored.id)))
        return Endpoint("http", url=server.url, headers=headers)

    def stored(self) -> builtins.list[store.StoredServer]:
        return store.list_servers(self.engine, *self._ws)

    # -- helpers ---------------------------------------------------------------------------
    @property
    def _ws(self) -> tuple[int, str]:
        return self.app.info.id, self.app.info.name

    def _find(self, name: str) -> store.StoredServer | None:
        return store.load_server(self.engine, *self._ws, name)

    def _stored(self, name: str) -> store.StoredServer:
        found = self._find(name)
        if found is None:
            raise _missing(name)
        return found

    def _endpoint(
        self, command: str | Sequence[str] | None, url: str | None, headers: Mapping[str, str]
    ) -> Endpoint:
        if (command is None) == (url is None):
            raise InvalidInput("give an MCP server either a command (stdio) or a URL (HTTP)")
        if command is not None:
            if headers:
                raise InvalidInput("headers are for HTTP servers; a command takes none")
            return Endpoint("stdio", argv=_checked_argv(command))
        checked = check_url((url or "").strip(), allow_private=self.settings.allow_private)
        return Endpoint("http", url=checked, headers=_checked_headers(headers))

    def _list_tools(self, endpoint: Endpoint, name: str) -> builtins.list[ToolInfo]:
        try:
            return client.list_tools(
                endpoint, timeout_s=self.settings.connect_timeout_s,
                allow_private=self.settings.allow_private, where=f"the MCP server {name!r}",
            )  # fmt: skip
        except Unavailable as exc:
            raise InvalidInput(
                f"cannot install: {exc.message}", code="mcp_server_unreachable"
            ) from None


def _checked_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidInput(
            f"bad MCP server name {name[:80]!r}: lowercase letters, digits and '-', at most "
            "32, starting with a letter or digit"
        )
    return name


def _checked_timeout(timeout_s: float | None) -> float | None:
    if timeout_s is not None and not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise InvalidInput(f"a call's timeout is more than 0 and at most {MAX_TIMEOUT_S:g} s")
    return timeout_s


def _checked_argv(command: str | Sequence[str]) -> tuple[str, ...]:
    """An argv list: a string is split as a POSIX shell would split it, and is never
    given to a shell."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError as exc:
        raise InvalidInput(f"cannot read the command: {exc}") from None
    if not argv or not argv[0].strip():
        raise InvalidInput("the command is empty")
    if len(argv) > MAX_ARGV or any(len(a) > MAX_ARG_CHARS or "\x00" in a for a in argv):
        raise InvalidInput(f"a command has at most {MAX_ARGV} arguments, no NUL, none huge")
    return tuple(argv)


def _checked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    if len(headers) > MAX_HEADERS:
        raise InvalidInput(f"at most {MAX_HEADERS} headers")
    for key, value in headers.items():
        if not _HEADER_NAME.match(key) or any(c in value for c in "\r\n\x00"):
            raise InvalidInput(f"bad header {key[:100]!r}: a name of letters, digits, '-'")
    return dict(headers)


def _checked_allowlist(
    server: str, listed: Sequence[ToolInfo], tools: Sequence[str] | None
) -> builtins.list[str]:
    """The tools allowed: those given (each listed by the server and usable as a skill
    name), or, when none are given, every listed tool that can be a skill."""
    usable = [t.name for t in listed if offerable(server, t.name)]
    if tools is None:
        return usable
    wanted = sorted({t.strip() for t in tools if t.strip()})
    unknown = [t for t in wanted if t not in usable]
    if unknown:
        known = ", ".join(usable) or "none"
        raise InvalidInput(
            f"the MCP server {server!r} has no usable tool {unknown[0][:64]!r} (its tools: "
            f"{known[:1000]})",
            code="mcp_unknown_tool",
        )
    return wanted


def _missing(name: str) -> NotFound:
    return NotFound(f"no MCP server {name[:100]!r} in this workspace", code="mcp_server_not_found")


def _taken(name: str) -> Conflict:
    return Conflict(f"an MCP server named {name!r} is installed", code="mcp_server_exists")
