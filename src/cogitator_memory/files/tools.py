"""The memory tool as a model sees it: Anthropic's native ``memory_20250818`` definition, the
same commands as a generic function tool for every other model, and :func:`run_memory_tool`,
which answers a tool call with the text and error flag a tool result carries.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InvalidArgumentError
from .access import check_access
from .errors import MemoryFileError
from .paths import MEMORY_RESERVED_PATHS
from .service import AccessInput, MemoryFiles

#: The name the memory tool goes by.
MEMORY_TOOL_NAME = "memory"
#: The type of Anthropic's native memory tool.
NATIVE_MEMORY_TOOL_TYPE = "memory_20250818"

ToolFormat = Literal["openai", "anthropic", "json_schema"]

_DESCRIPTION = (
    "Your memory: a directory of files under /memories that outlasts this conversation. "
    "Check it before you start (view /memories), and write down what will matter next time. "
    "Commands: view (a directory two levels deep, or a file with line numbers; view_range "
    "[start, end] for some lines, end -1 for the rest), create (a new file with file_text), "
    "str_replace (replace old_str, which must appear exactly once, by new_str), insert "
    "(insert_text after line insert_line, 0 for the top), delete (a file or a directory) and "
    "rename (old_path to new_path). Every path starts with /memories."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
            "description": "What to do.",
        },
        "path": {
            "type": "string",
            "description": "The file or directory, starting with /memories (all but rename).",
        },
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": "view: [first line, last line] of a file, 1-based; -1 as the last for the end.",
        },
        "file_text": {"type": "string", "description": "create: the text of the new file."},
        "old_str": {"type": "string", "description": "str_replace: the text to replace, found exactly once."},
        "new_str": {"type": "string", "description": "str_replace: the text to put instead (empty deletes)."},
        "insert_line": {
            "type": "integer",
            "minimum": 0,
            "description": "insert: the line after which insert_text goes (0 for the start).",
        },
        "insert_text": {"type": "string", "description": "insert: the text to insert."},
        "old_path": {"type": "string", "description": "rename: the file or directory to move."},
        "new_path": {"type": "string", "description": "rename: where it goes."},
    },
    "required": ["command"],
    "additionalProperties": False,
}


def native_memory_tool(*, cache_control: dict[str, Any] | None = None) -> dict[str, Any]:
    """Anthropic's native memory tool for a Messages request (Claude 4 models and later):
    ``{"type": "memory_20250818", "name": "memory"}``, with ``cache_control`` when given.
    Claude then sends the commands :meth:`MemoryFiles.run` answers."""
    tool: dict[str, Any] = {"type": NATIVE_MEMORY_TOOL_TYPE, "name": MEMORY_TOOL_NAME}
    if cache_control is not None:
        tool["cache_control"] = dict(cache_control)
    return tool


def memory_function_tool(*, name: str = MEMORY_TOOL_NAME, format: ToolFormat = "openai") -> dict[str, Any]:
    """The memory tool as a function tool, for models without the native one: the six commands
    in one JSON Schema. ``format`` picks the envelope: ``"openai"`` (``{"type": "function",
    "function": {...}}``, chat completions), ``"anthropic"`` (``name``, ``description``,
    ``input_schema``) or ``"json_schema"`` (``name``, ``description``, ``parameters``)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("name", "must be a tool name")
    schema = json.loads(json.dumps(_PARAMETERS))  # a copy the caller may change
    if format == "openai":
        return {"type": "function", "function": {"name": name, "description": _DESCRIPTION, "parameters": schema}}
    if format == "anthropic":
        return {"name": name, "description": _DESCRIPTION, "input_schema": schema}
    if format == "json_schema":
        return {"name": name, "description": _DESCRIPTION, "parameters": schema}
    raise InvalidArgumentError("format", f"must be 'openai', 'anthropic' or 'json_schema', got {format!r}")


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool result carries: the text for the model, and whether it reports an error."""

    content: str
    is_error: bool = False


async def run_memory_tool(files: MemoryFiles, access: AccessInput, tool_input: object) -> ToolAnswer:
    """Answer one memory tool call: its input as the model sent it (a dict, or the JSON text of
    a function call's arguments). A refused command is an answer with ``is_error`` set and the
    refusal's text; a store failure raises, since the model cannot fix it.

    The paths memory writes itself (:data:`~cogitator_memory.files.paths.MEMORY_RESERVED_PATHS`:
    the playbook, its draft and the observations) are reserved on top of the access's own: the
    model views them and cannot change them."""
    checked = check_access(access)
    reserved = tuple(dict.fromkeys((*checked.reserved, *MEMORY_RESERVED_PATHS)))
    if reserved != checked.reserved:
        checked = dataclasses.replace(checked, reserved=reserved)
    command = tool_input
    if isinstance(command, str | bytes):
        try:
            command = json.loads(command)
        except ValueError:
            return ToolAnswer("Error: The tool input is not valid JSON", is_error=True)
    if not isinstance(command, dict):
        return ToolAnswer("Error: The tool input must be an object with a command", is_error=True)
    try:
        return ToolAnswer(await files.run(checked, command))
    except MemoryFileError as exc:
        return ToolAnswer(str(exc), is_error=True)


__all__ = [
    "MEMORY_TOOL_NAME",
    "NATIVE_MEMORY_TOOL_TYPE",
    "ToolAnswer",
    "ToolFormat",
    "memory_function_tool",
    "native_memory_tool",
    "run_memory_tool",
]
