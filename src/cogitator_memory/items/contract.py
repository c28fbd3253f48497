"""The item-store contract as the service sees it: the :class:`MemoryItemAdapter` protocol, the
inputs its calls take, :func:`is_memory_item_adapter` and :func:`check_ids`, and
:class:`PlannedItemWrites`, the two calls of the package's own stores that
:class:`~cogitator_memory.items.service.MemoryItems` uses when a store has them.

It is its own module, below :mod:`.base` (whose :class:`~cogitator_memory.items.base.MemoryItemStoreMixin`
writes facts through the service, :mod:`.facts`), so that the service need not import
:mod:`.base`. Users import these names from :mod:`cogitator_memory.items.base` or the package.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidArgumentError
from ..result import MemoryResult
from ..threads import tree
from .records import MAX_BATCH, ItemUpdate, MemoryItem, MemoryItemFilter

ItemInput = MemoryItem | dict[str, Any]
UpdateInput = ItemUpdate | dict[str, Any]
ItemFilterInput = MemoryItemFilter | dict[str, Any]


@runtime_checkable
class MemoryItemAdapter(Protocol):
    """What every store of memory items offers. All calls return a :class:`~cogitator_memory.MemoryResult`.

    These are the raw records; :class:`~cogitator_memory.items.service.MemoryItems` keeps the
    rules (merging, layout by time, activation) on top. :mod:`cogitator_memory.testing.items`
    checks the contract.
    """

    @property
    def provider(self) -> str:
        """The engine's name."""
        ...

    async def add_items(self, items: Sequence[ItemInput]) -> MemoryResult[list[MemoryItem]]:
        """Store complete items, all or nothing; a taken id is refused."""
        ...

    async def get_items(self, ids: Sequence[str]) -> MemoryResult[list[MemoryItem]]:
        """The items with these ids, in the order asked, missing ones left out."""
        ...

    async def query_items(self, filter: ItemFilterInput) -> MemoryResult[list[MemoryItem]]:
        """The items passing ``filter``, oldest recorded first."""
        ...

    async def update_items(self, updates: Sequence[UpdateInput]) -> MemoryResult[list[MemoryItem]]:
        """Change items at the versions the caller read, all or nothing."""
        ...

    async def delete_items(self, ids: Sequence[str]) -> MemoryResult[int]:
        """Delete items (purge); how many existed."""
        ...


def is_memory_item_adapter(value: object) -> bool:
    """Whether ``value`` keeps memory items (has the calls of :class:`MemoryItemAdapter`)."""
    return isinstance(value, MemoryItemAdapter)


def check_ids(name: str, value: object) -> list[str]:
    """A list of item ids (duplicates dropped, order kept), at most :data:`MAX_BATCH`."""
    if isinstance(value, str | bytes | dict) or not isinstance(value, Sequence | set | frozenset):
        raise InvalidArgumentError(name, "must be a list of item ids")
    ids = list(dict.fromkeys(tree.check_id(f"{name}[{i}]", v) for i, v in enumerate(value)))
    if len(ids) > MAX_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_BATCH} ids, got {len(ids)}")
    return ids


@runtime_checkable
class PlannedItemWrites(Protocol):
    """The package's own calls of a store built on
    :class:`~cogitator_memory.items.base.MemoryItemStoreMixin` (not the contract's): one write of
    a planned batch, and the versions of the items a filter passes. ``MemoryItems`` uses them when
    the store has them, the contract's calls otherwise."""

    async def _write_plan(
        self, updates: list[ItemUpdate], adds: list[MemoryItem], undo: Callable[[], list[ItemUpdate]]
    ) -> list[MemoryItem] | None: ...

    async def _read_versions(self, filter: ItemFilterInput) -> MemoryResult[dict[str, int]]: ...


__all__ = [
    "ItemFilterInput",
    "ItemInput",
    "MemoryItemAdapter",
    "PlannedItemWrites",
    "UpdateInput",
    "check_ids",
    "is_memory_item_adapter",
]
