"""A tool a model can call: :class:`MemoryTool` (name, description, JSON Schema, async handler)
and the shapes model APIs take it in.

One definition renders as an OpenAI function tool (:meth:`MemoryTool.to_openai`), an Anthropic
tool (:meth:`MemoryTool.to_anthropic`) and an MCP tool (:meth:`MemoryTool.to_mcp`); the
``*_tools`` functions render a list. A call goes through :meth:`MemoryTool.call` (the arguments
as the model sent them: a dict or the JSON text of a function call) and gives a JSON-ready dict;
:meth:`MemoryTool.run` gives the :class:`~cogitator_memory.files.tools.ToolAnswer` (text and
error flag) a tool result message carries.

What the model got wrong (a missing or wrong-typed argument, an unknown one, a refused request)
comes back as ``{"error": "<argument>: <problem>"}``, never as an exception, so the model can read
it and try again. A store failure (``StoreUnavailableError``) raises, as the file memory tool's
does: the model cannot fix it, the application decides.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..files.tools import ToolAnswer

#: The shapes a tool definition renders as: ``"openai"`` (chat completions function tool),
#: ``"anthropic"`` (Messages API tool), ``"mcp"`` (a tool of an MCP ``tools/list`` answer) and
#: ``"json_schema"`` (``name``, ``description``, ``parameters``).
ToolShape = Literal["openai", "anthropic", "mcp", "json_schema"]
#: What a handler takes (the checked arguments) and gives (a JSON-ready dict).
ToolHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float)}


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


@dataclass(frozen=True)
class MemoryTool:
    """A tool a model calls: ``name``, ``description`` (what the model reads to decide), the
    JSON Schema of its arguments (``parameters``: an object of simple typed properties), and
    ``handler``, the coroutine answering a call with arguments already checked against the schema.
    ``read_only``, ``destructive`` and ``idempotent`` become MCP annotations (with
    ``openWorldHint`` false: the tools reach only the memory)."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler = field(repr=False)
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    # ----- definitions ---------------------------------------------------------------------------

    def to_openai(self) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {"type": "function", "function": self.to_json_schema()}

    def to_anthropic(self) -> dict[str, Any]:
        """``{"name", "description", "input_schema"}``."""
        return {"name": self.name, "description": self.description, "input_schema": _copy(self.parameters)}

    def to_mcp(self) -> dict[str, Any]:
        """``{"name", "description", "inputSchema", "annotations"}`` (see :meth:`annotations`)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": _copy(self.parameters),
            "annotations": self.annotations(),
        }

    def annotations(self) -> dict[str, bool]:
        """The MCP tool annotations: ``readOnlyHint``, ``destructiveHint``, ``idempotentHint``
        and ``openWorldHint`` (always false: a memory tool reaches only the memory)."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def to_json_schema(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": _copy(self.parameters)}

    def definition(self, shape: ToolShape = "openai") -> dict[str, Any]:
        """The definition in one of the :data:`ToolShape` shapes (a fresh copy each call)."""
        render = {
            "openai": self.to_openai,
            "anthropic": self.to_anthropic,
            "mcp": self.to_mcp,
            "json_schema": self.to_json_schema,
        }.get(shape)
        if render is None:
            raise InvalidArgumentError("shape", f"must be 'openai', 'anthropic', 'mcp' or 'json_schema', got {shape!r}")
        return render()

    # ----- calls -----------------------------------------------------------------------------------

    def check_arguments(self, arguments: object) -> dict[str, Any]:
        """The arguments as a dict checked against :attr:`parameters` (a JSON text is parsed
        first); ``InvalidArgumentError`` naming the argument otherwise."""
        if isinstance(arguments, str | bytes):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                raise InvalidArgumentError("arguments", "are not valid JSON: send a JSON object") from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise InvalidArgumentError("arguments", f"must be a JSON object, got {type(arguments).__name__}")
        properties: dict[str, Any] = self.parameters.get("properties", {})
        for key in arguments:
            if key not in properties:
                known = ", ".join(properties)
                raise InvalidArgumentError(str(key), f"is not an argument of {self.name} (its arguments: {known})")
        for key in self.parameters.get("required", []):
            if arguments.get(key) is None:
                raise InvalidArgumentError(key, "is required")
        checked: dict[str, Any] = {}
        for key, value in arguments.items():
            if value is None:
                continue  # null stands for "not given"
            spec = properties[key]
            kind = spec.get("type", "string")
            if not isinstance(value, _TYPES.get(kind, (object,))) or (kind != "boolean" and isinstance(value, bool)):
                raise InvalidArgumentError(key, f"must be a {kind}, got {_json_type(value)}")
            if isinstance(value, str):
                if spec.get("minLength", 0) > 0 and not value.strip():
                    raise InvalidArgumentError(key, "must not be empty")
                if "maxLength" in spec and len(value) > spec["maxLength"]:
                    raise InvalidArgumentError(key, f"must be at most {spec['maxLength']} characters")
                if "enum" in spec and value not in spec["enum"]:
                    raise InvalidArgumentError(key, f"must be one of {', '.join(spec['enum'])}")
            checked[key] = value
        return checked

    async def call(self, arguments: object) -> dict[str, Any]:
        """Answer one call: the handler's dict, or ``{"error": ...}`` for what the model got wrong
        (bad arguments, a refused request, a record that changed or went meanwhile)."""
        try:
            return await self.handler(self.check_arguments(arguments))
        except InvalidArgumentError as exc:
            # raised here: argument and problem; unwrapped from a store's result: the message
            problem = getattr(exc, "problem", None)
            return {"error": f"{exc.argument}: {problem}" if problem is not None else str(exc)}
        except (NotFoundError, ConflictError) as exc:
            return {"error": str(exc)}

    async def run(self, arguments: object) -> ToolAnswer:
        """:meth:`call`, as the JSON text and error flag of a tool result."""
        answer = await self.call(arguments)
        return ToolAnswer(json.dumps(answer, ensure_ascii=False), is_error="error" in answer)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, Sequence):
        return "an array"
    return type(value).__name__


def _definitions(tools: Sequence[MemoryTool], shape: ToolShape) -> list[dict[str, Any]]:
    return [tool.definition(shape) for tool in tools]


def openai_tools(tools: Sequence[MemoryTool]) -> list[dict[str, Any]]:
    """The ``tools`` of an OpenAI chat completions request."""
    return _definitions(tools, "openai")


def anthropic_tools(tools: Sequence[MemoryTool]) -> list[dict[str, Any]]:
    """The ``tools`` of an Anthropic Messages request."""
    return _definitions(tools, "anthropic")


def mcp_tools(tools: Sequence[MemoryTool]) -> list[dict[str, Any]]:
    """The ``tools`` of an MCP ``tools/list`` answer."""
    return _definitions(tools, "mcp")


async def call_tool(tools: Sequence[MemoryTool], name: str, arguments: object) -> dict[str, Any]:
    """Answer a call of the tool named ``name`` among ``tools`` (``{"error": ...}`` for a name
    none of them has), as :meth:`MemoryTool.call`."""
    for tool in tools:
        if tool.name == name:
            return await tool.call(arguments)
    return {"error": f"name: no tool is called {name!r} (the tools: {', '.join(t.name for t in tools)})"}


__all__ = [
    "MemoryTool",
    "ToolAnswer",
    "ToolHandler",
    "ToolShape",
    "anthropic_tools",
    "call_tool",
    "mcp_tools",
    "openai_tools",
]
