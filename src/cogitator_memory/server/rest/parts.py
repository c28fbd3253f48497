"""What the routes share: the :class:`~cogitator_memory.runtime.Memory` an app serves, and the
cascade that takes entries out of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import Request, Response
from pydantic_core import to_json

from ...cascade import MemoryCascade

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
