"""Installed MCP tool servers' plain data: what the service returns to commands, routes,
the web UI and the chat.

An admin installs an MCP server for one workspace: a command started over stdio (an
argv list, never a shell line) or a streamable-HTTP URL (with optional headers, sealed at
rest). Installing connects once and keeps the tools the server listed; the *allowlist*
says which of them the agent may call. Each allowed tool becomes the skill
``mcp__<server>__<tool>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Transport = Literal["stdio", "http"]

# Server names are lowercase words with '-': "__" separates server and tool in a skill's
# name, so a server name never holds "_" (and a tool cannot pass for another server's).
NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,31}$"
# What a model API accepts as a tool's name (OpenAI's rule); a server's tool named
# otherwise cannot be offered and is left out at install.
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
SKILL_PREFIX = "mcp__"
MAX_SKILL_NAME = 64
# The secretbox purpose sealing HTTP servers' headers, bound to the row's id
# (backup/rekey.py's SEALED_COLUMNS names it too).
SECRET_PURPOSE = "mcp_server_headers"
INSTALLED_EVENT = "mcp.installed"
UNINSTALLED_EVENT = "mcp.uninstalled"
# A citation of a tool's source carries this identity (a datasource-style slash id,
# seed 000): /mcp/<server>/<tool>/<n>.
SOURCE_ROOT = "/mcp/"

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


def skill_name(server: str, tool: str) -> str:
    return f"{SKILL_PREFIX}{server}__{tool}"


def offerable(server: str, tool: str) -> bool:
    """Whether ``tool`` of ``server`` can be a skill: a model API accepts its name."""
    return bool(_TOOL_NAME.match(tool)) and len(skill_name(server, tool)) <= MAX_SKILL_NAME


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the server listed it (its description and schema are the server's
    words: data, shown to the model as the tool's description only)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """Where a server is reached: ``argv`` for stdio, ``url`` (+ ``headers``) for HTTP."""

    transport: Transport
    argv: tuple[str, ...] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class McpServer:
    name: str
    workspace: str
    transport: Transport
    command: tuple[str, ...]  # the argv of a stdio server; () for HTTP
    url: str | None  # an HTTP server's URL
    header_names: tuple[str, ...]  # an HTTP server's headers, names only (values sealed)
    tools: tuple[ToolInfo, ...]  # as listed when installed (or last tested)
    allowed: tuple[str, ...]  # the allowlist: tools the agent may call
    # How long a call may take once the server is up; None: agent.skill_timeout_s (which
    # bounds every call, start-up included, whatever this says).
    timeout_s: float | None
    created_at: datetime
    updated_at: datetime

    def allowed_tools(self) -> list[ToolInfo]:
        return [t for t in self.tools if t.name in self.allowed and offerable(self.name, t.name)]


@dataclass(frozen=True)
class ToolCallResult:
    """A tool's answer: its text, and the resources it pointed at (links and embedded
    resources), each a source to cite."""

    text: str
    links: tuple[Link, ...] = ()
    is_error: bool = False


@dataclass(frozen=True)
class Link:
    uri: str
    title: str
    description: str = ""


@dataclass(frozen=True)
class McpSource:
    """A source an MCP tool returned in an answer (``done.mcpSources``)."""

    server: str
    tool: str
    uri: str
    title: str
    number: int  # the source's number in the answer
    cited: bool  # the answer's text cites it


@dataclass(frozen=True)
class TestOutcome:
    ok: bool
    tools: tuple[str, ...]  # what the server lists now
    missing: tuple[str, ...]  # allowed tools the server no longer lists
    latency_ms: int
    error: str | None = None
