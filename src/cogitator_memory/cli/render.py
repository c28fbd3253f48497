"""Plain-text views of threads for the terminal: the tree, the active path, thread tables.

Nothing here does I/O on a store; each function takes records and returns lines. Box-drawing
characters are used when the output can encode them, ASCII otherwise (see :class:`Glyphs`).
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from ..clock import to_utc
from ..threads.records import (
    ApprovalEvent,
    CompactionEvent,
    CustomEvent,
    ImageBase64Part,
    ImageURLPart,
    InterruptEvent,
    LabelEvent,
    MemoryEntry,
    ModelChangeEvent,
    TextPart,
    Thread,
    ToolCall,
)

#: Shortest tail of an entry id shown in a tree (longer when two entries share it).
SHORT_ID = 6


@dataclass(frozen=True)
class Glyphs:
    """The characters trees are drawn with."""

    on: str = "●"
    off: str = "○"
    tee: str = "├─"
    elbow: str = "└─"
    pipe: str = "│ "
    blank: str = "  "
    leaf: str = "◀ active leaf"
    ellipsis: str = "…"
    arrow: str = "→"
    dot: str = "·"


ASCII = Glyphs(
    on="*", off="o", tee="|-", elbow="`-", pipe="| ", leaf="<- active leaf", ellipsis="...", arrow="->", dot="-"
)
UNICODE = Glyphs()


def glyphs_for(stream: TextIO) -> Glyphs:
    """Box-drawing glyphs when ``stream`` can encode them, ASCII otherwise."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "●○├─└│◀…→·".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII
    return UNICODE


def terminal_width() -> int:
    """Columns to fit lines in: the terminal's width (``COLUMNS`` wins), else 100."""
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def stamp(value: datetime) -> str:
    """A time as ``2026-11-29 16:57:15 UTC``."""
    return to_utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def clip(text: str, width: int, g: Glyphs) -> str:
    """``text`` cut to ``width`` characters, ending with an ellipsis when cut."""
    if width <= 0 or len(text) <= width:
        return text
    keep = max(0, width - len(g.ellipsis))
    return text[:keep].rstrip() + g.ellipsis


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """The shortest tails (at least :data:`SHORT_ID` characters) that tell the ids apart."""
    all_ids = list(dict.fromkeys(ids))
    width = SHORT_ID
    while True:
        tails = {i: i[-width:] for i in all_ids}
        if len(set(tails.values())) == len(all_ids) or width >= max((len(i) for i in all_ids), default=0):
            return tails
        width += 2


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def format_call(call: ToolCall) -> str:
    """A tool call as ``name(key=value, ...)``."""
    if call.argument_error is not None:
        return f"{call.name}({call.argument_error})"
    args = ", ".join(f"{k}={_json(v)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def describe(entry: MemoryEntry, g: Glyphs) -> tuple[str, str]:
    """What a line shows of an entry: its kind (role, or ``event``) and its text."""
    event = entry.event
    if event is not None:
        detail = ""
        if isinstance(event, LabelEvent):
            detail = event.label
        elif isinstance(event, ModelChangeEvent):
            detail = event.model + (f" (was {event.previous_model})" if event.previous_model else "")
        elif isinstance(event, CompactionEvent):
            detail = event.summary
        elif isinstance(event, ApprovalEvent):
            verdict = "approved" if event.approved else "refused"
            detail = " ".join(
                p for p in (verdict, event.tool_name or event.tool_call_id or "", event.reason or "") if p
            )
        elif isinstance(event, InterruptEvent):
            detail = event.reason or ""
        elif isinstance(event, CustomEvent):
            detail = event.name + (f" {_json(event.data)}" if event.data else "")
        return "event", f"{entry.type}: {detail}" if detail else entry.type
    message = entry.message
    if message is None:  # not reachable for valid entries
        return entry.type, ""
    if isinstance(message.content, str):
        text = message.content
    else:
        pieces: list[str] = []
        for part in message.content:
            if isinstance(part, TextPart):
                pieces.append(part.text)
            elif isinstance(part, ImageURLPart | ImageBase64Part):
                pieces.append("[image]")
        text = " ".join(pieces)
    text = one_line(text)
    calls = list(message.tool_calls or entry.tool_calls or [])
    if calls:
        shown = ", ".join(format_call(c) for c in calls)
        text = f"{text} {g.arrow} {shown}" if text else f"{g.arrow} {shown}"
    if message.role == "tool":
        label = message.name or message.tool_call_id or "tool"
        text = f"{label}: {text}"
    elif message.name:
        text = f"{message.name}: {text}"
    for result in entry.tool_results or ():
        shown = (
            result.error
            if result.error
            else (result.result if isinstance(result.result, str) else _json(result.result))
        )
        text += f" [{result.name or result.call_id}: {one_line(str(shown))}]"
    return message.role, text


def active_path_ids(thread: Thread, by_id: dict[str, MemoryEntry]) -> list[str]:
    """The ids from the root to the thread's active leaf."""
    path: list[str] = []
    current = thread.active_leaf_id
    seen: set[str] = set()
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        path.append(current)
        current = by_id[current].parent_id
    path.reverse()
    return path


def thread_header(thread: Thread, entries: Sequence[MemoryEntry], g: Glyphs, width: int) -> list[str]:
    """The lines above a tree: id, agent, counts, times and metadata."""
    parents = {e.parent_id for e in entries}
    leaves = sum(1 for e in entries if e.id not in parents)
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    branches = f"{leaves} branch{'' if leaves == 1 else 'es'}"
    lines = [
        f"Thread {thread.id} {g.dot} agent {thread.agent_id} {g.dot} {count} on {branches}",
        f"  created {stamp(thread.created_at)} {g.dot} updated {stamp(thread.updated_at)}",
    ]
    if thread.metadata:
        lines.append(clip(f"  metadata: {format_metadata(thread.metadata)}", width, g))
    return lines


def format_metadata(metadata: dict[str, Any]) -> str:
    """Metadata as ``key=value`` pairs, values as JSON."""
    return " ".join(f"{k}={_json(v)}" for k, v in metadata.items())


def tree_lines(thread: Thread, entries: Sequence[MemoryEntry], g: Glyphs, width: int) -> list[str]:
    """The tree of a thread, one line per entry.

    A chain of entries stays in one column; where an entry has several children, each child
    starts a branch drawn with ``├─``/``└─``, in the order they were added. Entries on the
    active path are marked ``●`` (others ``○``) and the active leaf is pointed at. Each line
    starts with the tail of the entry id. Iterative, so a deep thread draws as well as a flat one.
    """
    if not entries:
        return ["  (no entries yet)"]
    by_id = {e.id: e for e in entries}
    children: dict[str | None, list[MemoryEntry]] = {}
    for entry in entries:
        parent = entry.parent_id if entry.parent_id in by_id else None
        children.setdefault(parent, []).append(entry)
    for kids in children.values():
        kids.sort(key=lambda e: e.seq)
    on_path = set(active_path_ids(thread, by_id))
    tails = short_ids(by_id)
    id_width = max(len(t) for t in tails.values())
    kind_width = max(len(describe(e, g)[0]) for e in entries)
    rows: list[tuple[MemoryEntry, str]] = []
    # (entry, the prefix drawn before its marker, the prefix its descendants continue with)
    stack: list[tuple[MemoryEntry, str, str]] = []

    def push_children(kids: list[MemoryEntry], prefix: str) -> None:
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix))
            return
        for index in range(len(kids) - 1, -1, -1):
            last = index == len(kids) - 1
            stack.append((kids[index], prefix + (g.elbow if last else g.tee), prefix + (g.blank if last else g.pipe)))

    push_children(children.get(None, []), "")
    while stack:
        entry, lead, rest = stack.pop()
        rows.append((entry, lead))
        push_children(children.get(entry.id, []), rest)
    graph_width = max(len(lead) for _, lead in rows) + len(g.on) + 1 + kind_width
    lines: list[str] = []
    for entry, lead in rows:
        kind, text = describe(entry, g)
        marker = g.on if entry.id in on_path else g.off
        head = f"  {tails[entry.id]:>{id_width}}  " + f"{lead}{marker} {kind}".ljust(graph_width) + "  "
        tail = f"  {g.leaf}" if entry.id == thread.active_leaf_id else ""
        lines.append(head + clip(text, width - len(head) - len(tail), g) + tail)
    return lines


def prose(text: str, width: int) -> list[str]:
    """A paragraph wrapped to ``width`` (at most 100) columns."""
    return textwrap.wrap(text, width=min(max(width, 40), 100))


def legend(g: Glyphs) -> str:
    """The line that explains the markers of a tree."""
    return f"  {g.on} active path   {g.off} other branch   ids are the last characters of each entry id"


def path_lines(path: Sequence[MemoryEntry], g: Glyphs, width: int) -> list[str]:
    """A branch as a conversation, oldest first, each entry's full text wrapped to ``width``."""
    if not path:
        return ["  (empty)"]
    kinds = [describe(e, g) for e in path]
    kind_width = max(len(k) for k, _ in kinds)
    lines: list[str] = []
    for kind, text in kinds:
        head = f"  {kind:<{kind_width}}  "
        wrapped = textwrap.wrap(text, width=max(20, width - len(head)), break_long_words=True) or [""]
        lines.append(head + wrapped[0])
        lines.extend(" " * len(head) + more for more in wrapped[1:])
    return lines


def threads_table(threads: Sequence[Thread], g: Glyphs, width: int) -> list[str]:
    """A table of threads: id, agent, last update and metadata."""
    rows = [(t.id, t.agent_id, stamp(t.updated_at), format_metadata(t.metadata)) for t in threads]
    headers = ("THREAD", "AGENT", "UPDATED", "METADATA")
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in range(3)]
    lines = []
    for row in [headers, *rows]:
        head = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  "
        lines.append((head + clip(row[3], width - len(head), g)).rstrip())
    return lines


def write_lines(lines: Iterable[str], stream: TextIO | None = None) -> None:
    """Print ``lines`` to ``stream`` (stdout by default)."""
    out = stream if stream is not None else sys.stdout
    out.write("".join(line + "\n" for line in lines))


__all__ = [
    "ASCII",
    "SHORT_ID",
    "UNICODE",
    "Glyphs",
    "active_path_ids",
    "clip",
    "describe",
    "format_call",
    "format_metadata",
    "glyphs_for",
    "legend",
    "one_line",
    "path_lines",
    "prose",
    "short_ids",
    "stamp",
    "terminal_width",
    "thread_header",
    "threads_table",
    "tree_lines",
    "write_lines",
]
