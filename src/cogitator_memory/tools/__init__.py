"""Tools a model calls to use memory: ``remember``, ``recall`` and ``forget``
(:func:`create_memory_tools`), each a :class:`MemoryTool` rendering as an OpenAI function tool, an
Anthropic tool or an MCP tool, with an async handler. See ``docs/tools.md``."""

from .base import MemoryTool, ToolAnswer, ToolHandler, ToolShape, anthropic_tools, call_tool, mcp_tools, openai_tools
from .memory import (
    BROAD_FORGET,
    EVERYTHING,
    FACT_TYPE,
    MAX_FACT_CHARS,
    MAX_FORGET,
    MIN_RECALL_SCORE,
    RECALL_LIMIT,
    RELATIVE_RECALL_SCORE,
    create_memory_tools,
    fact_text,
    is_broad,
)

__all__ = [
    "BROAD_FORGET",
    "EVERYTHING",
    "FACT_TYPE",
    "MAX_FACT_CHARS",
    "MAX_FORGET",
    "MIN_RECALL_SCORE",
    "RECALL_LIMIT",
    "RELATIVE_RECALL_SCORE",
    "MemoryTool",
    "ToolAnswer",
    "ToolHandler",
    "ToolShape",
    "anthropic_tools",
    "call_tool",
    "create_memory_tools",
    "fact_text",
    "is_broad",
    "mcp_tools",
    "openai_tools",
]
