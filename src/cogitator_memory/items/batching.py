"""A batch of item writes laid out in memory: what :meth:`MemoryItems.add_many
<cogitator_memory.items.service.MemoryItems.add_many>` writes in one ``update_items`` and one
``add_items`` call.

:func:`plan_batch` runs, over the stored items of every slot the batch touches (read once), the
steps :meth:`~cogitator_memory.items.service.MemoryItems.add` takes for each item in turn (merge
into the state it repeats or a new state, the opinions a less trusted source contradicts, the
slot laid out again), so the batch ends where the same items added one by one end. What changed
is then written as one change per stored item, at the version read, and the new items in their
final state. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..ids import new_id
from ..threads.records import built_record
from . import rules
from .records import MUTABLE_FIELDS, ItemUpdate, MemoryItem, NewMemoryItem, scope_key

#: A slot in one exact scope: (scope key, slot key).
GroupKey = tuple[str, str]
_ITEM_FIELDS = tuple(MemoryItem.model_fields)
#: The fields of a stored item a new one does not tell, at their defaults (None and numbers).
_STORED_DEFAULTS: dict[str, Any] = {
    name: info.get_default(call_default_factory=True)
    for name, info in MemoryItem.model_fields.items()
    if name not in NewMemoryItem.model_fields and not info.is_required()
}


def group_key(item: MemoryItem | NewMemoryItem) -> GroupKey:
    """The slot of ``item`` in its exact scope, the unit the layout works on."""
    return scope_key(item.scope), item.slot_key


@dataclass
class BatchPlan:
    """What one batch writes, and where each of its items went."""

    #: The change of each stored item the batch changed, conditioned on the version read.
    updates: list[ItemUpdate] = field(default_factory=list)
    #: The new items, in their final state, in the order they were told.
    adds: list[MemoryItem] = field(default_factory=list)
    #: For each item of the batch, the id it was written as (a new item's, or the one it merged into).
    written: list[str] = field(default_factory=list)
    #: Each slot touched, and the time its layout was last worked out at.
    laid_at: dict[GroupKey, datetime] = field(default_factory=dict)
    #: The stored items the updates change, as read (to set them back when the adds fail).
    originals: dict[str, MemoryItem] = field(default_factory=dict)
    #: Every item of the slots touched as the batch leaves them (read, changed or new), by id;
    #: a changed item's version is the store's to move (the one written back is the store's).
    final: dict[str, MemoryItem] = field(default_factory=dict)


def layout_now(items: Iterable[MemoryItem], now: datetime) -> datetime:
    """The time a slot is laid out at: ``now``, or the latest record time among its items when
    later (a writer elsewhere whose clock runs ahead, or who recorded more, lays the slot out at
    that time too, so two writers never disagree on which states have ended)."""
    latest = max((item.recorded_at for item in items), default=now)
    return latest if latest > now else now


def new_item(new: NewMemoryItem, recorded: datetime, *, shadow: bool, activation_confidence: float) -> MemoryItem:
    """The stored form of ``new``, recorded at ``recorded``: ``active`` when it activates on its
    own (:func:`~cogitator_memory.items.rules.activates`, never with ``shadow``), else ``suggested``.

    Its fields were checked in ``new``: they are not checked again (``MemoryItems`` hands the
    items it builds to the store without a second check, see ``MemoryItemStoreMixin._write_plan``)."""
    active = not shadow and rules.activates(
        new.trust, new.verified, new.confidence, bool(new.evidence), activation_confidence
    )
    data = new.__dict__.copy()  # the fields (dict(new) walks them one by one)
    own_end = data.pop("valid_to")
    data.update(
        id=new_id("mem_"),
        status="active" if active else "suggested",
        valid_to=own_end,
        ends_at=own_end,
        recorded_at=recorded,
    )
    # Every field comes from the checked ``new`` or is made here: built without validating
    # again, as ``model_construct`` builds it (the fields in their order, the rest at defaults).
    fields = {name: data[name] if name in data else _STORED_DEFAULTS[name] for name in _ITEM_FIELDS}
    return built_record(MemoryItem, fields, set(data))


def _apply(update: ItemUpdate, item: MemoryItem) -> MemoryItem:
    """What :meth:`ItemUpdate.apply` gives, without checking the item again: the updates the
    rules make hold checked values, and the store checks the net change it is sent."""
    return item.model_copy(update={**update.changes(), "version": item.version + 1})


def _net_update(original: MemoryItem, final: MemoryItem) -> ItemUpdate | None:
    changed: dict[str, Any] = {
        name: getattr(final, name) for name in MUTABLE_FIELDS if getattr(final, name) != getattr(original, name)
    }
    if not changed:
        return None
    return ItemUpdate.model_validate({"id": original.id, "expected_version": original.version, **changed})


def plan_batch(
    stored: Iterable[MemoryItem],
    news: Sequence[NewMemoryItem],
    recorded: Sequence[datetime],
    nows: Sequence[datetime],
    *,
    activation_confidence: float,
    shadow: bool,
    make_item: Callable[[NewMemoryItem, datetime, bool], MemoryItem] | None = None,
) -> BatchPlan:
    """Lay ``news`` out over ``stored`` (every item of each slot they touch, in its exact scope).

    Item ``i`` is recorded at ``recorded[i]`` and its slot laid out at ``nows[i]``, as
    :meth:`~cogitator_memory.items.service.MemoryItems.add` would have done it then. A new state
    is made by ``make_item(new, recorded, shadow)`` (default :func:`new_item`).
    """
    groups: dict[GroupKey, dict[str, MemoryItem]] = {}
    originals: dict[str, tuple[MemoryItem, dict[str, MemoryItem]]] = {}
    for item in stored:
        group = groups.setdefault(group_key(item), {})
        group[item.id] = item
        originals[item.id] = (item, group)
    plan = BatchPlan()
    created: list[tuple[str, dict[str, MemoryItem]]] = []
    for new, at, now in zip(news, recorded, nows, strict=True):
        key = group_key(new)
        group = groups.setdefault(key, {})
        slotted = new.attribute is not None
        existing = list(group.values())
        target = rules.merge_target(existing, new, at, slotted=slotted)
        if target is not None:
            update = rules.merge_update(target, new, activation_confidence=activation_confidence, shadow=shadow)
            if update is not None:
                group[target.id] = _apply(update, target)
            plan.written.append(target.id)
        else:
            for loss in rules.contradicted_opinions(existing, new, at) if slotted else []:
                group[loss.id] = _apply(loss, group[loss.id])
            if make_item is not None:
                item = make_item(new, at, shadow)
            else:
                item = new_item(new, at, shadow=shadow, activation_confidence=activation_confidence)
            group[item.id] = item
            created.append((item.id, group))
            plan.written.append(item.id)
        for update in rules.layout_updates(group.values(), layout_now(group.values(), now), slotted=slotted):
            group[update.id] = _apply(update, group[update.id])
        plan.laid_at[key] = now
    for item_id, (original, group) in originals.items():
        final = group[item_id]
        change = None if final is original else _net_update(original, final)
        if change is not None:
            plan.updates.append(change)
            plan.originals[item_id] = original
    # A new item is stored at version 1, however many changes the batch made to it in memory.
    plan.adds = [_first_version(group[item_id]) for item_id, group in created]
    plan.final = {item.id: item for group in groups.values() for item in group.values()}
    plan.final.update((item.id, item) for item in plan.adds)
    return plan


def _first_version(item: MemoryItem) -> MemoryItem:
    return item if item.version == 1 else item.model_copy(update={"version": 1})


def undo_updates(plan: BatchPlan) -> list[ItemUpdate]:
    """The changes that set the items ``plan.updates`` changed back to how they were read, each
    at the version the update left it at."""
    out = []
    for update in plan.updates:
        original = plan.originals[update.id]
        fields = {name: getattr(original, name) for name in update.changes()}
        out.append(ItemUpdate.model_validate({"id": update.id, "expected_version": original.version + 1, **fields}))
    return out


__all__ = ["BatchPlan", "GroupKey", "group_key", "layout_now", "new_item", "plan_batch", "undo_updates"]
