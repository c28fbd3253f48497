"""Plain-text views of threads for the terminal: the tree, the active path, thread tables.

Nothing here does I/O on a store; each function takes records and returns lines. Box-drawing
characters are used when the output can encode them, ASCII otherwise (see :class:`Glyphs`).

Stored text never reaches the terminal raw: control characters (C0, DEL, C1, so every escape
sequence) and the bidirectional overrides print as visible escapes (``\\x1b``, ``\\u202e``), see
:func:`terminal_safe`. Newlines and tabs are laid out instead: spaces in a tree line, line breaks
and spaces in the active path.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

from ..clock import to_utc
from ..threads.describe import describe_entry, format_call
from ..threads.records import (
    MemoryEntry,
    Thread,
)

#: Shortest tail of an entry id shown in a tree (longer when two entries share it).
SHORT_ID = 6
#: The widest the branch lines of a tree are drawn (columns); deeper branches fold, see :func:`tree_lines`.
MAX_GRAPH_WIDTH = 40
#: The bidirectional formatting characters, which reorder what a terminal shows after them.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
#: The characters JSON text leaves raw that a terminal would act on (JSON escapes C0 itself),
#: and lone surrogates, which no output encoding can write.
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{BIDI_CONTROLS}\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character and bidirectional override shown as an escape.

    C0 controls (newlines and tabs included: lay them out first), DEL, C1 controls and the
    bidirectional formatting characters become ``\\xHH`` / ``\\uHHHH``, so no escape sequence
    in stored text can retitle the window, hide or overwrite text, make links or clear the
    screen. Text that is safe comes back as it is, so applying it twice changes nothing.
    """
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def json_terminal_safe(text: str) -> str:
    """JSON text with the characters a terminal acts on written as ``\\uHHHH`` escapes (the same JSON value)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_text(data: Any) -> str:
    """``data`` as indented JSON for the terminal: non-ASCII escaped when stdout cannot encode it,
    the characters a terminal acts on (DEL, C1 controls, bidirectional formatting characters) and
    lone surrogates escaped always (see :func:`json_terminal_safe`: the same JSON value)."""
    plain = glyphs_for(sys.stdout) is ASCII
    return json_terminal_safe(json.dumps(data, indent=2, ensure_ascii=plain)) + "\n"


def print_json(data: Any) -> None:
    """Print ``data`` as :func:`json_text` writes it: every ``--json`` output of the CLI."""
    sys.stdout.write(json_text(data))


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
    """``text`` on one line: every run of whitespace (newlines included) made one space, control
    characters escaped."""
    return terminal_safe(" ".join(text.split()))


def safe_lines(text: str, tab: int = 4) -> list[str]:
    """``text`` as terminal lines: split at line breaks, tabs expanded, control characters escaped."""
    return [terminal_safe(line.expandtabs(tab).rstrip()) for line in text.splitlines()] or [""]


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


def describe(entry: MemoryEntry, g: Glyphs, *, keep_lines: bool = False) -> tuple[str, str]:
    """What a line shows of an entry: its kind (role, or ``event``) and its text.

    The text is one line (see :func:`one_line`), or with ``keep_lines`` its lines joined by
    newlines (see :func:`safe_lines`); control characters are escaped either way.
    """
    kind, text = describe_entry(entry, arrow=g.arrow)
    return kind, "\n".join(safe_lines(text)) if keep_lines else one_line(text)


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
        f"Thread {one_line(thread.id)} {g.dot} agent {one_line(thread.agent_id)} {g.dot} {count} on {branches}",
        f"  created {stamp(thread.created_at)} {g.dot} updated {stamp(thread.updated_at)}",
    ]
    if thread.metadata:
        lines.append(clip(f"  metadata: {format_metadata(thread.metadata)}", width, g))
    return lines


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def format_metadata(metadata: dict[str, Any]) -> str:
    """Metadata as ``key=value`` pairs, values as JSON, on one line with control characters escaped."""
    return one_line(" ".join(f"{k}={_json(v)}" for k, v in metadata.items()))


def tree_lines(
    thread: Thread,
    entries: Sequence[MemoryEntry],
    g: Glyphs,
    width: int,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """The tree of a thread, one line per entry.

    A chain of entries stays in one column; where an entry has several children, each child
    starts a branch drawn with ``├─``/``└─``, in the order they were added. Entries on the
    active path are marked ``●`` (others ``○``) and the active leaf is pointed at. Each line
    starts with the tail of the entry id. Iterative, so a deep thread draws as well as a flat one.

    The branch lines take at most :data:`MAX_GRAPH_WIDTH` columns (a quarter of ``width`` when that
    is less, at least 8): deeper, a line shows its innermost branch columns after ``…N``, the
    number of columns folded away, so a long chain of retries never pushes the text off the
    screen. ``progress`` is called with the number of lines drawn so far, now and then.
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
    tails = {key: one_line(tail) for key, tail in short_ids(by_id).items()}
    id_width = max(len(t) for t in tails.values())
    described = {e.id: describe(e, g) for e in entries}
    kind_width = max(len(kind) for kind, _ in described.values())
    # (entry, the branch columns drawn before its marker, the columns its descendants continue with);
    # columns are kept as lists of two-character cells, so a deep branch costs no string copies
    rows: list[tuple[MemoryEntry, tuple[str, ...]]] = []
    stack: list[tuple[MemoryEntry, tuple[str, ...], tuple[str, ...]]] = []

    def push_children(kids: list[MemoryEntry], prefix: tuple[str, ...]) -> None:
        if len(kids) == 1:
            stack.append((kids[0], prefix, prefix))
            return
        for index in range(len(kids) - 1, -1, -1):
            last = index == len(kids) - 1
            stack.append((kids[index], (*prefix, g.elbow if last else g.tee), (*prefix, g.blank if last else g.pipe)))

    push_children(children.get(None, []), ())
    while stack:
        entry, lead, rest = stack.pop()
        rows.append((entry, lead))
        push_children(children.get(entry.id, []), rest)
    leads = _fold_leads([lead for _, lead in rows], g, max(8, min(MAX_GRAPH_WIDTH, width // 4)))
    graph_width = max(len(lead) for lead in leads) + len(g.on) + 1 + kind_width
    lines: list[str] = []
    for number, ((entry, _), drawn) in enumerate(zip(rows, leads, strict=True), start=1):
        kind, text = described[entry.id]
        marker = g.on if entry.id in on_path else g.off
        head = f"  {tails[entry.id]:>{id_width}}  " + f"{drawn}{marker} {kind}".ljust(graph_width) + "  "
        tail = ""
        if entry.id == thread.active_leaf_id:
            tail = f"  {g.leaf}"
            if width - len(head) - len(tail) < 20:  # a narrow terminal: the arrow alone
                tail = f"  {g.leaf.split()[0]}"
        lines.append(head + clip(text, max(width - len(head) - len(tail), 8), g) + tail)
        if progress is not None and number % 1000 == 0:
            progress(number)
    return lines


def _fold_leads(leads: list[tuple[str, ...]], g: Glyphs, limit: int) -> list[str]:
    """The branch columns of each row as text, none wider than ``limit`` columns.

    A lead of more cells keeps its innermost ones after ``…N`` (N: the columns folded away), all
    folded leads padded to one width so the markers line up.
    """
    cell = max(len(g.tee), len(g.pipe), 1)
    deepest = max((len(lead) for lead in leads), default=0)
    if deepest * cell <= limit:
        return ["".join(lead) for lead in leads]
    marker_width = len(g.ellipsis) + len(str(deepest * cell)) + 1
    keep = max(1, (limit - marker_width) // cell)
    out: list[str] = []
    for lead in leads:
        if len(lead) <= keep:
            out.append("".join(lead))
            continue
        hidden = (len(lead) - keep) * cell
        out.append(f"{g.ellipsis}{hidden}".ljust(marker_width) + "".join(lead[-keep:]))
    return out


def prose(text: str, width: int) -> list[str]:
    """A paragraph wrapped to ``width`` (at most 100) columns."""
    return textwrap.wrap(text, width=min(max(width, 40), 100))


def legend(g: Glyphs) -> str:
    """The line that explains the markers of a tree."""
    return f"  {g.on} active path   {g.off} other branch   ids are the last characters of each entry id"


def path_lines(path: Sequence[MemoryEntry], g: Glyphs, width: int) -> list[str]:
    """A branch as a conversation, oldest first, each entry's full text wrapped to ``width``.

    The text keeps its line breaks (each line wrapped on its own, its indentation kept) and
    its tabs (as spaces); control characters are escaped.
    """
    if not path:
        return ["  (empty)"]
    kinds = [describe(e, g, keep_lines=True) for e in path]
    kind_width = max(len(k) for k, _ in kinds)
    lines: list[str] = []
    for kind, text in kinds:
        head = f"  {kind:<{kind_width}}  "
        room = max(20, width - len(head))
        wrapped: list[str] = []
        for line in text.split("\n"):
            wrapped.extend(textwrap.wrap(line, width=room, break_long_words=True, replace_whitespace=False) or [""])
        lines.append(head + wrapped[0])
        lines.extend((" " * len(head) + more).rstrip() for more in wrapped[1:])
    return lines


def threads_table(threads: Sequence[Thread], g: Glyphs, width: int) -> list[str]:
    """A table of threads: id, agent, last update and metadata."""
    rows = [(one_line(t.id), one_line(t.agent_id), stamp(t.updated_at), format_metadata(t.metadata)) for t in threads]
    headers = ("THREAD", "AGENT", "UPDATED", "METADATA")
    widths = [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in range(3)]
    lines = []
    for row in [headers, *rows]:
        head = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  "
        lines.append((head + clip(row[3], width - len(head), g)).rstrip())
    return lines


def write_lines(lines: Iterable[str], stream: TextIO | None = None) -> None:
    """Print ``lines`` to ``stream`` (stdout by default), control characters escaped (see :func:`terminal_safe`)."""
    out = stream if stream is not None else sys.stdout
    out.write("".join(terminal_safe(line) + "\n" for line in lines))


__all__ = [
    "ASCII",
    "BIDI_CONTROLS",
    "MAX_GRAPH_WIDTH",
    "SHORT_ID",
    "UNICODE",
    "Glyphs",
    "active_path_ids",
    "clip",
    "describe",
    "format_call",
    "format_metadata",
    "glyphs_for",
    "json_terminal_safe",
    "json_text",
    "legend",
    "one_line",
    "path_lines",
    "print_json",
    "prose",
    "safe_lines",
    "short_ids",
    "stamp",
    "terminal_safe",
    "terminal_width",
    "thread_header",
    "threads_table",
    "tree_lines",
    "write_lines",
]
