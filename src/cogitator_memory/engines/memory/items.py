"""Memory items in process memory: the primitives of
:class:`~cogitator_memory.items.base.MemoryItemStoreMixin`, mixed into
:class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`.

Items are kept as their JSON beside an object parsed from it (which queries match against and
nobody else sees), indexed by scope key, by agent and by the entries their quotes name; every
read builds fresh records from the JSON, so nothing a caller holds is shared with the store. Each
primitive runs without awaiting, so each is atomic.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import ValidationError

from ...errors import ConflictError, NotFoundError
from ...items.base import MemoryItemStoreMixin
from ...items.records import TRUSTED, ItemQuery, ItemUpdate, MemoryItem, scope_key
from ...threads import tree

_serialize = MemoryItem.__pydantic_serializer__.to_json


def _to_json(item: MemoryItem) -> bytes:
    return _serialize(item, exclude_none=True)


def _parse(blob: bytes) -> MemoryItem:
    return MemoryItem.model_validate_json(blob, context=TRUSTED)  # checked when it was written


class InMemoryItems(MemoryItemStoreMixin):
    """The item half of :class:`~cogitator_memory.engines.memory.threads.InMemoryAdapter`."""

    def __init__(self) -> None:
        super().__init__()
        self._items: dict[str, MemoryItem] = {}
        self._item_blobs: dict[str, bytes] = {}
        #: Ids by the keys an item never changes: its scope, agent, slot in scope, subject in scope.
        self._items_by_key: dict[tuple[str, ...], dict[str, None]] = {}
        self._items_by_entry: dict[str, set[str]] = {}

    # ----- indexes -------------------------------------------------------------------------

    def _keep(self, item: MemoryItem) -> MemoryItem:
        """Keep ``item`` as JSON and as an object of the store's own; returns that object."""
        blob = _to_json(item)
        kept = self._items[item.id] = _parse(blob)
        self._item_blobs[item.id] = blob
        return kept

    def _copy(self, item_id: str) -> MemoryItem:
        return _parse(self._item_blobs[item_id])

    @staticmethod
    def _keys(item: MemoryItem) -> list[tuple[str, ...]]:
        scope = scope_key(item.scope)
        return [
            ("scope", scope),
            ("agent", item.scope.agent_id),
            ("slot", scope, item.slot_key),
            ("subject", scope, item.subject_key),
        ]

    def _index_item(self, item: MemoryItem) -> None:
        item = self._keep(item)
        for key in self._keys(item):
            self._items_by_key.setdefault(key, {})[item.id] = None
        self._index_entries(item.id, (e.entry_id for e in item.evidence))

    def _index_entries(self, item_id: str, entry_ids: Iterable[str | None]) -> None:
        for entry_id in entry_ids:
            if entry_id:
                self._items_by_entry.setdefault(entry_id, set()).add(item_id)

    def _unindex_entries(self, item_id: str, entry_ids: Iterable[str | None]) -> None:
        for entry_id in entry_ids:
            if entry_id and entry_id in self._items_by_entry:
                holders = self._items_by_entry[entry_id]
                holders.discard(item_id)
                if not holders:
                    del self._items_by_entry[entry_id]

    def _unindex_item(self, item: MemoryItem) -> None:
        del self._items[item.id]
        del self._item_blobs[item.id]
        for key in self._keys(item):
            ids = self._items_by_key.get(key)
            if ids is not None:
                ids.pop(item.id, None)
                if not ids:
                    del self._items_by_key[key]
        self._unindex_entries(item.id, (e.entry_id for e in item.evidence))

    # ----- primitives ----------------------------------------------------------------------

    async def _add_items(self, items: list[MemoryItem]) -> None:
        for item in items:
            if item.id in self._items:
                raise ConflictError(f"memory item id is taken: {item.id}")
        for item in items:
            self._index_item(item)

    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        return [self._copy(i) for i in ids if i in self._items]

    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        candidates: Iterable[str]
        if query.entry_ids is not None:
            found: set[str] = set()
            for entry_id in query.entry_ids:
                found |= self._items_by_entry.get(entry_id, set())
            candidates = found
        elif query.scope_keys is not None:
            keys: list[tuple[str, ...]]
            if query.slot_keys is not None:
                keys = [("slot", scope, slot) for scope in query.scope_keys for slot in query.slot_keys]
            elif query.subject_key is not None:
                keys = [("subject", scope, query.subject_key) for scope in query.scope_keys]
            else:
                keys = [("scope", scope) for scope in query.scope_keys]
            candidates = [i for key in keys for i in self._items_by_key.get(key, ())]
        else:
            candidates = self._items_by_key.get(("agent", query.agent_id), {})
        matched = [item for item in map(self._items.__getitem__, candidates) if query.matches(item)]
        matched.sort(key=query.sort_key)
        if query.limit:
            matched = matched[-query.limit :]
        return [self._copy(item.id) for item in matched]

    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        changed: list[tuple[MemoryItem, MemoryItem]] = []
        for update in updates:
            current = self._items.get(update.id)
            if current is None:
                raise NotFoundError(f"memory item not found: {update.id}")
            if current.version != update.expected_version:
                raise ConflictError(
                    f"memory item {update.id} is at version {current.version}, not {update.expected_version}: "
                    "it changed since it was read"
                )
            try:
                changed.append((current, update.apply(current)))
            except ValidationError as exc:
                raise tree.validation_error("updates", exc) from None
        for old, new in changed:
            self._unindex_entries(old.id, (e.entry_id for e in old.evidence))
            self._keep(new)
            self._index_entries(new.id, (e.entry_id for e in new.evidence))
        return [self._copy(new.id) for _, new in changed]

    async def _delete_items(self, ids: list[str]) -> int:
        gone = 0
        for item_id in ids:
            item = self._items.get(item_id)
            if item is not None:
                self._unindex_item(item)
                gone += 1
        return gone

    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        counted = 0
        for item_id in ids:
            item = self._items.get(item_id)
            if item is None:
                continue
            last = item.last_retrieved_at
            item.times_retrieved += 1
            item.last_retrieved_at = at if last is None or at > last else last
            self._keep(item)
            counted += 1
        return counted


__all__ = ["InMemoryItems"]
