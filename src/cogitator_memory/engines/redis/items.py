"""Memory items in Redis: the primitives of :class:`~cogitator_memory.items.base.MemoryItemStoreMixin`
as Lua scripts (:mod:`.items_scripts`), mixed into
:class:`~cogitator_memory.engines.redis.threads.RedisAdapter`.

An item is a hash: the fields queries filter by (agent and limits, scope, slot and subject keys,
status, kind, times in microseconds, the quoted entry ids), its retrieval counters and version,
and the rest as one JSON field. Sorted sets scored by ``recorded_at`` index it by scope, by
scope and slot, by scope and subject, by agent and by each entry it quotes. Every primitive is
one script, so a batch is stored whole or not at all, a version check and its write cannot be
split, and counting a retrieval is one atomic increment. On a cluster every key carries the
adapter prefix's hash tag, so all of them share one slot and the scripts stay atomic there too,
whichever agents a batch mixes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from ...clock import to_micros
from ...errors import ConflictError, NotFoundError
from ...items.base import MemoryItemStoreMixin
from ...items.records import TRUSTED, ItemQuery, ItemUpdate, MemoryItem, scope_key
from ...threads import tree
from . import items_scripts as lua

if TYPE_CHECKING:
    from .scripts import LuaScript

#: Fields kept in hash fields of their own rather than in the JSON body.
_COUNTER_FIELDS = {"times_retrieved", "last_retrieved_at", "version"}
#: A larger limit is read as "all" by the query script (the results are cut in Python).
_MAX_SCRIPT_LIMIT = 100_000


def _micros(value: datetime | None) -> str:
    return "" if value is None else str(to_micros(value))


def _body(item: MemoryItem) -> str:
    return item.model_dump_json(exclude_none=True, exclude=_COUNTER_FIELDS)


def _entry_ids(item: MemoryItem) -> str:
    """The entries an item quotes, as the JSON array the scripts index by."""
    ids = sorted({e.entry_id for e in item.evidence if e.entry_id})
    return json.dumps(ids, ensure_ascii=False, separators=(",", ":"))


def _iso(value: datetime | None) -> str:
    return "" if value is None else value.isoformat()


@cache
def _item_list() -> TypeAdapter[list[MemoryItem]]:
    return TypeAdapter(list[MemoryItem])


def _items(answer: str) -> list[MemoryItem]:
    """Items from a script's answer, one JSON array (checked when they were written)."""
    return _item_list().validate_json(answer, context=TRUSTED)


class RedisItems(MemoryItemStoreMixin):
    """The item half of :class:`~cogitator_memory.engines.redis.threads.RedisAdapter`.

    Items do not expire: the adapter's ``ttl`` applies to threads and entries only.
    """

    if TYPE_CHECKING:  # provided by the adapter
        key_prefix: str

        async def _run(self, script: LuaScript, keys: Sequence[str], args: Sequence[Any]) -> Any: ...

    def _item_key(self, item_id: str) -> str:
        """The key of one item's hash (the key each script is routed by)."""
        return f"{self.key_prefix}item:{item_id}"

    async def _add_items(self, items: list[MemoryItem]) -> None:
        args: list[Any] = []
        for item in items:
            scope = item.scope
            args += [
                item.id,
                scope.agent_id,
                scope.user_id or "",
                scope.project_id or "",
                scope.thread_id or "",
                scope_key(scope),
                item.slot_key,
                item.subject_key,
                item.status,
                item.kind,
                to_micros(item.start),
                _micros(item.valid_to),
                to_micros(item.recorded_at),
                _micros(item.expired_at),
                _entry_ids(item),
                item.times_retrieved,
                _micros(item.last_retrieved_at),
                _iso(item.last_retrieved_at),
                _body(item),
            ]
        reply = await self._run(lua.ADD_ITEMS, [self._item_key(items[0].id)], args)
        if reply[0] == "taken":
            raise ConflictError(f"memory item id is taken: {reply[1]}")

    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        return _items(await self._run(lua.GET_ITEMS, [self._item_key(ids[0])], ids))

    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        spec: dict[str, Any] = {"agent": query.agent_id}
        if query.scope_keys is not None:
            spec["scopes"] = sorted(query.scope_keys)
        else:
            within = query.within
            assert within is not None
            spec["within"] = [within.user_id or "", within.project_id or "", within.thread_id or ""]
        for name, values in (("statuses", query.statuses), ("kinds", query.kinds), ("entries", query.entry_ids)):
            if values is not None:
                spec[name] = sorted(values)
        if query.slot_keys is not None:
            spec["slots"] = sorted(query.slot_keys)
        if query.subject_key is not None:
            spec["subject"] = query.subject_key
        for name, at in (("as_of", query.as_of), ("known_at", query.known_at), ("after", query.recorded_after)):
            if at is not None:
                spec[name] = str(to_micros(at))
        spec["limit"] = query.limit if query.limit <= _MAX_SCRIPT_LIMIT else 0
        spec["order"] = query.order
        argument = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
        found = _items(await self._run(lua.QUERY_ITEMS, [f"{self.key_prefix}items:agent:{query.agent_id}"], [argument]))
        found.sort(key=query.sort_key)
        if query.limit and len(found) > query.limit:
            found = found[-query.limit :]
        return found

    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        # Read, apply in Python, then write in one script that checks every version again: a
        # write made in between fails the batch as a conflict. The counters (not in the body)
        # are written only by an update that carries them, so a count made in between stays.
        current = {item.id: item for item in await self._get_items([u.id for u in updates])}
        changed: list[MemoryItem] = []
        args: list[Any] = []
        for update in updates:
            item = current.get(update.id)
            if item is None:
                raise NotFoundError(f"memory item not found: {update.id}")
            if item.version != update.expected_version:
                raise _conflict(update.id, item.version, update.expected_version)
            try:
                new = update.apply(item)
            except ValidationError as exc:
                raise tree.validation_error("updates", exc) from None
            changed.append(new)
            args += [
                new.id,
                update.expected_version,
                new.version,
                new.status,
                to_micros(new.start),
                _micros(new.valid_to),
                _micros(new.expired_at),
                "1" if "evidence" in update.model_fields_set else "0",
                _entry_ids(new),
                _body(new),
                "1" if update.model_fields_set & _COUNTER_FIELDS else "0",
                new.times_retrieved,
                _micros(new.last_retrieved_at),
                _iso(new.last_retrieved_at),
            ]
        reply = await self._run(lua.UPDATE_ITEMS, [self._item_key(updates[0].id)], args)
        if reply[0] == "missing":
            raise NotFoundError(f"memory item not found: {reply[1]}")
        if reply[0] == "conflict":
            expected = next(u.expected_version for u in updates if u.id == reply[1])
            raise _conflict(reply[1], int(reply[2]), expected)
        return [
            new.model_copy(
                update={
                    "times_retrieved": int(reply[1 + 2 * i]),
                    "last_retrieved_at": datetime.fromisoformat(reply[2 + 2 * i]) if reply[2 + 2 * i] else None,
                }
            )
            for i, new in enumerate(changed)
        ]

    async def _delete_items(self, ids: list[str]) -> int:
        return int(await self._run(lua.DELETE_ITEMS, [self._item_key(ids[0])], ids))

    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        return int(await self._run(lua.COUNT_RETRIEVED, [self._item_key(ids[0])], [to_micros(at), _iso(at), *ids]))


def _conflict(item_id: str, version: int, expected: int) -> ConflictError:
    return ConflictError(f"memory item {item_id} is at version {version}, not {expected}: it changed since it was read")


__all__ = ["RedisItems"]
