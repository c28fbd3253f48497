"""The memory tool as a model sees it: Anthropic's native ``memory_20250818`` definition, the
same commands as a generic function tool for every other model, :func:`run_memory_tool`, which
answers a tool call with the text and error flag a tool result carries, and
:class:`MemoryFileTool`, the memory tool of one caller (a conversation, an MCP session), which
keeps the SHA-256 of each file as that caller last read it and sends it with every change, so an
edit made on a file another writer changed since is refused instead of written over theirs.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InvalidArgumentError
from .access import CheckedAccess, check_access
from .errors import MemoryFileError
from .paths import MEMORY_RESERVED_PATHS, is_at_or_under, normalize_path
from .records import MemoryFileVersion
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
    model views them and cannot change them.

    This call keeps nothing between calls: a change is checked against the version the caller
    last read only when the input carries ``expected_sha256``. :class:`MemoryFileTool` keeps
    that for a caller and sends it on its own."""
    command = _command(tool_input)
    if isinstance(command, ToolAnswer):
        return command
    return await _answer(files, _tool_access(access), command)


def _tool_access(access: AccessInput) -> CheckedAccess:
    """The access checked, with :data:`MEMORY_RESERVED_PATHS` reserved on top of its own."""
    checked = check_access(access)
    reserved = tuple(dict.fromkeys((*checked.reserved, *MEMORY_RESERVED_PATHS)))
    if reserved != checked.reserved:
        checked = dataclasses.replace(checked, reserved=reserved)
    return checked


def _command(tool_input: object) -> dict[str, Any] | ToolAnswer:
    """The command as a dict, or the error answer of an input that is not one."""
    command = tool_input
    if isinstance(command, str | bytes):
        try:
            command = json.loads(command)
        except ValueError:
            return ToolAnswer("Error: The tool input is not valid JSON", is_error=True)
    if not isinstance(command, dict):
        return ToolAnswer("Error: The tool input must be an object with a command", is_error=True)
    return command


async def _answer(files: MemoryFiles, access: CheckedAccess, command: dict[str, Any]) -> ToolAnswer:
    try:
        return ToolAnswer(await files.run(access, command))
    except MemoryFileError as exc:
        return ToolAnswer(str(exc), is_error=True)


#: The commands that change a file, and the argument naming the file they change.
_CHANGED_PATH = {"str_replace": "path", "insert": "path", "delete": "path", "rename": "old_path"}


class MemoryFileTool:
    """The memory tool of one caller (a conversation, an MCP client's session) over ``files``
    with ``access`` (a :class:`~cogitator_memory.files.access.FileAccess` or a dict of its
    fields).

    :meth:`run` answers a tool call as :func:`run_memory_tool` does, and remembers the SHA-256
    of every version a command showed this caller (``view`` of a file) or wrote for it. A later
    ``str_replace``, ``insert``, ``delete`` or ``rename`` of that file carries it as
    ``expected_sha256`` (unless the input gives its own), so when another writer changed the
    file since, the command is refused with "The file ... changed since it was read. View it
    again and try again." instead of being made on a text the model never saw. A file the
    caller never read is changed on what stands. :meth:`index` is the list of the files the
    access sees, for the caller's context. The access's own ``observe`` still hears of every
    version. One instance per caller: two callers sharing one would share what they read."""

    def __init__(self, files: MemoryFiles, access: AccessInput) -> None:
        if not isinstance(files, MemoryFiles):
            raise InvalidArgumentError("files", f"must be a MemoryFiles, got {type(files).__name__}")
        checked = _tool_access(access)
        self.files = files
        self._outer = checked.observe
        self.access = dataclasses.replace(checked, observe=self._saw)
        self._read: dict[str, str] = {}

    async def _saw(self, version: MemoryFileVersion) -> None:
        if version.sha256 is None:
            self._read.pop(version.path, None)
        else:
            self._read[version.path] = version.sha256
        if self._outer is not None:
            outcome = self._outer(version)
            if inspect.isawaitable(outcome):
                await outcome

    def last_read(self, path: str) -> str | None:
        """The SHA-256 of ``path`` as this caller last saw it (shown or written), or ``None``."""
        return self._read.get(normalize_path(path))

    async def run(self, tool_input: object) -> ToolAnswer:
        """Answer one memory tool call (a dict, or the JSON text of a function call's
        arguments); see the class docstring."""
        command = _command(tool_input)
        if isinstance(command, ToolAnswer):
            return command
        verb = command.get("command")
        changed = self._changed_path(command, _CHANGED_PATH.get(verb) if isinstance(verb, str) else None)
        if changed is not None and command.get("expected_sha256") is None and changed in self._read:
            command = {**command, "expected_sha256": self._read[changed]}
        answer = await _answer(self.files, self.access, command)
        if not answer.is_error and changed is not None and verb == "rename":
            for path in [p for p in self._read if is_at_or_under(p, changed)]:
                del self._read[path]  # moved: the new paths were heard of as written
        return answer

    @staticmethod
    def _changed_path(command: dict[str, Any], argument: str | None) -> str | None:
        """The normalized path the command changes, or ``None`` (a read, or a path the command
        itself will refuse)."""
        if argument is None or not isinstance(command.get(argument), str):
            return None
        try:
            return normalize_path(command[argument], argument=argument)
        except (MemoryFileError, InvalidArgumentError):
            return None

    async def index(self) -> str:
        """The files the access sees, one line each with its size, for the caller's context
        (``""`` when there are none); see :meth:`MemoryFiles.index`."""
        return await self.files.index(self.access)


__all__ = [
    "MEMORY_TOOL_NAME",
    "NATIVE_MEMORY_TOOL_TYPE",
    "MemoryFileTool",
    "ToolAnswer",
    "ToolFormat",
    "memory_function_tool",
    "native_memory_tool",
    "run_memory_tool",
]
