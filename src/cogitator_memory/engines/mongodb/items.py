"""Memory items in MongoDB: the primitives of :class:`~cogitator_memory.items.base.MemoryItemStoreMixin`
as pymongo calls, mixed into :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`.

An item is a document of ``<prefix>items`` (``_id`` is the item id). The fields queries filter
by are fields of their own, under the indexes made at ``connect()``: the scope key and the
agent, user, project and thread it is made of, the subject and slot keys, kind, status, the
state's start (``valid_from``, else ``recorded_at``) and end, the recorded and expired times,
and ``entry_ids`` (the entries the evidence quotes, under a multikey index). Times are integer
microseconds since the epoch (``*_us``): BSON dates keep milliseconds only. The retrieval
counters and the version are fields of their own; the rest of the item is one JSON string
``body``, so metadata keys with dots or dollars and every value round-trip as they were.

Atomicity:

- ``count_retrieved`` is one ``update_many`` (``$inc`` the count, ``$max`` the time), atomic on
  each document; it never moves the version, so it never conflicts with an update.
- ``update_items`` writes every item in one ``bulk_write`` of ``update_one({_id, version:
  expected})``, so a version check and its write cannot be split, and writes only the fields an
  update changes (the counters only when it carries them), so a count made meanwhile stays; each
  write marks its document with the batch's ``write_id``, which tells the writes that matched
  when some did not. The counters are read back in the same round of the session.
- A batch (``add_items``, ``update_items``) runs in a multi-document transaction when the
  adapter uses them (see ``MongoDBAdapter.uses_transactions``). Without them a batch's
  documents are written one by one by the server (one ``insert_many`` or ``bulk_write``), and a
  batch that fails part way undoes what it wrote before raising: the items it inserted are deleted, the items it updated are set back (each only if
  still at the version it wrote). A reader may see the middle of a batch; a failed batch leaves
  nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ...clock import from_micros, to_micros
from ...errors import ConflictError, NotFoundError
from ...ids import new_id
from ...items.base import MemoryItemStoreMixin
from ...items.records import TRUSTED, ItemQuery, ItemUpdate, MemoryItem, scope_key
from ...threads import tree

if TYPE_CHECKING:
    from pymongo.asynchronous.client_session import AsyncClientSession
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.database import AsyncDatabase
    from pymongo.asynchronous.mongo_client import AsyncMongoClient

T = TypeVar("T")
Doc = dict[str, Any]

#: Fields kept in fields of their own rather than in ``body``.
_COUNTER_FIELDS = {"times_retrieved", "last_retrieved_at", "version"}
#: The retrieval counters: an update writes them only when it carries them.
_COUNTERS = frozenset({"times_retrieved", "last_retrieved_at"})
#: What a read fetches of a document.
_READ: Doc = {"_id": 0, "body": 1, "times_retrieved": 1, "last_retrieved_us": 1, "version": 1}
#: The field an ``update_items`` write marks the documents it changed with (its own id), so the
#: writes of a batch that matched are known when some did not.
_WRITE_MARK = "write_id"
#: The largest limit sent to the server (a larger one reads all: the mixin cuts).
_MAX_LIMIT = 2**31 - 1
#: The indexes of ``<prefix>items``: name and keys.
ITEM_INDEXES: tuple[tuple[str, list[tuple[str, int]]], ...] = (
    ("scope_recorded", [("scope_key", 1), ("recorded_us", 1)]),
    ("scope_slot_status", [("scope_key", 1), ("slot_key", 1), ("status", 1)]),
    ("scope_subject", [("scope_key", 1), ("subject_key", 1)]),
    ("agent_limits", [("agent_id", 1), ("user_id", 1), ("project_id", 1), ("thread_id", 1)]),
    ("entries", [("entry_ids", 1)]),
)


# --- documents (no I/O) -------------------------------------------------------------------


def _micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def _body(item: MemoryItem) -> str:
    return item.model_dump_json(exclude_none=True, exclude=_COUNTER_FIELDS)


def _entry_ids(item: MemoryItem) -> list[str]:
    return sorted({e.entry_id for e in item.evidence if e.entry_id})


def item_document(item: MemoryItem) -> Doc:
    """The stored form of an item: its indexed fields, counters, version and JSON body."""
    scope = item.scope
    return {
        "_id": item.id,
        "agent_id": scope.agent_id,
        "user_id": scope.user_id,
        "project_id": scope.project_id,
        "thread_id": scope.thread_id,
        "scope_key": scope_key(scope),
        "subject_key": item.subject_key,
        "slot_key": item.slot_key,
        "kind": item.kind,
        "status": item.status,
        "start_us": to_micros(item.start),
        "valid_to_us": _micros(item.valid_to),
        "recorded_us": to_micros(item.recorded_at),
        "expired_us": _micros(item.expired_at),
        "entry_ids": _entry_ids(item),
        "times_retrieved": item.times_retrieved,
        "last_retrieved_us": _micros(item.last_retrieved_at),
        "version": item.version,
        "body": _body(item),
    }


def _changed_fields(item: MemoryItem, counters: bool) -> Doc:
    """The fields of a document an update may change (the counters only when ``counters``)."""
    fields: Doc = {
        "status": item.status,
        "start_us": to_micros(item.start),
        "valid_to_us": _micros(item.valid_to),
        "expired_us": _micros(item.expired_at),
        "entry_ids": _entry_ids(item),
        "version": item.version,
        "body": _body(item),
    }
    if counters:
        fields["times_retrieved"] = item.times_retrieved
        fields["last_retrieved_us"] = _micros(item.last_retrieved_at)
    return fields


def item_from_document(doc: Doc) -> MemoryItem:
    """The :class:`MemoryItem` a stored document holds (its counters spliced into the body, which
    is parsed once, as a record checked when it was written)."""
    body: str = doc["body"]
    extra = f',"times_retrieved":{int(doc["times_retrieved"])},"version":{int(doc["version"])}'
    last = doc.get("last_retrieved_us")
    if last is not None:
        extra += f',"last_retrieved_at":"{from_micros(last).isoformat()}"'
    return MemoryItem.model_validate_json(f"{body[:-1]}{extra}}}", context=TRUSTED)


def _open_or_after(field: str, at: int) -> Doc:
    """``field`` unset or after ``at``: a state (or belief) still holding at ``at``."""
    return {"$or": [{field: None}, {field: {"$gt": at}}]}


def item_filter(query: ItemQuery) -> Doc:
    """The MongoDB filter of a checked item query (every condition but ``limit``)."""
    clauses: list[Doc] = []
    if query.scope_keys is not None:
        keys = sorted(query.scope_keys)
        clauses.append({"scope_key": keys[0] if len(keys) == 1 else {"$in": keys}})
    else:
        within = query.within
        assert within is not None
        limits: Doc = {"agent_id": query.agent_id}
        for field, value in (
            ("user_id", within.user_id),
            ("project_id", within.project_id),
            ("thread_id", within.thread_id),
        ):
            if value is not None:
                limits[field] = value
        clauses.append(limits)
    if query.slot_keys is not None:
        slots = sorted(query.slot_keys)
        clauses.append({"slot_key": slots[0] if len(slots) == 1 else {"$in": slots}})
    if query.subject_key is not None:
        clauses.append({"subject_key": query.subject_key})
    for field, values in (("status", query.statuses), ("kind", query.kinds), ("entry_ids", query.entry_ids)):
        if values is not None:
            chosen = sorted(values)
            clauses.append({field: chosen[0] if len(chosen) == 1 else {"$in": chosen}})
    if query.as_of is not None:
        at = to_micros(query.as_of)
        clauses += [{"start_us": {"$lte": at}}, _open_or_after("valid_to_us", at)]
    if query.known_at is not None:
        at = to_micros(query.known_at)
        clauses += [{"recorded_us": {"$lte": at}}, _open_or_after("expired_us", at)]
    if query.recorded_after is not None:
        clauses.append({"recorded_us": {"$gt": to_micros(query.recorded_after)}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def item_index(query: ItemQuery) -> str:
    """The index a query reads (given as a hint, so that a sort by time never leads the planner
    to read a whole scope for one slot): the entries' index when entries are named, else the
    scope's slot or subject index, else the scope's by time; a ``within`` query the agent's."""
    if query.entry_ids is not None:
        return "entries"
    if query.scope_keys is None:
        return "agent_limits"
    if query.slot_keys is not None:
        return "scope_slot_status"
    if query.subject_key is not None:
        return "scope_subject"
    return "scope_recorded"


def _conflict(item_id: str, version: int, expected: int) -> ConflictError:
    return ConflictError(f"memory item {item_id} is at version {version}, not {expected}: it changed since it was read")


def _taken(exc: Exception, docs: list[Doc]) -> tuple[int, str | None]:
    """How many documents an ordered ``insert_many`` stored before ``exc``, and the id it found
    taken (``None`` when it failed for another reason)."""
    details = getattr(exc, "details", None) or {}
    errors = details.get("writeErrors") or []
    inserted = int(details.get("nInserted", 0))
    if errors and errors[0].get("code") in (11000, 11001):
        index = errors[0].get("index")
        if isinstance(index, int) and 0 <= index < len(docs):
            return inserted, str(docs[index]["_id"])
        return inserted, ""
    return inserted, None


# --- the mixin ----------------------------------------------------------------------------


class MongoDBItems(MemoryItemStoreMixin):
    """The item half of :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`: items
    in the collection ``<prefix>items`` (see the module docstring)."""

    _items_col: AsyncCollection[Doc] | None = None

    if TYPE_CHECKING:  # provided by the adapter
        collection_prefix: str
        _client: AsyncMongoClient[Doc] | None
        _use_transactions: bool

        async def _atomic(self, work: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T: ...

    @property
    def items_collection(self) -> AsyncCollection[Doc]:
        """The collection of memory items."""
        from ...errors import NotConnectedError

        if self._client is None or self._items_col is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._items_col

    async def _prepare_items(self, db: AsyncDatabase[Doc]) -> None:
        """Create the item indexes (at ``connect()``) and keep the collection."""
        collection = db[f"{self.collection_prefix}items"]
        for name, keys in ITEM_INDEXES:
            await collection.create_index(keys, name=name)
        self._items_col = collection

    # ----- primitives ----------------------------------------------------------------------

    async def _add_items(self, items: list[MemoryItem]) -> None:
        from pymongo.errors import BulkWriteError

        collection = self.items_collection
        docs = [item_document(item) for item in items]

        async def work(session: AsyncClientSession | None) -> None:
            try:
                await collection.insert_many(docs, ordered=True, session=session)
            except BulkWriteError as exc:
                inserted, taken = _taken(exc, docs)
                if session is None and inserted:
                    # Without a transaction the ones before the failure are stored: take them back.
                    await collection.delete_many({"_id": {"$in": [d["_id"] for d in docs[:inserted]]}})
                if taken is not None:
                    raise ConflictError(f"memory item id is taken: {taken}") from None
                raise

        await self._atomic(work)

    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        cursor = self.items_collection.find({"_id": {"$in": ids}}, _READ)
        return [item_from_document(doc) for doc in await cursor.to_list()]

    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        cursor = self.items_collection.find(item_filter(query), _READ).hint(item_index(query))
        if query.limit and query.limit <= _MAX_LIMIT:
            newest = [("recorded_us", -1), ("_id", -1)]
            if query.order == "start":
                newest.insert(0, ("start_us", -1))
            cursor = cursor.sort(newest).limit(query.limit)
        return [item_from_document(doc) for doc in await cursor.to_list()]

    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        from pymongo import UpdateOne

        collection = self.items_collection

        async def work(session: AsyncClientSession | None) -> list[MemoryItem]:
            ids = [u.id for u in updates]
            cursor = collection.find({"_id": {"$in": ids}}, _READ, session=session)
            current = {item.id: item for item in map(item_from_document, await cursor.to_list())}
            planned: list[tuple[ItemUpdate, MemoryItem, MemoryItem, bool]] = []
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
                planned.append((update, item, new, bool(update.model_fields_set & _COUNTERS)))
            # One round trip: each write conditioned on the version read, marked with this write's
            # id so that the ones that matched are known when some did not.
            mark = new_id("w_")
            writes = [
                UpdateOne(
                    {"_id": update.id, "version": update.expected_version},
                    {"$set": {**_changed_fields(new, counters), _WRITE_MARK: mark}},
                )
                for update, _old, new, counters in planned
            ]
            result = await collection.bulk_write(writes, ordered=True, session=session)
            read = collection.find(
                {"_id": {"$in": ids}},
                {"_id": 1, "times_retrieved": 1, "last_retrieved_us": 1, _WRITE_MARK: 1},
                session=session,
            )
            after = {str(doc["_id"]): doc for doc in await read.to_list()}
            if int(result.matched_count) != len(planned):  # some moved on (or went) since they were read
                missed = next(u for u, *_ in planned if after.get(u.id, {}).get(_WRITE_MARK) != mark)
                if session is None:
                    await self._undo_updates(
                        [(old, new, c) for u, old, new, c in planned if after.get(u.id, {}).get(_WRITE_MARK) == mark]
                    )
                raise await self._update_failure(missed, session)
            results: list[MemoryItem] = []
            for update, _old, new, _counters in planned:
                doc = after.get(update.id, {})  # counts made meanwhile are the store's: read back
                last = doc.get("last_retrieved_us")
                results.append(
                    new.model_copy(
                        update={
                            "times_retrieved": int(doc.get("times_retrieved", new.times_retrieved)),
                            "last_retrieved_at": None if last is None else from_micros(last),
                        }
                    )
                )
            return results

        return await self._atomic(work)

    async def _item_versions(self, query: ItemQuery) -> dict[str, int]:
        cursor = self.items_collection.find(item_filter(query), {"_id": 1, "version": 1}).hint(item_index(query))
        return {str(doc["_id"]): int(doc["version"]) for doc in await cursor.to_list()}

    async def _update_failure(self, update: ItemUpdate, session: AsyncClientSession | None) -> Exception:
        """Why a conditional write of ``update`` matched nothing: the item is gone, or moved on."""
        doc = await self.items_collection.find_one({"_id": update.id}, {"version": 1}, session=session)
        if doc is None:
            return NotFoundError(f"memory item not found: {update.id}")
        return _conflict(update.id, int(doc["version"]), update.expected_version)

    async def _undo_updates(self, written: list[tuple[MemoryItem, MemoryItem, bool]]) -> None:
        """Set back items a failed batch updated (without a transaction), each only if still at the
        version the batch wrote. Counts made meanwhile stay: a count written by the batch is taken
        back by its difference."""
        collection = self.items_collection
        for old, new, counters in reversed(written):
            change: Doc = {"$set": _changed_fields(old, False)}
            if counters:
                change["$set"]["last_retrieved_us"] = _micros(old.last_retrieved_at)
                change["$inc"] = {"times_retrieved": old.times_retrieved - new.times_retrieved}
            await collection.update_one({"_id": new.id, "version": new.version}, change)

    async def _delete_items(self, ids: list[str]) -> int:
        result = await self.items_collection.delete_many({"_id": {"$in": ids}})
        return int(result.deleted_count)

    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        result = await self.items_collection.update_many(
            {"_id": {"$in": ids}}, {"$inc": {"times_retrieved": 1}, "$max": {"last_retrieved_us": to_micros(at)}}
        )
        return int(result.matched_count)


__all__ = ["ITEM_INDEXES", "MongoDBItems", "item_document", "item_filter", "item_from_document", "item_index"]
