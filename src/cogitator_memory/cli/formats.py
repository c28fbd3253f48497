"""The files the command line reads and writes, without I/O on a store.

* :func:`read_import_file` reads a file (or stdin) and tells a chat message list (JSON list,
  ``{"messages": [...]}`` or JSONL, in OpenAI's or Anthropic's shape) from a file written by
  ``export``.
* :func:`messages_to_entries` turns the messages into :class:`NewMemoryEntry` records with the
  package's public converters (:func:`~cogitator_memory.context.from_openai_messages`,
  :func:`~cogitator_memory.context.from_anthropic_messages`).
* :func:`export_document` / :func:`export_chunks` / :func:`parse_export` write and read the export
  format: the thread record and every entry of its tree with their parent ids.

Every problem with the input raises :class:`CliError` with one line naming where it is.
"""

from __future__ import annotations

import heapq
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from .. import __version__
from ..errors import InvalidArgumentError
from ..models.convert import from_anthropic_messages, from_openai_messages
from ..runtime.adding import message_format as shape_of
from ..threads.records import MemoryEntry, NewMemoryEntry, Thread

#: The ``format`` field of an export file.
EXPORT_FORMAT = "cogitator-memory/thread"
EXPORT_VERSION = 1
#: The shapes of chat messages ``import`` reads.
MessageFormat = Literal["openai", "anthropic"]
#: Content block types only Anthropic's messages have: a file holding one is read as Anthropic's.


class CliError(Exception):
    """A user error: the command stops and prints this one line. ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(" ".join(message.split()))
        self.code = code


@dataclass(frozen=True)
class ImportFile:
    """What an import file holds: a list of chat messages (with the request's ``system`` prompt
    of an Anthropic file), or an exported thread."""

    kind: Literal["messages", "export"]
    messages: list[Any] | None = None
    export: ExportedThread | None = None
    system: Any = None


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
    system: Any = None
    if isinstance(data, dict):
        if "entries" in data and "thread" in data:
            return ImportFile("export", export=parse_export(name, data))
        if "messages" in data:
            system = data.get("system")
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
    return ImportFile("messages", messages=data, system=system)


def message_format(loaded: ImportFile) -> MessageFormat:
    """The shape the messages of ``loaded`` are in, by the rule ``Memory.add`` follows
    (:func:`~cogitator_memory.runtime.adding.message_format`): Anthropic's when the file has a
    top-level ``system`` or a content block only Anthropic has (tool_use, tool_result, an image
    with a ``source``...), else OpenAI's."""
    return shape_of(loaded.messages or [], loaded.system)


def messages_to_entries(
    name: str, loaded: ImportFile, thread_id: str, shape: MessageFormat | None = None
) -> list[NewMemoryEntry]:
    """The entries of the messages of ``loaded`` for ``thread_id``, in order.

    ``shape`` ``None`` picks it with :func:`message_format`. A message the converter refuses
    becomes a :class:`CliError` naming the file and the message (``messages[2].content[0]``).
    """
    chosen = shape or message_format(loaded)
    try:
        if chosen == "anthropic":
            return from_anthropic_messages(loaded.messages or [], thread_id=thread_id, system=loaded.system)
        if loaded.system is not None:
            raise CliError(f"{name}: a top-level 'system' is Anthropic's shape, not OpenAI's (drop --format openai)")
        return from_openai_messages(loaded.messages or [], thread_id=thread_id)
    except InvalidArgumentError as exc:
        raise CliError(f"{name}: {exc.argument}: {exc.problem}") from None


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


def export_chunks(thread: Thread, entries: list[MemoryEntry], *, ascii_only: bool = False) -> Iterator[str]:
    """The text of :func:`export_document` as ``json.dumps(document, indent=2)`` writes it, in
    pieces: the head, then one piece per entry, so a large thread is written (and its progress
    shown) entry by entry without holding the whole text."""
    document = export_document(thread, [])
    head = json.dumps(document, indent=2, ensure_ascii=ascii_only)
    if not entries:
        yield head + "\n"
        return
    opening, _, _ = head.rpartition('"entries": []')
    yield opening + '"entries": [\n'
    last = len(entries) - 1
    for index, entry in enumerate(entries):
        text = json.dumps(entry_json(entry), indent=2, ensure_ascii=ascii_only)
        yield "    " + text.replace("\n", "\n    ") + (",\n" if index < last else "\n")
    yield "  ]\n}\n"


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
    "MessageFormat",
    "entry_json",
    "export_chunks",
    "export_document",
    "message_format",
    "messages_to_entries",
    "parents_first",
    "parse_export",
    "read_import_file",
    "read_text",
]
