"""The :class:`~cogitator_memory.items.MemoryItems` that facts are written and read through.

It differs in two things only: a fact's first state takes the fact's id (so the fact is found by
its id alone), and it reads what holds now for a filter :meth:`MemoryItems.query` has no
argument for (``within``: every user of an agent), at the agent's own "now" (never before its
last record time), as ``query`` does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..result import unwrap
from . import rules
from .contract import MemoryItemAdapter
from .records import LAID_OUT_STATUSES, MemoryItem, NewMemoryItem
from .service import MemoryItems


class FactItems(MemoryItems):
    """Item rules for facts (see the module docstring). One instance per call: ``first_id`` is
    the id the new state it writes takes."""

    def __init__(self, adapter: MemoryItemAdapter, *, first_id: str | None = None) -> None:
        super().__init__(adapter=adapter)
        self._first_id = first_id

    def _new_item(self, new: NewMemoryItem, recorded: datetime, shadow: bool) -> MemoryItem:
        item = super()._new_item(new, recorded, shadow)
        if self._first_id is not None:
            item = item.model_copy(update={"id": self._first_id})
        return item

    def now_for(self, agent_id: str) -> datetime:
        """Now for reading the agent's items (never before its last record time)."""
        return self._now_for(agent_id)

    async def held(self, base: dict[str, Any], agent_id: str) -> list[MemoryItem]:
        """The active and superseded items passing ``base`` (a store filter) that hold now, one
        state per slot and scope, in layout order."""
        now = self._now_for(agent_id)
        items = unwrap(await self.adapter.query_items({**base, "statuses": sorted(LAID_OUT_STATUSES), "as_of": now}))
        return rules.holding(items, as_of=now, known_at_time=now, relayout=False)


__all__ = ["FactItems"]
