"""Talking to an MCP server with the official SDK: list its tools, call one.

Every call opens its own connection and closes it (for stdio: the server process is
started for the call and stopped after it). Why not a pool: a tool that hangs or
crashes its server then costs exactly that call, never a later one or another user's;
no process outlives an answer; nothing of one call (a server's state, a half-read
stream) can reach the next. The price is the server's start-up per call (~0.7 s for a
Python server here), small next to a model's turn.

A stdio server is started without a shell (an argv list) with the SDK's minimal
environment (HOME, LOGNAME, PATH, SHELL, TERM, USER): no AUTORAG_* variable, no secret
of this process reaches it. Its stderr is discarded. An HTTP server's URL passes the
SSRF guard (``guard.py``) before the call, and every connection it opens goes to an
address the guard checked (no second lookup for DNS rebinding to answer).

Everything that can go wrong becomes ``Unavailable`` (the server cannot be reached, hung,
crashed, answered with a protocol error) with a message naming the server, so the
agent's tool result says the call failed and the answer goes on.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from autorag.errors import AutoragError, Unavailable
from autorag.mcp_tools.guard import check_url, guarded_transport
from autorag.mcp_tools.models import Endpoint, Link, ToolCallResult, ToolInfo
from autorag.net_guard import Resolver

T = TypeVar("T")
MAX_LINKS = 20  # sources one call may add
MAX_DESCRIPTION = 1000  # characters of a tool's description kept
# A server's listing is data from outside: what of it is kept, and sent to the model
# with every question, is bounded. A tool over these is left out.
MAX_TOOLS = 100
MAX_SCHEMA_CHARS = 20_000  # of a tool's input schema, as JSON
CANCEL_POLL_S = 0.1  # how often a call looks whether the answer was stopped


def list_tools(
    endpoint: Endpoint,
    *,
    timeout_s: float,
    allow_private: bool,
    where: str,
    resolver: Resolver | None = None,
) -> list[ToolInfo]:
    """The tools the server lists (connects, initializes, lists, closes)."""

    async def work(session: Any) -> list[ToolInfo]:
        listed = await session.list_tools()
        found = (_tool_info(tool) for tool in listed.tools[:MAX_TOOLS])
        return [tool for tool in found if tool is not None]

    return _run(
        endpoint, work, timeout_s=timeout_s, allow_private=allow_private, where=where,
        resolver=resolver,
    )  # fmt: skip


def call_tool(
    endpoint: Endpoint,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    timeout_s: float,
    allow_private: bool,
    where: str,
    call_timeout_s: float | None = None,
    cancel: threading.Event | None = None,
    resolver: Resolver | None = None,
) -> ToolCallResult:
    """``tool`` called with ``arguments``; its content as text and links. ``timeout_s``
    bounds it all (start-up included); ``call_timeout_s`` the call once the server is up
    (a server's own bound, set at install)."""

    async def work(session: Any) -> ToolCallResult:
        try:
            with anyio.fail_after(call_timeout_s):
                result = await session.call_tool(tool, dict(arguments))
        except TimeoutError:
            raise Unavailable(
                f"{where} did not answer within {call_timeout_s:g} s", code="mcp_timeout"
            ) from None
        return _call_result(result)

    return _run(
        endpoint, work, timeout_s=timeout_s, allow_private=allow_private, where=where,
        cancel=cancel, resolver=resolver,
    )  # fmt: skip


def _run(
    endpoint: Endpoint,
    work: Callable[[Any], Awaitable[T]],
    *,
    timeout_s: float,
    allow_private: bool,
    where: str,
    cancel: threading.Event | None = None,
    resolver: Resolver | None = None,
) -> T:
    if endpoint.transport == "http":
        check_url(endpoint.url or "", allow_private=allow_private, resolver=resolver)

    async def main() -> T:
        outcome: list[T] = []
        with anyio.fail_after(timeout_s):
            async with anyio.create_task_group() as group:
                if cancel is not None:
                    group.start_soon(_watch, cancel, group.cancel_scope)
                try:
                    async with _session(endpoint, allow_private, resolver) as session:
                        outcome.append(await work(session))
                finally:
                    group.cancel_scope.cancel()
        if not outcome:
            raise Unavailable(f"{where}: the call was stopped", code="mcp_call_stopped")
        return outcome[0]

    try:
        return anyio.run(main)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as raised:  # the SDK's, the process's, the network's: all one to us
        exc = _unwrapped(raised)
        if isinstance(exc, AutoragError):
            raise exc from None
        if isinstance(exc, TimeoutError):
            message = f"{where} did not answer within {timeout_s:g} s"
            raise Unavailable(message, code="mcp_timeout") from None
        raise Unavailable(f"{where} failed: {_reason(exc)}", code="mcp_server_failed") from None


async def _watch(cancel: threading.Event, scope: anyio.CancelScope) -> None:
    """Stop the call when the answer is stopped (the orchestrator's timeout sets it)."""
    while not cancel.is_set():
        await anyio.sleep(CANCEL_POLL_S)
    scope.cancel()


@asynccontextmanager
async def _session(
    endpoint: Endpoint, allow_private: bool, resolver: Resolver | None
) -> AsyncIterator[Any]:
    from mcp import ClientSession

    streams = _transport(endpoint, allow_private, resolver)
    async with streams as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def _transport(
    endpoint: Endpoint, allow_private: bool, resolver: Resolver | None
) -> AsyncIterator[Any]:
    if endpoint.transport == "stdio":
        from mcp import StdioServerParameters, stdio_client

        command, *args = endpoint.argv
        # env={}: only the SDK's minimal inherited variables (see the module docstring).
        params = StdioServerParameters(command=command, args=args, env={})
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    # The SDK's own client settings (its timeouts, no redirects but its in-origin ones)
    # on the guarded transport.
    http = httpx2.AsyncClient(
        headers=dict(endpoint.headers),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=guarded_transport(allow_private=allow_private, resolver=resolver),
    )
    async with http, streamable_http_client(endpoint.url or "", http_client=http) as streams:
        yield streams


def _tool_info(tool: Any) -> ToolInfo | None:
    """The tool as kept; None for one whose input schema is too large to offer."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}}
    if len(json.dumps(schema, default=str)) > MAX_SCHEMA_CHARS:
        return None
    description = str(tool.description or tool.title or "")[:MAX_DESCRIPTION]
    return ToolInfo(name=str(tool.name), description=description, input_schema=schema)


def _call_result(result: Any) -> ToolCallResult:
    texts: list[str] = []
    links: list[Link] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(str(block.text))
        elif kind == "resource_link" and len(links) < MAX_LINKS:
            links.append(_link(str(block.uri), block.title or block.name, block.description))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                texts.append(text)
            if len(links) < MAX_LINKS:
                links.append(_link(str(resource.uri), None, text))
        else:
            texts.append(f"({kind or 'unknown'} content, not shown)")
    if not texts and result.structured_content is not None:
        texts.append(str(result.structured_content))
    return ToolCallResult("\n\n".join(texts), tuple(links), bool(result.is_error))


def _link(uri: str, title: str | None, description: str | None) -> Link:
    return Link(uri=uri[:2000], title=(title or uri)[:300], description=(description or "")[:600])


def _unwrapped(exc: BaseException) -> BaseException:
    """The error inside task groups' wrappers: an AutoragError or a timeout if one is
    there, else the first."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = exc.exceptions
        exc = next(
            (e for e in inner if isinstance(e, AutoragError | TimeoutError | BaseExceptionGroup)),
            inner[0],
        )
    return exc


def _reason(exc: BaseException) -> str:
    """A short reason for people, one line."""
    text = " ".join(str(exc).split())[:200]
    return text or type(exc).__name__
