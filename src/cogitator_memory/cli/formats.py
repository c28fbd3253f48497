"""The files the command line reads and writes, without I/O on a store.

* :func:`read_import_file` reads a file (or stdin) and tells an OpenAI-style message list
  (JSON list, ``{"messages": [...]}`` or JSONL) from a file written by ``export``.
* :func:`openai_messages_to_entries` turns OpenAI chat messages into :class:`NewMemoryEntry`
  records (tool calls in OpenAI's shape become :class:`ToolCall` records).
* :func:`export_document` / :func:`parse_export` write and read the export format: the thread
  record and every entry of its tree with their parent ids.

Every problem with the input raises :class:`CliError` with one line naming where it is.
"""

from __future__ import annotations

import heapq
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from .. import __version__
from ..threads.records import ImageURL, ImageURLPart, MemoryEntry, Message, NewMemoryEntry, TextPart, Thread, ToolCall

#: The ``format`` field of an export file.
EXPORT_FORMAT = "cogitator-memory/thread"
EXPORT_VERSION = 1
#: The role OpenAI gives instructions in newer models, stored as ``system``.
_ROLE_ALIASES = {"developer": "system"}
_ROLES = ("system", "user", "assistant", "tool")
_TEXT_PART_TYPES = ("text", "input_text", "output_text")


class CliError(Exception):
    """A user error: the command stops and prints this one line. ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(" ".join(message.split()))
        self.code = code


@dataclass(frozen=True)
class ImportFile:
    """What an import file holds: a list of chat messages, or an exported thread."""

    kind: Literal["messages", "export"]
    messages: list[dict[str, Any]] | None = None
    export: ExportedThread | None = None


@dataclass(frozen=True)
class ExportedThread:
    """A thread read from an export file: the record, and its entries parents first."""

    thread: Thread
    entries: list[MemoryEntry]


# --- reading ------------------------------------------------------------------------------


def read_text(path: str) -> str:
    """The text of ``path`` (UTF-8, a BOM allowed), or stdin for ``-``."""
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CliError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"cannot read {path}: it is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None


def _json_error(where: str, exc: json.JSONDecodeError) -> CliError:
    return CliError(f"{where}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")


def _load_jsonl(name: str, text: str) -> list[Any]:
    items: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise CliError(f"{name}:{number}: invalid JSON at column {exc.colno}: {exc.msg}") from None
    return items


def read_import_file(path: str) -> ImportFile:
    """Read and classify an import file (see the module docstring)."""
    name = "stdin" if path == "-" else path
    text = read_text(path)
    if not text.strip():
        raise CliError(f"{name} is empty: expected JSON messages, JSONL, or a file written by export")
    data: Any
    if path.lower().endswith((".jsonl", ".ndjson")):
        data = _load_jsonl(name, text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise _json_error(name, exc) from None
            data = _load_jsonl(name, text)
    if isinstance(data, dict):
        if "entries" in data and "thread" in data:
            return ImportFile("export", export=parse_export(name, data))
        if "messages" in data:
            data = data["messages"]
            if not isinstance(data, list):
                raise CliError(f"{name}: 'messages' must be a list of messages")
        elif "role" in data:
            data = [data]
        else:
            raise CliError(f'{name}: expected a list of messages, {{"messages": [...]}}, or a file written by export')
    if not isinstance(data, list):
        raise CliError(f"{name}: expected a list of messages, got a JSON {type(data).__name__}")
    if not data:
        raise CliError(f"{name} holds no messages")
    for index, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            raise CliError(f"{name}: message {index} must be a JSON object, got {type(item).__name__}")
    return ImportFile("messages", messages=data)


# --- OpenAI messages ----------------------------------------------------------------------


def _content(where: str, value: Any) -> str | list[Any]:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise CliError(f"{where}: 'content' must be text or a list of content parts")
    parts: list[Any] = []
    for number, part in enumerate(value, start=1):
        if isinstance(part, str):
            parts.append(TextPart(text=part))
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            parts.append(TextPart(text=part["text"]))
        elif kind == "image_url":
            image = part.get("image_url")
            image = {"url": image} if isinstance(image, str) else image
            try:
                parts.append(ImageURLPart(image_url=ImageURL.model_validate(image)))
            except ValidationError:
                raise CliError(f"{where}: content part {number} needs 'image_url': {{\"url\": ...}}") from None
        elif isinstance(part, dict) and kind in ("image_base64",):
            parts.append(part)
        else:
            raise CliError(f"{where}: content part {number} has type {kind!r}; supported: text, image_url")
    return parts


def _tool_call(where: str, call: Any) -> ToolCall:
    if not isinstance(call, dict):
        raise CliError(f"{where}: each tool call must be an object")
    function = call.get("function")
    if isinstance(function, dict):  # OpenAI: {id, type: "function", function: {name, arguments: "<json>"}}
        name, raw = function.get("name"), function.get("arguments", "{}")
    else:  # our own shape: {id, name, arguments: {...}}
        name, raw = call.get("name"), call.get("arguments", {})
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise CliError(f"{where}: a tool call needs an 'id'")
    if not isinstance(name, str) or not name:
        raise CliError(f"{where}: tool call {call_id} needs a function 'name'")
    arguments: dict[str, Any] = {}
    argument_error: str | None = None
    if isinstance(raw, dict):
        arguments = raw
    elif isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            arguments = parsed
        else:
            argument_error = raw  # kept word for word, as a model produced it
    else:
        raise CliError(f"{where}: the arguments of tool call {call_id} must be a JSON string or object")
    return ToolCall(id=call_id, name=name, arguments=arguments, argument_error=argument_error)


def openai_messages_to_entries(name: str, messages: list[dict[str, Any]]) -> list[NewMemoryEntry]:
    """Entries for OpenAI chat messages, in order, for a thread yet to be named.

    Assistant ``tool_calls`` become the message's :class:`ToolCall` records (arguments parsed
    from their JSON string; text that does not parse to an object is kept in
    ``argument_error``); a ``tool`` message becomes a ``tool_result`` entry named after the
    call it answers. ``developer`` is stored as ``system``. Keys other than role, content,
    name, tool_calls and tool_call_id are ignored.
    """
    entries: list[NewMemoryEntry] = []
    call_names: dict[str, str] = {}
    for index, raw in enumerate(messages, start=1):
        where = f"{name}: message {index}"
        role = raw.get("role")
        role = _ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
        if role not in _ROLES:
            raise CliError(f"{where}: 'role' must be one of system, developer, user, assistant, tool; got {role!r}")
        if "function_call" in raw and raw["function_call"] is not None:
            raise CliError(f"{where}: legacy 'function_call' is not supported; use 'tool_calls'")
        fields: dict[str, Any] = {"role": role, "content": _content(where, raw.get("content"))}
        sender = raw.get("name")
        if sender is not None:
            if not isinstance(sender, str):
                raise CliError(f"{where}: 'name' must be a string")
            fields["name"] = sender
        calls = raw.get("tool_calls")
        if calls:
            if role != "assistant":
                raise CliError(f"{where}: only assistant messages carry 'tool_calls'")
            if not isinstance(calls, list):
                raise CliError(f"{where}: 'tool_calls' must be a list")
            fields["tool_calls"] = [_tool_call(where, call) for call in calls]
            call_names.update({call.id: call.name for call in fields["tool_calls"]})
        entry_type = "message"
        if role == "tool":
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise CliError(f"{where}: a tool message needs 'tool_call_id'")
            fields["tool_call_id"] = call_id
            if "name" not in fields and call_id in call_names:
                fields["name"] = call_names[call_id]
            entry_type = "tool_result"
        try:
            message = Message.model_validate(fields)
            entries.append(NewMemoryEntry(thread_id="pending", type=entry_type, message=message))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ()))
            raise CliError(f"{where}: {field or 'message'}: {first.get('msg', 'invalid')}") from None
    return entries


# --- the export format --------------------------------------------------------------------


def export_document(thread: Thread, entries: list[MemoryEntry]) -> dict[str, Any]:
    """The export of a thread: its record and every entry (all branches) in ``seq`` order."""
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "exported_by": f"cogitator-memory {__version__}",
        "thread": thread.dump(),
        "entries": [entry_json(entry) for entry in entries],
    }


_LEADING_KEYS = ("id", "parent_id", "seq", "type", "created_at", "token_count")


def entry_json(entry: MemoryEntry) -> dict[str, Any]:
    """An entry as JSON, its place in the tree first (id, parent, seq, type, time), then its content."""
    dumped = entry.dump()
    ordered = {key: dumped.pop(key) for key in _LEADING_KEYS if key in dumped}
    ordered.update(dumped)
    return ordered


def parse_export(name: str, data: dict[str, Any]) -> ExportedThread:
    """Check an export document: records valid, ids unique, parents present, no cycle.

    The entries come back parents first (by ``seq`` where that allows).
    """
    if data.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
        raise CliError(f"{name}: 'format' is {data.get('format')!r}, not {EXPORT_FORMAT!r}")
    version = data.get("version", EXPORT_VERSION)
    if version != EXPORT_VERSION:
        raise CliError(f"{name}: export version {version!r} is not supported (this version reads {EXPORT_VERSION})")
    try:
        thread = Thread.model_validate(data["thread"])
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        raise CliError(f"{name}: thread.{field}: {first.get('msg', 'invalid')}") from None
    raw_entries = data["entries"]
    if not isinstance(raw_entries, list):
        raise CliError(f"{name}: 'entries' must be a list")
    entries: list[MemoryEntry] = []
    for index, raw in enumerate(raw_entries, start=1):
        try:
            entries.append(MemoryEntry.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ()))
            where = f"entries[{index}]" + (f".{field}" if field else "")
            raise CliError(f"{name}: {where}: {first.get('msg', 'invalid').removeprefix('Value error, ')}") from None
    by_id: dict[str, MemoryEntry] = {}
    for entry in entries:
        if entry.id in by_id:
            raise CliError(f"{name}: entry id {entry.id} appears twice")
        by_id[entry.id] = entry
    for entry in entries:
        if entry.parent_id is not None and entry.parent_id not in by_id:
            raise CliError(f"{name}: entry {entry.id} names parent {entry.parent_id}, which is not in the file")
    if thread.active_leaf_id is not None and thread.active_leaf_id not in by_id:
        raise CliError(f"{name}: the active leaf {thread.active_leaf_id} is not an entry of the file")
    return ExportedThread(thread=thread, entries=parents_first(name, entries))


def parents_first(name: str, entries: list[MemoryEntry]) -> list[MemoryEntry]:
    """The entries ordered so that each comes after its parent, by ``seq`` where that allows."""
    children: dict[str | None, list[MemoryEntry]] = {}
    for entry in entries:
        children.setdefault(entry.parent_id, []).append(entry)
    ready = [(e.seq, i, e) for i, e in enumerate(children.get(None, []))]
    heapq.heapify(ready)
    ordered: list[MemoryEntry] = []
    counter = len(entries)
    while ready:
        _, _, entry = heapq.heappop(ready)
        ordered.append(entry)
        for child in children.get(entry.id, []):
            counter += 1
            heapq.heappush(ready, (child.seq, counter, child))
    if len(ordered) != len(entries):
        raise CliError(f"{name}: the entries' parent ids form a cycle")
    return ordered


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "CliError",
    "ExportedThread",
    "ImportFile",
    "entry_json",
    "export_document",
    "openai_messages_to_entries",
    "parents_first",
    "parse_export",
    "read_import_file",
    "read_text",
]
