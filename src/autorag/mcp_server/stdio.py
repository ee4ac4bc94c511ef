"""``autorag mcp``: the MCP server on stdin/stdout, as the workspace's local operator.

Whoever runs the command owns the data folder, as with ``autorag ask``: the calls act
as the local operator (every workspace), DLP applying as it does to an admin's chat.
stdout carries the protocol alone: logs go to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import anyio

from autorag.chat.service import ChatService
from autorag.dlp.service import DlpService
from autorag.mcp_server.access import LOCAL_USER, McpCall, Services
from autorag.mcp_server.server import build_server

if TYPE_CHECKING:
    from autorag.context import AppContext


def serve_stdio(context: AppContext, *, default_workspace: str | None = None) -> None:
    """Serve the tools on stdio until the client closes stdin."""
    _logs_to_stderr()
    if default_workspace is not None:
        context.catalog.get_workspace(default_workspace)  # a typo fails now, not per call
    chat = ChatService.for_context(context)
    services = Services(
        context, chat, DlpService(context.catalog, context.settings.dlp), default_workspace
    )
    call = McpCall(services, LOCAL_USER)
    server = build_server(lambda _context: call)
    chat.router.start_polling(context.settings.llm.poll_seconds)
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:  # Ctrl+C in a terminal: a normal way to stop it
        pass
    finally:
        chat.router.stop_polling()


def _logs_to_stderr() -> None:
    """Every handler of the root logger writes to stderr (stdout is the protocol)."""
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.setStream(sys.stderr)
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
