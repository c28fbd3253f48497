"""``MemoryItems``: the rules of memory items over any store that keeps them.

Writing only adds: a value said again merges into the state it repeats, and a new value is a new
item that closes the one before it when it starts. One agent's writes go one after another
within a process (a lock per store and agent), each recorded at least a millisecond after the
one before. After every write the slot it touched is laid out again in its exact scope, read
back and laid out again until a fresh read needs no change, with every change conditioned on the
version read: writers racing in other processes, a state told late and a close a failed write
left undone all end in the same layout. A batch (:meth:`MemoryItems.add_many`) reads the slots it
touches once, lays them out in memory item after item (:mod:`.batching`) and writes what changed
in one ``update_items`` and one ``add_items`` call. See ``docs/items.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import weakref
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .. import clock as package_clock
from ..errors import ConflictError, InvalidArgumentError
from ..result import MemoryResult, unwrap
from ..threads import tree
from ..threads.records import ACTIVATED_AT_KEY, STALE_BECAUSE_KEY
from . import batching, rules
from .contract import MemoryItemAdapter, PlannedItemWrites, check_ids, is_memory_item_adapter
from .records import (
    ITEM_KINDS,
    ITEM_STATUSES,
    LAID_OUT_STATUSES,
    MAX_BATCH,
    ItemEvidence,
    ItemUpdate,
    MemoryItem,
    MemoryScope,
    NewMemoryItem,
    Slot,
    check_new_item,
    check_scope,
    check_slot,
    scope_key,
)

NewItemInput = NewMemoryItem | dict[str, Any]
StatusesArg = str | Iterable[str] | None

#: How many times one write reads and lays its slot out again before giving up (each round
#: follows a change another writer made in between).
MAX_ROUNDS = 12
#: How many slots one read of a batch names at most (one query per scope and this many slots).
SLOTS_PER_READ = 500
#: The smallest step between two records of one agent.
TICK = timedelta(milliseconds=1)
#: The longest pause after a refused round (the pause doubles from 1 ms each round, jittered).
MAX_BACKOFF = 0.05

_jitter = random.Random()


async def _back_off(round_: int) -> None:
    """Pause a random while after a round another writer's change refused, longer each round, so
    writers that keep refusing each other fall out of step instead of racing again in lockstep."""
    await asyncio.sleep(_jitter.uniform(0, min(MAX_BACKOFF, 0.001 * 2**round_)))


@dataclass
class _AgentState:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last: datetime | None = None
    #: The event loop the lock serves (a store used from another loop gets a lock of its own there).
    loop: asyncio.AbstractEventLoop | None = None


_AgentStates = dict[str, _AgentState]
#: One lock (and last record time) per store and agent, shared by every MemoryItems of the process.
_REGISTRY: weakref.WeakKeyDictionary[object, _AgentStates] = weakref.WeakKeyDictionary()


def _states_of(adapter: object) -> _AgentStates:
    try:
        return _REGISTRY.setdefault(adapter, {})
    except TypeError:  # a store that cannot be weakly referenced: a lock set of its own
        return {}


def _conflict(result: MemoryResult[Any]) -> bool:
    return not result.success and result.error_type is not None and issubclass(result.error_type, ConflictError)


def _check_statuses(value: StatusesArg, default: frozenset[str]) -> frozenset[str]:
    if value is None:
        return default
    if value == "all":
        return frozenset(ITEM_STATUSES)
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, Iterable):
        raise InvalidArgumentError("statuses", "must be 'all' or a list of statuses")
    chosen = set()
    for status in values:
        if status not in ITEM_STATUSES:
            raise InvalidArgumentError("statuses", f"unknown status {status!r}; known: {', '.join(ITEM_STATUSES)}")
        chosen.add(status)
    if not chosen:
        raise InvalidArgumentError("statuses", "must name at least one status")
    return frozenset(chosen)


def _check_kinds(value: object) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, Iterable):
        raise InvalidArgumentError("kinds", "must be a list of kinds")
    chosen = []
    for kind in values:
        if kind not in ITEM_KINDS:
            raise InvalidArgumentError("kinds", f"unknown kind {kind!r}; known: {', '.join(ITEM_KINDS)}")
        chosen.append(kind)
    if not chosen:
        raise InvalidArgumentError("kinds", "must name at least one kind")
    return chosen


def _reason(because: object, at: datetime) -> dict[str, Any]:
    if isinstance(because, str):
        reason: dict[str, Any] = {"reason": because}
    elif isinstance(because, Mapping):
        reason = tree.check_metadata("because", because)
    else:
        raise InvalidArgumentError("because", f"must be a reason (a string or a dict), got {type(because).__name__}")
    reason.setdefault("at", at.isoformat())
    return reason


class MemoryItems:
    """The rules of memory items over a store that keeps them (see the module docstring).

    ``adapter`` is any :class:`~cogitator_memory.items.base.MemoryItemAdapter` (every built-in
    thread store is one). ``activation_confidence`` (default 0.7) is the confidence a user's item
    with quotes that hold needs to become active on its own. ``clock`` returns the current time
    (default :func:`cogitator_memory.clock.now`, which tests freeze). Calls raise
    :class:`~cogitator_memory.errors.MemoryStoreError` subclasses: ``InvalidArgumentError``
    naming the field for bad input, the store's error when it fails.
    """

    def __init__(
        self,
        *,
        adapter: MemoryItemAdapter,
        activation_confidence: float = rules.DEFAULT_ACTIVATION_CONFIDENCE,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not is_memory_item_adapter(adapter):
            raise InvalidArgumentError("adapter", f"must keep memory items (a MemoryItemAdapter), got {adapter!r}")
        if (
            isinstance(activation_confidence, bool)
            or not isinstance(activation_confidence, int | float)
            or not 0.0 <= activation_confidence <= 1.0
        ):
            raise InvalidArgumentError(
                "activation_confidence", f"must be a number from 0 to 1, got {activation_confidence!r}"
            )
        if clock is not None and not callable(clock):
            raise InvalidArgumentError("clock", "must be a function returning the current datetime")
        self.adapter = adapter
        self.activation_confidence = float(activation_confidence)
        self._clock = clock or package_clock.now
        self._agents = _states_of(adapter)

    # ----- time and locks ------------------------------------------------------------------

    def _now(self) -> datetime:
        return package_clock.to_utc(self._clock())

    def _agent(self, agent_id: str) -> _AgentState:
        loop = asyncio.get_running_loop()
        state = self._agents.get(agent_id)
        if state is None:
            state = self._agents[agent_id] = _AgentState(loop=loop)
        elif state.loop is not loop:
            state.lock, state.loop = asyncio.Lock(), loop
        return state

    def _now_for(self, agent_id: str) -> datetime:
        """Now, for reading and laying out an agent's items: never before its last record time
        (records run up to a millisecond apart ahead of a clock that did not move)."""
        at = self._now()
        state = self._agents.get(agent_id)
        if state is not None and state.last is not None and state.last > at:
            return state.last
        return at

    def _tick(self, state: _AgentState) -> datetime:
        """The record time of the agent's next write: now, or a millisecond after its last one."""
        at = self._now()
        if state.last is not None and at < state.last + TICK:
            at = state.last + TICK
        state.last = at
        return at

    # ----- writing -------------------------------------------------------------------------

    async def add(self, item: NewItemInput, *, shadow: bool = False) -> MemoryItem:
        """Write one item (a :class:`NewMemoryItem` or a dict of its fields); returns the item as
        stored: the one it merged into, or the new state.

        It merges into the newest open item of its slot and exact scope with the same value that
        no other value followed since (trust and verified from the better source, the quotes
        added, an opinion with quotes that hold gaining 0.1); else it is a new item, ``active``
        only from system or from user with quotes that hold at ``activation_confidence``, and
        ``suggested`` otherwise or with ``shadow=True``. An open opinion of the slot a less trusted
        source contradicts loses 0.2. The slot is laid out by time afterwards.
        """
        return (await self.add_many([item], shadow=shadow))[0]

    async def add_many(self, items: Sequence[NewItemInput], *, shadow: bool = False) -> list[MemoryItem]:
        """Write items as :meth:`add` writes each in turn, in one batch: every item is checked
        before any is written (``items[2].kind``); the slots they touch are read once, laid out
        in memory item after item, and what changed is written with one ``update_items`` and one
        ``add_items`` call, all or nothing (batches of :data:`~cogitator_memory.items.records.MAX_BATCH`).
        Returns, for each item, the item it was written as (a new state, or the one it merged
        into), as stored once the batch is written."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
            raise InvalidArgumentError("items", "must be a list of items")
        checked = [check_new_item(f"items[{i}]" if len(items) > 1 else "item", v) for i, v in enumerate(items)]
        out: list[MemoryItem] = []
        for start in range(0, len(checked), MAX_BATCH):
            out.extend(await self._write_batch(checked[start : start + MAX_BATCH], bool(shadow)))
        return out

    async def _write_batch(self, news: list[NewMemoryItem], shadow: bool) -> list[MemoryItem]:
        if not news:
            return []
        slots: dict[batching.GroupKey, tuple[MemoryScope, Slot]] = {}
        for new in news:
            key = batching.group_key(new)
            if key not in slots:
                slots[key] = (new.scope, new.slot)
        async with contextlib.AsyncExitStack() as locks:
            states: dict[str, _AgentState] = {}
            for agent_id in sorted({new.scope.agent_id for new in news}):  # one order: no deadlock
                states[agent_id] = state = self._agent(agent_id)
                await locks.enter_async_context(state.lock)
            recorded = [self._tick(states[new.scope.agent_id]) for new in news]
            now = self._now()
            nows = [max(now, at) for at in recorded]  # what _now_for gives right after each record
            store = self.adapter if isinstance(self.adapter, PlannedItemWrites) else None
            for round_ in range(MAX_ROUNDS):
                plan = batching.plan_batch(
                    await self._read_slots(slots.values()),
                    news,
                    recorded,
                    nows,
                    activation_confidence=self.activation_confidence,
                    shadow=shadow,
                    make_item=self._new_item,
                )
                if store is not None:  # one write, the records not checked again (they were built here)
                    stored = await store._write_plan(
                        plan.updates, plan.adds, functools.partial(batching.undo_updates, plan)
                    )
                    if stored is None:
                        await _back_off(round_)
                        continue
                    expected: dict[str, MemoryItem] | None = {**plan.final, **{i.id: i for i in stored}}
                    break
                expected = None
                if plan.updates:
                    result = await self.adapter.update_items(plan.updates)
                    if _conflict(result):
                        await _back_off(round_)
                        continue
                    unwrap(result)
                if plan.adds:
                    added = await self.adapter.add_items(plan.adds)
                    if not added.success and plan.updates:  # all or nothing: the changes go back
                        await self.adapter.update_items(batching.undo_updates(plan))
                    unwrap(added)
                break
            else:
                raise ConflictError(f"memory items of {len(slots)} slot(s) kept changing under this write")
            laid = await self._settle(slots, plan.laid_at, expected)
        out = []
        for written_id in plan.written:
            if written_id not in laid:
                raise ConflictError(f"memory item {written_id} went while it was written")
            out.append(laid[written_id])
        return out

    def _new_item(self, new: NewMemoryItem, recorded: datetime, shadow: bool) -> MemoryItem:
        """The new state ``new`` makes, recorded at ``recorded`` (a subclass may give it its id)."""
        return batching.new_item(new, recorded, shadow=shadow, activation_confidence=self.activation_confidence)

    async def _read_slots(self, slots: Iterable[tuple[MemoryScope, Slot]]) -> list[MemoryItem]:
        """Every item of these slots, each in its exact scope: one query per scope (per
        :data:`SLOTS_PER_READ` slots)."""
        by_scope: dict[str, tuple[MemoryScope, list[Slot]]] = {}
        for scope, slot in slots:
            by_scope.setdefault(scope_key(scope), (scope, []))[1].append(slot)
        found: list[MemoryItem] = []
        for scope, scope_slots in by_scope.values():
            for start in range(0, len(scope_slots), SLOTS_PER_READ):
                chunk = scope_slots[start : start + SLOTS_PER_READ]
                read: list[MemoryItem] = unwrap(await self.adapter.query_items({"scope": scope, "slots": chunk}))
                found.extend(read)
        return found

    async def _unchanged(self, slots: Iterable[tuple[MemoryScope, Slot]], expected: Mapping[str, MemoryItem]) -> bool:
        """Whether the slots hold exactly the ``expected`` items at their versions (no writer
        elsewhere changed them since this one wrote), read as ids and versions only."""
        store = self.adapter
        if not isinstance(store, PlannedItemWrites):
            return False
        by_scope: dict[str, tuple[MemoryScope, list[Slot]]] = {}
        for scope, slot in slots:
            by_scope.setdefault(scope_key(scope), (scope, []))[1].append(slot)
        versions: dict[str, int] = {}
        for scope, scope_slots in by_scope.values():
            for start in range(0, len(scope_slots), SLOTS_PER_READ):
                chunk = scope_slots[start : start + SLOTS_PER_READ]
                read: dict[str, int] = unwrap(await store._read_versions({"scope": scope, "slots": chunk}))
                versions.update(read)
        return len(versions) == len(expected) and all(
            (item := expected.get(item_id)) is not None and item.version == version
            for item_id, version in versions.items()
        )

    async def _settle(
        self,
        slots: Mapping[batching.GroupKey, tuple[MemoryScope, Slot]],
        laid_at: Mapping[batching.GroupKey, datetime],
        expected: Mapping[str, MemoryItem] | None = None,
    ) -> dict[str, MemoryItem]:
        """Read the slots back and lay out any a writer elsewhere changed in between, until a fresh
        read needs no change (each change at the version read); the items of that last read.

        ``expected`` is every item of the slots as this writer left them: when the store holds
        exactly those ids at those versions and their layout needs no change, they are the read
        (the slots are read as ids and versions only, not whole)."""
        if (
            expected is not None
            and not self._layout_changes(expected.values(), slots, laid_at)
            and await self._unchanged(slots.values(), expected)
        ):
            return dict(expected)
        for round_ in range(MAX_ROUNDS):
            items = await self._read_slots(slots.values())
            updates = self._layout_changes(items, slots, laid_at)
            if not updates:
                return {item.id: item for item in items}
            result = await self.adapter.update_items(updates)
            if _conflict(result):
                await _back_off(round_)
            else:
                unwrap(result)
        raise ConflictError(f"memory items of {len(slots)} slot(s) kept changing while they were laid out")

    @staticmethod
    def _layout_changes(
        items: Iterable[MemoryItem],
        slots: Mapping[batching.GroupKey, tuple[MemoryScope, Slot]],
        laid_at: Mapping[batching.GroupKey, datetime],
    ) -> list[ItemUpdate]:
        """The changes laying the slots out again at the times they were laid out at would make."""
        groups: dict[batching.GroupKey, list[MemoryItem]] = defaultdict(list)
        for item in items:
            groups[batching.group_key(item)].append(item)
        return [
            update
            for key, group in groups.items()
            for update in rules.layout_updates(
                group, batching.layout_now(group, laid_at[key]), slotted=slots[key][1].attribute is not None
            )
        ]

    async def _slot_items(self, scope: MemoryScope, slot: Slot) -> list[MemoryItem]:
        return unwrap(await self.adapter.query_items({"scope": scope, "slot": slot}))

    async def _lay_out(self, scope: MemoryScope, slot: Slot) -> list[MemoryItem]:
        """Lay the slot out until a fresh read needs no change (each change at the version read);
        returns the items of that last read."""
        slotted = slot.attribute is not None
        for round_ in range(MAX_ROUNDS):
            items = await self._slot_items(scope, slot)
            now = batching.layout_now(items, self._now_for(scope.agent_id))
            updates = rules.layout_updates(items, now, slotted=slotted)
            if not updates:
                return items
            result = await self.adapter.update_items(updates)
            if _conflict(result):
                await _back_off(round_)
            else:
                unwrap(result)
        raise ConflictError(f"memory items of slot {slot.key!r} kept changing while they were laid out")

    async def _lay_out_all(self, items: Iterable[MemoryItem]) -> None:
        seen: dict[tuple[str, str], MemoryItem] = {}
        for item in items:
            seen.setdefault((item.scope_key, item.slot_key), item)
        for item in seen.values():
            await self._lay_out(item.scope, item.slot)

    # ----- changing items ------------------------------------------------------------------

    async def _change(
        self,
        ids: Sequence[str],
        change: Callable[[MemoryItem, datetime], ItemUpdate | None],
        *,
        remove: Callable[[MemoryItem], bool] | None = None,
        relayout: bool = True,
    ) -> list[str]:
        """Apply ``change`` to each item (under its agent's lock, retried on conflicts), delete the
        items ``remove`` picks, lay their slots out again; the ids changed or removed."""
        wanted = check_ids("ids", ids)
        if not wanted:
            return []
        first = unwrap(await self.adapter.get_items(wanted))
        by_agent: dict[str, list[str]] = defaultdict(list)
        for item in first:
            by_agent[item.scope.agent_id].append(item.id)
        done: list[str] = []
        for agent_id, agent_ids in by_agent.items():
            state = self._agent(agent_id)
            async with state.lock:
                at = self._tick(state)
                touched: list[MemoryItem] = []
                for round_ in range(MAX_ROUNDS):
                    current = unwrap(await self.adapter.get_items(agent_ids))
                    purge = [i for i in current if remove is not None and remove(i)]
                    purged = {i.id for i in purge}
                    pairs = [(i, change(i, at)) for i in current if i.id not in purged]
                    updates = [u for _, u in pairs if u is not None]
                    if updates:
                        result = await self.adapter.update_items(updates)
                        if _conflict(result):
                            await _back_off(round_)
                            continue
                        unwrap(result)
                    if purge:
                        unwrap(await self.adapter.delete_items([i.id for i in purge]))
                    touched = purge + [i for i, u in pairs if u is not None]
                    break
                else:
                    raise ConflictError(f"memory items of agent {agent_id!r} kept changing under this write")
                if relayout:
                    await self._lay_out_all(touched)
                done.extend(i.id for i in touched)
        order = {item_id: n for n, item_id in enumerate(wanted)}
        return sorted(done, key=order.__getitem__)

    async def activate(self, ids: Sequence[str]) -> list[str]:
        """Make suggested items active (after a person reviewed them), keeping when in
        ``metadata["activated_at"]``; returns the ids activated. Items that are not suggested stay
        as they are. Their slots are laid out again."""

        def change(item: MemoryItem, at: datetime) -> ItemUpdate | None:
            if item.status != "suggested":
                return None
            metadata = {**item.metadata, ACTIVATED_AT_KEY: at.isoformat()}
            return ItemUpdate(id=item.id, expected_version=item.version, status="active", metadata=metadata)

        return await self._change(ids, change)

    async def mark_stale(
        self, ids: Sequence[str], because: str | Mapping[str, Any] | None = None, *, only_from: StatusesArg = None
    ) -> list[str]:
        """Let items go without deleting them: status ``stale``, ``expired_at`` now, and
        ``because`` (a reason, or a dict such as ``{"reason": "rewound", "thread_id": ...}``, given
        an ``at`` when it has none) kept in ``metadata["stale_because"]``. With ``only_from`` (a list
        of statuses) an item whose status is not one of them stays as it is, even when it changed
        since it was read. Returns the ids marked; their slots are laid out again, so the state
        before a stale one holds again."""
        allowed = _check_statuses(only_from, frozenset(ITEM_STATUSES)) if only_from is not None else None
        if because is not None and not isinstance(because, str | Mapping):
            raise InvalidArgumentError("because", f"must be a string or a dict, got {type(because).__name__}")

        def change(item: MemoryItem, at: datetime) -> ItemUpdate | None:
            if item.status == "stale" or (allowed is not None and item.status not in allowed):
                return None
            metadata = dict(item.metadata)
            if because is not None:
                metadata[STALE_BECAUSE_KEY] = _reason(because, at)
            return ItemUpdate(
                id=item.id, expected_version=item.version, status="stale", expired_at=at, metadata=metadata
            )

        return await self._change(ids, change)

    async def revise_evidence(self, ids: Sequence[str], keep: Callable[[ItemEvidence], bool]) -> list[str]:
        """Drop the quotes ``keep`` refuses (those of entries that went) from the items; an item
        left with no quote at all is purged (deleted), since nothing it stood on is left. Returns
        the ids changed or purged; their slots are laid out again."""
        if not callable(keep):
            raise InvalidArgumentError("keep", "must be a function telling which evidence to keep")

        def kept(item: MemoryItem) -> list[ItemEvidence]:
            return [e for e in item.evidence if keep(e)]

        def emptied(item: MemoryItem) -> bool:
            return bool(item.evidence) and not kept(item)

        def change(item: MemoryItem, at: datetime) -> ItemUpdate | None:
            remaining = kept(item)
            if len(remaining) == len(item.evidence):
                return None
            return ItemUpdate(id=item.id, expected_version=item.version, evidence=remaining)

        return await self._change(ids, change, remove=emptied)

    async def let_go(
        self,
        scope: MemoryScope | dict[str, Any],
        slot: Slot | tuple[str, str] | dict[str, Any],
        *,
        at: datetime | None = None,
    ) -> list[str]:
        """End the slot's value at ``at`` (default now) without a new one: the state that holds
        then gets that end of its own and keeps its place, so the value before it does not come
        back. History keeps every state. Returns the ids ended."""
        checked_scope = check_scope("scope", scope)
        checked_slot = check_slot("slot", slot)
        when = tree.check_datetime("at", at)
        items = await self._slot_items(checked_scope, checked_slot)
        ids = [i.id for i in items if i.status in LAID_OUT_STATUSES]

        def change(item: MemoryItem, now: datetime) -> ItemUpdate | None:
            end = when or now
            if item.status not in LAID_OUT_STATUSES or (item.valid_to is not None and item.valid_to <= end):
                return None
            end = max(end, item.start)
            if item.ends_at is not None and item.ends_at <= end:
                return None
            return ItemUpdate(id=item.id, expected_version=item.version, ends_at=end)

        return await self._change(ids, change)

    async def note_retrieved(self, ids: Sequence[str], at: datetime | None = None) -> int:
        """Count that the items went to a model (``times_retrieved`` + 1, ``last_retrieved_at``):
        in one step of the store where it has ``count_retrieved``, else read and written back
        under each agent's lock. Returns how many items were counted."""
        wanted = check_ids("ids", ids)
        when = tree.check_datetime("at", at) or self._now()
        if not wanted:
            return 0
        count = getattr(self.adapter, "count_retrieved", None)
        if callable(count):
            counted: int = unwrap(await count(wanted, when))
            return counted

        def change(item: MemoryItem, _: datetime) -> ItemUpdate | None:
            last = item.last_retrieved_at
            return ItemUpdate(
                id=item.id,
                expected_version=item.version,
                times_retrieved=item.times_retrieved + 1,
                last_retrieved_at=when if last is None or when > last else last,
            )

        return len(await self._change(wanted, change, relayout=False))

    # ----- reading -------------------------------------------------------------------------

    async def query(
        self,
        scope: MemoryScope | dict[str, Any],
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        statuses: StatusesArg = None,
        kinds: Iterable[str] | None = None,
        slot: Slot | tuple[str, str] | dict[str, Any] | None = None,
        subject: str | None = None,
        entity_id: str | None = None,
        exact: bool = False,
        limit: int = 0,
    ) -> list[MemoryItem]:
        """The items ``scope`` sees (``exact=True``: kept in exactly that scope), ordered by when
        they start.

        By default the active and superseded items that held at ``as_of`` (default ``known_at``)
        as memory knew them at ``known_at`` (default now): one state per slot and scope, read from
        the times (with ``known_at`` in the past, each slot is laid out again from what memory
        knew then). ``statuses`` (a list, or ``"all"``) may ask for others: suggested and stale
        items are those recorded by ``known_at``, whatever their times. ``kinds``, ``slot``,
        ``subject`` and ``entity_id`` narrow; ``limit`` keeps the last ``limit`` (0: all).
        """
        checked = check_scope("scope", scope)
        now = self._now_for(checked.agent_id)
        known = tree.check_datetime("known_at", known_at) or now
        when = tree.check_datetime("as_of", as_of) or known
        chosen = _check_statuses(statuses, LAID_OUT_STATUSES)
        size = tree.check_limit("limit", limit)
        base: dict[str, Any] = {"scope" if exact else "visible_to": checked, "kinds": _check_kinds(kinds)}
        if slot is not None:
            base["slot"] = check_slot("slot", slot)
        if subject is not None or entity_id is not None:
            base["subject"] = subject
            base["entity_id"] = tree.check_optional_id("entity_id", entity_id)
        found: list[MemoryItem] = []
        laid = sorted(chosen & LAID_OUT_STATUSES)
        if laid:
            if known < now:
                items = unwrap(
                    await self.adapter.query_items({**base, "statuses": sorted(LAID_OUT_STATUSES), "known_at": known})
                )
                held = rules.holding(items, as_of=when, known_at_time=known, relayout=True)
            else:
                items = unwrap(await self.adapter.query_items({**base, "statuses": laid, "as_of": when}))
                held = rules.holding(items, as_of=when, known_at_time=known, relayout=False)
            found.extend(i for i in held if i.status in chosen)
        others = sorted(chosen - LAID_OUT_STATUSES)
        if others:
            items = unwrap(await self.adapter.query_items({**base, "statuses": others}))
            found.extend(i for i in items if i.recorded_at <= known)
        found.sort(key=rules.layout_order)
        return found[-size:] if size else found

    async def history(
        self,
        scope: MemoryScope | dict[str, Any],
        slot: Slot | tuple[str, str] | dict[str, Any],
        *,
        statuses: StatusesArg = None,
    ) -> list[MemoryItem]:
        """Every state of a slot kept in exactly ``scope``, closed ones included, ordered by when
        they start (by default the active and superseded ones; ``statuses`` may ask for others)."""
        checked = check_scope("scope", scope)
        checked_slot = check_slot("slot", slot)
        chosen = sorted(_check_statuses(statuses, LAID_OUT_STATUSES))
        items = unwrap(await self.adapter.query_items({"scope": checked, "slot": checked_slot, "statuses": chosen}))
        items.sort(key=rules.layout_order)
        return items


def without_entries(entry_ids: Collection[str]) -> Callable[[ItemEvidence], bool]:
    """A ``keep`` for :meth:`MemoryItems.revise_evidence` that drops the quotes of ``entry_ids``
    (the entries that went) and keeps every other."""
    gone = frozenset(entry_ids)
    return lambda evidence: evidence.entry_id not in gone


__all__ = ["MAX_ROUNDS", "SLOTS_PER_READ", "MemoryItems", "NewItemInput", "StatusesArg", "without_entries"]
