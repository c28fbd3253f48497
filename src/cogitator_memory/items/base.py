"""The item-store contract: :class:`MemoryItemAdapter` for users, :class:`MemoryItemStoreMixin` for engines.

Users (and :class:`~cogitator_memory.items.service.MemoryItems`) type against the
:class:`MemoryItemAdapter` protocol; :func:`is_memory_item_adapter` tells whether a store keeps
items (both kept in :mod:`.contract`, which the service imports instead of this module). Every
built-in thread store keeps them: the engine mixes :class:`MemoryItemStoreMixin` into its adapter
class, in which every public call is written once (argument checks, copies, result wrapping),
and implements six underscore primitives:

- ``_add_items(items)``: insert every item or none; ``ConflictError`` when an id is taken.
- ``_get_items(ids)``: the stored items with those ids (any order, missing ones left out).
- ``_query_items(query)``: the items :meth:`ItemQuery.matches
  <cogitator_memory.items.records.ItemQuery.matches>` accepts, filtered by the store itself on
  indexed fields (scope key, slot, status, times); when ``query.limit`` is > 0, the newest
  ``limit`` by ``(recorded_at, id)``. In any order: the mixin sorts them.
- ``_update_items(updates)``: apply every update or none, each only when the stored
  item's version is its ``expected_version`` (``ConflictError`` otherwise, ``NotFoundError``
  for a missing id); versions move on by one.
- ``_delete_items(ids)``: delete them; how many existed.
- ``_count_retrieved(ids, at)``: in one atomic step, add one to ``times_retrieved`` of each
  item and set ``last_retrieved_at`` to ``at`` unless it is later already; the version does
  not move (counting never conflicts with a layout); how many items were counted.

One primitive is optional: ``_item_versions(query)``, the ``{id: version}`` of the items
``_query_items`` would return (the default reads them whole); an engine that can read two
columns instead of parsing every item overrides it. ``MemoryItems`` reads a batch's slots back
this way to tell that no other writer changed them.

Each primitive receives checked arguments and runs as one atomic operation on the engine.
Returned items are the store's copies: changing one never changes the store, and the store
never keeps an object it was handed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from .. import clock
from ..errors import ConflictError, InvalidArgumentError
from ..lifecycle import Capability, StoreLifecycle
from ..result import MemoryResult, ok, unwrap
from ..threads import tree
from .contract import (
    ItemFilterInput,
    ItemInput,
    MemoryItemAdapter,
    UpdateInput,
    check_ids,
    is_memory_item_adapter,
)
from .facts import FactStoreMixin
from .records import (
    MAX_BATCH,
    ItemQuery,
    ItemUpdate,
    MemoryItem,
    check_filter,
    check_item,
    check_update,
)


def _batch(name: str, value: object) -> list[Any]:
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence):
        raise InvalidArgumentError(name, "must be a list")
    if len(value) > MAX_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_BATCH} elements, got {len(value)}")
    return list(value)


class MemoryItemStoreMixin(FactStoreMixin, ABC):
    """The public item calls, written once over the engine's underscore primitives (see the module docstring).

    It inherits the fact calls of :class:`~cogitator_memory.items.facts.FactStoreMixin`, written
    over these: every store that keeps items keeps facts as memory items too.

    Mixed into a thread store's class before its base
    (``class SQLiteAdapter(SQLiteItems, BaseMemoryAdapter)``), it needs ``provider``,
    ``_require_connected()`` and ``_fail(operation, exc)`` from that base, and adds ``"items"``
    to the class's ``capabilities``.
    """

    provider: ClassVar[str]
    capabilities: ClassVar[frozenset[Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        existing = getattr(cls, "capabilities", None)
        if isinstance(existing, frozenset) and "items" not in existing:
            cls.capabilities = existing | {"items"}

    if TYPE_CHECKING:  # provided by the class the mixin goes into

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    # ----- engine primitives ---------------------------------------------------------------

    @abstractmethod
    async def _add_items(self, items: list[MemoryItem]) -> None:
        """Insert every item or none; ``ConflictError`` when an id is taken. Keep copies, never these objects."""

    @abstractmethod
    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        """The stored items with these ids, in any order."""

    @abstractmethod
    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        """The items ``query.matches`` (when ``query.limit`` > 0, at least the newest ``limit`` by
        ``query.sort_key``: more are trimmed), in any order."""

    @abstractmethod
    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        """Apply every update or none (versions checked, ``ConflictError``/``NotFoundError``); the
        updated items, in the order of ``updates``."""

    @abstractmethod
    async def _delete_items(self, ids: list[str]) -> int:
        """Delete the items; how many existed."""

    @abstractmethod
    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        """Atomically count one retrieval of each item at ``at`` (version unchanged); how many existed."""

    async def _item_versions(self, query: ItemQuery) -> dict[str, int]:
        """The ``{id: version}`` of the items ``_query_items(query)`` returns (``query.limit`` is 0)."""
        return {item.id: item.version for item in await self._query_items(query)}

    async def _recall_items(self, items: list[MemoryItem], *, fresh: Collection[str] = ()) -> None:
        """What a store keeping a recall index does with items written (``fresh``: the ids of
        those just added): nothing here (see
        :class:`~cogitator_memory.index.RecallIndexMixin`)."""
        return None

    async def _recall_forget_items(self, ids: list[str]) -> None:
        """What a store keeping a recall index does before items are deleted: nothing here."""
        return None

    # ----- public calls --------------------------------------------------------------------

    async def add_items(self, items: Sequence[ItemInput]) -> MemoryResult[list[MemoryItem]]:
        """Store complete :class:`MemoryItem` records (or dicts of their fields), all or nothing.

        Each is checked whole (an invalid one names its field, ``items[3].kind``); an id given
        twice or already stored is refused and nothing is written. Stored items start at
        version 1. Returns the stored items (copies of what the store keeps).
        """
        try:
            self._require_connected()
            batch = _batch("items", items)
            prepared: list[MemoryItem] = []
            seen: set[str] = set()
            for i, value in enumerate(batch):
                item = check_item(f"items[{i}]", value)
                if item.id in seen:
                    raise InvalidArgumentError(f"items[{i}].id", f"{item.id} appears twice in one batch")
                seen.add(item.id)
                if item.version != 1:
                    item = item.model_copy(update={"version": 1})
                prepared.append(item)
            if prepared:
                await self._add_items(prepared)  # first: an id another writer took fails here, unindexed
                await self._recall_items(prepared, fresh={item.id for item in prepared})
            return ok(prepared)  # fresh objects built by check_item: the store kept copies of its own
        except Exception as exc:
            return self._fail("add_items", exc)

    async def _write_plan(
        self, updates: list[ItemUpdate], adds: list[MemoryItem], undo: Callable[[], list[ItemUpdate]]
    ) -> list[MemoryItem] | None:
        """What :meth:`MemoryItems.add_many <cogitator_memory.items.service.MemoryItems.add_many>`
        writes for one batch (the package's own call, not the contract's): ``updates`` then
        ``adds``, all or nothing (when the adds fail, ``undo()`` sets the updates back), and the
        recall-index records of every item written in one write.

        Unlike ``update_items`` and ``add_items`` it does not check the records again:
        ``MemoryItems`` built them from items it checked (each update through
        :class:`ItemUpdate`'s checks, each new item from a checked
        :class:`~cogitator_memory.items.records.NewMemoryItem`), with ids that do not repeat.
        Returns the updated items (as the store returned them) and then the added ones, or
        ``None`` when an update met another version than the one read (nothing is written: read
        again and plan again). Any other failure raises the store's error, as ``unwrap`` of the
        public call would."""
        try:
            self._require_connected()
            try:
                updated = await self._update_items(updates) if updates else []
            except ConflictError:
                return None
            if adds:
                try:
                    await self._add_items(adds)  # an id another writer took fails here, unindexed
                except Exception:
                    if updates:  # set back at once; the add's failure is the one raised
                        with contextlib.suppress(Exception):
                            await self._update_items(undo())
                    raise
            written = [*updated, *adds]
            if written:
                await self._recall_items(written, fresh={item.id for item in adds})
            return written
        except Exception as exc:
            failed: MemoryResult[list[MemoryItem] | None] = self._fail("add_items", exc)
            return unwrap(failed)

    async def _read_versions(self, filter: ItemFilterInput) -> MemoryResult[dict[str, int]]:
        """The ``{id: version}`` of the items passing ``filter`` (its ``limit`` aside): how
        :class:`~cogitator_memory.items.service.MemoryItems` tells that the slots it wrote were
        not changed by another writer, without reading them whole."""
        try:
            self._require_connected()
            query = check_filter(filter)
            if query.limit:
                query = dataclasses.replace(query, limit=0)
            return ok(await self._item_versions(query))
        except Exception as exc:
            return self._fail("query_items", exc)

    async def get_items(self, ids: Sequence[str]) -> MemoryResult[list[MemoryItem]]:
        """The items with these ids, in the order of ``ids``; ids with no item are left out."""
        try:
            self._require_connected()
            wanted = check_ids("ids", ids)
            if not wanted:
                return ok([])
            found = {item.id: item for item in await self._get_items(wanted)}
            return ok([found[i] for i in wanted if i in found])
        except Exception as exc:
            return self._fail("get_items", exc)

    async def query_items(self, filter: ItemFilterInput) -> MemoryResult[list[MemoryItem]]:
        """The items passing ``filter`` (a :class:`MemoryItemFilter` or a dict of its fields),
        oldest first in its ``order`` (when recorded, or when each started to hold);
        ``filter.limit`` keeps the newest (0: all)."""
        try:
            self._require_connected()
            query = check_filter(filter)
            found = await self._query_items(query)
            found.sort(key=query.sort_key)
            if query.limit and len(found) > query.limit:
                found = found[-query.limit :]
            return ok(found)
        except Exception as exc:
            return self._fail("query_items", exc)

    async def update_items(self, updates: Sequence[UpdateInput]) -> MemoryResult[list[MemoryItem]]:
        """Apply :class:`ItemUpdate` changes, all or nothing.

        Each changes the fields it gives, and only when the item is still at its
        ``expected_version``: an item changed since it was read fails the whole call with a
        ``ConflictError`` (read it again and retry), a missing one with a ``NotFoundError``.
        Fields that make an item what it is (kind, subject, attribute, value, entity, scope,
        recorded_at) cannot change. Returns the updated items, versions moved on by one.
        """
        try:
            self._require_connected()
            batch = _batch("updates", updates)
            checked: list[ItemUpdate] = []
            seen: set[str] = set()
            for i, value in enumerate(batch):
                update = check_update(f"updates[{i}]", value)
                if update.id in seen:
                    raise InvalidArgumentError(f"updates[{i}].id", f"{update.id} appears twice in one batch")
                seen.add(update.id)
                checked.append(update)
            if not checked:
                return ok([])
            updated = await self._update_items(checked)
            await self._recall_items(updated)
            return ok(updated)
        except Exception as exc:
            return self._fail("update_items", exc)

    async def delete_items(self, ids: Sequence[str]) -> MemoryResult[int]:
        """Delete items for good (what a cascade purges); how many existed. Missing ids are fine."""
        try:
            self._require_connected()
            wanted = check_ids("ids", ids)
            if not wanted:
                return ok(0)
            await self._recall_forget_items(wanted)
            return ok(await self._delete_items(wanted))
        except Exception as exc:
            return self._fail("delete_items", exc)

    async def count_retrieved(self, ids: Sequence[str], at: datetime | None = None) -> MemoryResult[int]:
        """Count one retrieval of each item (``times_retrieved`` + 1, ``last_retrieved_at`` =
        ``at`` unless later already) in one step of the store; versions do not move. Returns how
        many of the items exist; missing ids are fine. ``at`` defaults to now."""
        try:
            self._require_connected()
            wanted = check_ids("ids", ids)
            when = tree.check_datetime("at", at) or clock.now()
            return ok(await self._count_retrieved(wanted, when) if wanted else 0)
        except Exception as exc:
            return self._fail("count_retrieved", exc)


class BaseMemoryItemAdapter(StoreLifecycle, MemoryItemStoreMixin):
    """Base class of a standalone item store (one that keeps no threads): lifecycle and the
    public calls written once. A subclass implements ``_connect``, ``_disconnect`` (see
    :class:`~cogitator_memory.lifecycle.StoreLifecycle`) and the item primitives."""

    provider: ClassVar[str] = "custom"
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"items", "health"})
    store_kind: ClassVar[str] = "item store"


__all__ = [
    "BaseMemoryItemAdapter",
    "ItemFilterInput",
    "ItemInput",
    "MemoryItemAdapter",
    "MemoryItemStoreMixin",
    "UpdateInput",
    "check_ids",
    "is_memory_item_adapter",
]
