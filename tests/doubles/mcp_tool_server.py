"""A small MCP tool server for the MCP client's tests, written with the official SDK and
run over stdio (``python tests/doubles/mcp_tool_server.py``).

Tools: ``lookup`` answers with text and a resource link (a source to cite), and says
whether any AUTORAG_* variable reached the process (names only); ``env_probe`` says only
that; ``hang`` never answers; ``crash`` ends the process mid-call; ``ignored`` is there to
be left out of an allowlist.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ResourceLink, TextContent

server = MCPServer("tool-double")


@server.tool(description="Look up the opening hours of a library branch.")
def lookup(branch: str) -> list[TextContent | ResourceLink]:
    return [
        TextContent(text=f"The {branch} branch opens at 9:00 and closes at 17:30."),
        TextContent(text=_leaked()),
        ResourceLink(
            uri=f"https://library.example/branches/{branch}",
            name=f"{branch}-hours",
            title=f"Opening hours: {branch}",
            description="the branch's page",
        ),
    ]


@server.tool(description="Which environment variables the server sees (names only).")
def env_probe() -> str:
    return _leaked()


def _leaked() -> str:
    leaked = sorted(k for k in os.environ if k.startswith("AUTORAG"))
    return "leaked: " + (",".join(leaked) if leaked else "none")


@server.tool(description="Never answers.")
async def hang() -> str:
    await anyio.sleep_forever()
    return "unreachable"


@server.tool(description="Ends the server's process in the middle of the call.")
def crash() -> str:
    sys.stdout.flush()
    os._exit(3)


@server.tool(description="A tool the allowlist leaves out.")
def ignored() -> str:
    return "you should not see this"


if __name__ == "__main__":
    server.run("stdio")
