"""The records of the recall index made from what memory holds (no I/O).

One function per kind of source: :func:`turn_record` (an entry of a thread, with the thread
for its scope), :func:`item_record` (a memory item; a core fact is an item of the ``core``
agent), :func:`node_record` (a graph node, a fact saved with ``remember`` among them),
:func:`edge_record` (a graph edge, said as "<source> <relation> <target>") and
:func:`file_section_records` (the sections of a memory file's current version). Every writer
of the index (the stores' write paths, the indexer, ``reindex``) makes its records here, so
every store holds the same records for the same memory.

**Memory-file sections.** The head (newest version) of each scope and path is indexed: its
text is split at its markdown headings (``#`` to ``######`` at the start of a line, outside
fenced code), each heading starting a section that runs to the next one; text before the
first heading is a section of its own, and a file without headings is one section. A section
longer than :data:`SECTION_CHARS` is cut into pieces of that size; past
:data:`MAX_FILE_SECTIONS` pieces, neighbouring ones are packed together up to that size, so a
file has at most :data:`MAX_FILE_SECTIONS` records. Each record's text starts with the file's
path. Their source ids are the file's :func:`file_source_id` followed by ``#<n>`` (``n`` from
0), so the records of a file are found from its scope and path alone: a write replaces them and
deletes those past the new count (a section whose text did not change keeps its record, and
with it when it was first said), a deletion (or a redacted head) deletes them all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..items.records import MemoryItem
from ..threads.records import EVENT_TYPES, REDACTED_KEY, USER_ID_KEY, MemoryEntry, Thread
from .records import MAX_RECORD_CHARS, RecallKind, RecallRecord, RecallStatus, record_id
from .terms import recall_terms

if TYPE_CHECKING:  # the graph package imports extraction, which imports recall: read lazily
    from ..files.records import MemoryFileVersion
    from ..graph.records import GraphEdge, GraphNode
    from ..items.records import MemoryScope

#: The agent core facts are kept under (see :mod:`cogitator_memory.facts.core`).
CORE_AGENT = "core"
#: The ``type`` of the graph nodes ``remember`` saves.
FACT_TYPE = "fact"
#: What the term naming an end of an edge starts with (:func:`node_term`; no word holds it).
NODE_MARK = "="
#: The kinds an item's record may have.
ITEM_KINDS: tuple[RecallKind, ...] = ("item", "core_fact")
#: Longest text (characters) of one memory-file section's record, the path line aside.
SECTION_CHARS = 6_000
#: Most records one memory file has: packed pieces of at most :data:`SECTION_CHARS` each hold
#: more than half of it together with their neighbour, so a file of 1 MB (the most a memory
#: file holds) needs at most 351.
MAX_FILE_SECTIONS = 360
#: What a redacted version's text is (:data:`cogitator_memory.files.records.REDACTED_TEXT`).
_REDACTED = "[redacted]"


def turn_text(entry: MemoryEntry) -> str:
    """The text a turn is searched by: its message, the tool calls it makes and their results."""
    parts: list[str] = []
    message = entry.message
    if message is not None and message.text.strip():
        parts.append(message.text)
    calls = (message.tool_calls if message is not None else None) or entry.tool_calls or []
    for call in calls:
        parts.append(f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, default=str)}")
    for result in entry.tool_results or []:
        value = result.error or result.result
        parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    return "\n".join(parts)[:MAX_RECORD_CHARS]


def item_text(item: MemoryItem) -> str:
    """The text an item is searched and embedded by: subject, attribute and value."""
    parts = [item.subject]
    if item.attribute:
        parts.append(item.attribute)
    parts.append(item.value)
    return " ".join(parts)


def indexed_turn(entry: MemoryEntry) -> bool:
    """Whether ``entry`` is recalled as a turn: a message or tool result, not an event, not redacted."""
    return entry.type not in EVENT_TYPES and not (entry.metadata or {}).get(REDACTED_KEY)


def _built(fields: dict[str, object]) -> RecallRecord:
    fields["id"] = f"{fields['kind']}:{fields['source_id']}"
    fields.setdefault("terms", recall_terms(str(fields["text"])))
    return RecallRecord.model_validate(fields)


def turn_record(entry: MemoryEntry, thread: Thread) -> RecallRecord | None:
    """The record of a turn of ``thread`` (its scope: the thread's agent, its user, itself), or
    ``None`` for an entry not recalled (:func:`indexed_turn`) or without text."""
    if not indexed_turn(entry):
        return None
    text = turn_text(entry)
    if not text.strip():
        return None
    user = (thread.metadata or {}).get(USER_ID_KEY)
    return _built(
        {
            "kind": "turn",
            "source_id": entry.id,
            "agent_id": thread.agent_id,
            "user_id": user if isinstance(user, str) and user else None,
            "thread_id": entry.thread_id,
            "role": entry.message.role if entry.message is not None else "tool",
            "name": entry.message.name if entry.message is not None else None,
            "seq": entry.seq,
            "text": text,
            "said_at": entry.created_at,
        }
    )


_ITEM_STATUS: dict[str, RecallStatus] = {"active": "active", "superseded": "superseded", "stale": "stale"}


def item_record(item: MemoryItem) -> RecallRecord | None:
    """The record of a memory item (``core_fact`` for an item of the ``core`` agent), or ``None``
    for a ``suggested`` one (kept out of every context until activated)."""
    status = _ITEM_STATUS.get(item.status)
    if status is None:
        return None
    scope = item.scope
    core = scope.agent_id == CORE_AGENT
    return _built(
        {
            "kind": "core_fact" if core else "item",
            "source_id": item.id,
            "agent_id": None if core else scope.agent_id,
            "user_id": scope.user_id,
            "thread_id": scope.thread_id,
            "text": item_text(item),
            "said_at": item.recorded_at,
            "time_start": item.valid_from,
            "time_end": (item.ends_at or item.valid_to) if item.valid_from is not None else None,
            "status": status,
            "valid_from": item.valid_from,
            "valid_to": item.valid_to,
            "lineage": list(dict.fromkeys(e.entry_id for e in item.evidence if e.entry_id)),
        }
    )


def node_text(node: GraphNode) -> str:
    """What a graph node says: a fact's whole text (``remember``'s facts are nodes of type
    ``fact``), any other node's name, aliases and description."""
    if node.type == FACT_TYPE:
        return node.description or node.name
    text = f"{node.name} (also {', '.join(node.aliases)})" if node.aliases else node.name
    return f"{text}: {node.description}" if node.description else text


def node_record(node: GraphNode) -> RecallRecord:
    """The record of a graph node (kind ``graph_fact``, its type as ``role``), in its scope."""
    scope = node.scope
    return _built(
        {
            "kind": "graph_fact",
            "source_id": node.id,
            "agent_id": scope.agent_id,
            "user_id": scope.user_id,
            "thread_id": scope.thread_id,
            "role": node.type,
            "text": node_text(node)[:MAX_RECORD_CHARS],
            "said_at": node.updated_at,
            "lineage": list(dict.fromkeys(e.entry_id for e in node.evidence if e.entry_id)),
        }
    )


def _said(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def edge_text(edge: GraphEdge, names: Mapping[str, str]) -> str:
    """What a graph edge says: "<source name> <relation> <target name>" (the relation is the
    edge's ``label``, else its ``type`` with ``_`` and ``-`` as spaces), then its properties as
    ``key: value``. ``names`` maps node ids to names (an end missing from it is said by its id)."""
    relation = edge.label.strip() if edge.label and edge.label.strip() else re.sub(r"[_-]+", " ", edge.type)
    text = f"{names.get(edge.source_id, edge.source_id)} {relation} {names.get(edge.target_id, edge.target_id)}"
    if edge.properties:
        text += "; " + "; ".join(f"{key}: {_said(value)}" for key, value in sorted(edge.properties.items()))
    return text[:MAX_RECORD_CHARS]


def node_term(node_id: str) -> str:
    """The term an edge's record holds for each of its ends: :data:`NODE_MARK` and a hash of
    the node's id (no word of a text or a query makes it), so the records of the edges of a
    node are found in the index by it (:meth:`~cogitator_memory.index.RecallIndexMixin._recall_graph`)."""
    return NODE_MARK + hashlib.sha256(node_id.encode()).hexdigest()[:24]


def edge_record(edge: GraphEdge, names: Mapping[str, str]) -> RecallRecord:
    """The record of a graph edge (kind ``graph_fact``, its type as ``role``), in its scope,
    its text :func:`edge_text`; ``lineage`` the entries its quotes come from. Its terms are
    those of its text and :func:`node_term` of each end."""
    scope = edge.scope
    text = edge_text(edge, names)
    return _built(
        {
            "kind": "graph_fact",
            "source_id": edge.id,
            "agent_id": scope.agent_id,
            "user_id": scope.user_id,
            "thread_id": scope.thread_id,
            "role": edge.type,
            "text": text,
            "terms": [*recall_terms(text), *dict.fromkeys(node_term(i) for i in (edge.source_id, edge.target_id))],
            "said_at": edge.updated_at,
            "lineage": list(dict.fromkeys(e.entry_id for e in edge.evidence if e.entry_id)),
        }
    )


# --- memory files ------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def file_sections(content: str) -> list[str]:
    """The sections of a memory file's text (see the module docs), blank ones left out, at most
    :data:`MAX_FILE_SECTIONS`, each at most :data:`SECTION_CHARS` characters."""
    sections: list[list[str]] = [[]]
    fence: str | None = None
    for line in content.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if opened is not None:
            mark = opened.group(1)
            fence = mark if fence is None else (None if fence == mark else fence)
        elif fence is None and _HEADING.match(line) and any(x.strip() for x in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    pieces: list[str] = []
    for lines in sections:
        text = "".join(lines).strip()
        pieces.extend(text[at : at + SECTION_CHARS] for at in range(0, len(text), SECTION_CHARS))
    if len(pieces) <= MAX_FILE_SECTIONS:
        return pieces
    packed: list[str] = []
    for piece in pieces:
        if packed and len(packed[-1]) + 2 + len(piece) <= SECTION_CHARS:
            packed[-1] = f"{packed[-1]}\n\n{piece}"
        else:
            packed.append(piece)
    return packed[:MAX_FILE_SECTIONS]


def file_source_id(scope: MemoryScope, path: str) -> str:
    """The id a memory file (a scope and a path) goes by in the index: ``file-`` and a hash of
    both (its sections' source ids are this and ``#<n>``)."""
    key = "\x1f".join((scope.agent_id, scope.user_id or "", scope.project_id or "", scope.thread_id or "", path))
    return "file-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def file_section_ids(scope: MemoryScope, path: str, start: int = 0) -> list[str]:
    """The record ids a memory file's sections may have, from section ``start`` on."""
    base = file_source_id(scope, path)
    return [record_id("file_section", f"{base}#{n}") for n in range(start, MAX_FILE_SECTIONS)]


def file_section_records(version: MemoryFileVersion) -> list[RecallRecord]:
    """The records of the sections of ``version`` (a file's head), in its scope, said when the
    version was written, by its author (``role``), ``lineage`` the entry it was written after;
    none for a deletion, a redacted version or one without text."""
    content = version.content
    if content is None or version.redacted is not None or content == _REDACTED:
        return []
    scope = version.scope
    base = file_source_id(scope, version.path)
    lineage = [version.place.entry_id] if version.place is not None and version.place.entry_id else []
    return [
        _built(
            {
                "kind": "file_section",
                "source_id": f"{base}#{n}",
                "agent_id": scope.agent_id,
                "user_id": scope.user_id,
                "thread_id": scope.thread_id,
                "role": version.author,
                "seq": n,
                "text": f"{version.path}\n{section}",
                "said_at": version.created_at,
                "lineage": list(lineage),
            }
        )
        for n, section in enumerate(file_sections(content))
    ]


__all__ = [
    "CORE_AGENT",
    "FACT_TYPE",
    "ITEM_KINDS",
    "MAX_FILE_SECTIONS",
    "NODE_MARK",
    "SECTION_CHARS",
    "edge_record",
    "edge_text",
    "file_section_ids",
    "file_section_records",
    "file_sections",
    "file_source_id",
    "indexed_turn",
    "item_record",
    "item_text",
    "node_record",
    "node_term",
    "node_text",
    "turn_record",
    "turn_text",
]
