"""Installed MCP tool servers: their tools as the agent's skills (issue 22)."""
