"""The MCP server: the knowledge base's tools for assistants and editors (issue 22)."""
