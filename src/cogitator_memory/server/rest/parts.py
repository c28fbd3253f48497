"""What the routes share: the :class:`~cogitator_memory.runtime.Memory` an app serves, and the
cascade that takes entries out of it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response
from pydantic_core import to_json, to_jsonable_python

from ...cascade import MemoryCascade
from ...threads.describe import describe_entry, message_text
from ...threads.records import MemoryEntry, Message

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime.memory import Memory


def memory_of(request: Request) -> Memory:
    """The memory the app serves."""
    memory: Memory = request.app.state.memory
    return memory


def send(data: Any, status: int = 200) -> Response:
    """``data`` as a JSON response, serialized at C speed: records (pydantic models, dataclasses)
    leave out fields never set, as everywhere in the package; ``None`` in plain dicts stays
    ``null`` (``next_cursor``)."""
    return Response(to_json(data, exclude_none=True), status_code=status, media_type="application/json")


def shown_entry(entry: MemoryEntry) -> dict[str, Any]:
    """An entry as JSON with ``shown``: what it says, as the CLI's trees show it (see
    :func:`~cogitator_memory.threads.describe.describe_entry`: tool calls, results, events)."""
    row: dict[str, Any] = to_jsonable_python(entry, exclude_none=True)
    row["shown"] = describe_entry(entry)[1]
    return row


def shown_entries(entries: Iterable[MemoryEntry]) -> list[dict[str, Any]]:
    """:func:`shown_entry` of each."""
    return [shown_entry(e) for e in entries]


def shown_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages as JSON, each with ``shown``: what it says (tool calls included)."""
    out = []
    for message in messages:
        row: dict[str, Any] = to_jsonable_python(message, exclude_none=True)
        row["shown"] = message_text(message)
        out.append(row)
    return out


def cascade_for(memory: Memory) -> MemoryCascade:
    """The cascade over every part ``memory`` holds (thread store, items, files, graph, vectors)."""
    given: Any = getattr(memory, "cascade", None)
    if isinstance(given, MemoryCascade):
        return given
    return MemoryCascade(
        memory=memory.adapter,
        items=memory.items,
        files=memory.files,
        graph=memory.graph,
        embeddings=memory.vectors,
    )


__all__ = ["cascade_for", "memory_of", "send"]
