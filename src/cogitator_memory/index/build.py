"""The records of the recall index made from what memory holds (no I/O).

One function per kind of source: :func:`turn_record` (an entry of a thread, with the thread
for its scope), :func:`item_record` (a memory item; a core fact is an item of the ``core``
agent) and :func:`fact_record` (a graph fact saved with ``remember``). Every writer of the
index (the indexer, ``Memory``, ``reindex``) makes its records here, so every store holds the
same records for the same memory.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..items.records import MemoryItem
from ..threads.records import EVENT_TYPES, REDACTED_KEY, USER_ID_KEY, MemoryEntry, Thread
from .records import MAX_RECORD_CHARS, RecallKind, RecallRecord, RecallStatus
from .terms import recall_terms

if TYPE_CHECKING:  # the graph package imports extraction, which imports recall: read lazily
    from ..graph.records import GraphNode

#: The agent core facts are kept under (see :mod:`cogitator_memory.facts.core`).
CORE_AGENT = "core"
#: The ``type`` of the graph nodes ``remember`` saves.
FACT_TYPE = "fact"
#: The kinds an item's record may have.
ITEM_KINDS: tuple[RecallKind, ...] = ("item", "core_fact")


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


__all__ = [
    "CORE_AGENT",
    "FACT_TYPE",
    "ITEM_KINDS",
    "indexed_turn",
    "item_record",
    "item_text",
    "node_record",
    "node_text",
    "turn_record",
    "turn_text",
]
