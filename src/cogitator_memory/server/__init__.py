"""Servers that expose the memory to other programs (``mcp``: the MCP server)."""
