"""The vectors of memory items, kept in the embedding store beside the turns' vectors.

An item's text never changes (its subject, attribute and value make it what it is), so its vector
is made once, the first time a search needs it, and kept in the embedding store under
``metadata.index = "items"`` with the item's scope; every later search (in this process or the
next) reads it back instead of embedding the item again. Forgetting sweeps it with the item (the
cascade deletes the vectors whose source is a deleted item, and a user's vectors with the user).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConflictError
from ..index.build import item_text
from ..items.records import MemoryItem
from ..result import unwrap

#: ``metadata.index`` of the items' vectors.
ITEMS_INDEX = "items"
#: Items whose vectors one call reads or writes at once.
_BATCH = 500


def item_vector_id(item_id: str) -> str:
    """The id of an item's vector in the embedding store (one per item)."""
    return f"ivec_{item_id}"


async def item_vectors(store: Any, service: Any, items: Sequence[MemoryItem]) -> dict[str, list[float]]:
    """The vectors of ``items`` by id: read from ``store``, and for those it has not, made by
    ``service`` (one batch) and written there. Raises what the store or the service raise."""
    out: dict[str, list[float]] = {}
    if not items:
        return out
    ids = [i.id for i in items]
    for start in range(0, len(ids), _BATCH):
        for found in unwrap(await store.get_by_sources(ids[start : start + _BATCH])):
            if found.metadata.get("index") == ITEMS_INDEX:
                out[found.source_id] = found.vector
    need = [i for i in items if i.id not in out]
    if not need:
        return out
    texts = [item_text(i) for i in need]
    made = await service.embed_batch(texts)
    rows: list[dict[str, Any]] = []
    for item, text, vector in zip(need, texts, made, strict=True):
        out[item.id] = list(vector)
        metadata: dict[str, Any] = {"index": ITEMS_INDEX, "agent_id": item.scope.agent_id}
        if item.scope.user_id is not None:
            metadata["user_id"] = item.scope.user_id
        rows.append(
            {
                "id": item_vector_id(item.id),
                "source_id": item.id,
                "source_type": "item",
                "content": text,
                "vector": list(vector),
                "metadata": metadata,
            }
        )
    for start in range(0, len(rows), _BATCH):
        chunk = rows[start : start + _BATCH]
        written = await store.add_embeddings(chunk)
        if written.success:
            continue
        if written.error_type is not ConflictError:
            unwrap(written)
        for row in chunk:  # another writer made some of them first: keep theirs, write the rest
            one = await store.add_embedding(row)
            if not one.success and one.error_type is not ConflictError:
                unwrap(one)
    return out


__all__ = ["ITEMS_INDEX", "item_vector_id", "item_vectors"]
