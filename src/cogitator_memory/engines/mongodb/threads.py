"""The thread store in MongoDB: the primitives of
:class:`~cogitator_memory.threads.base.BaseMemoryAdapter` as document writes, mixed into
:class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`.

Threads live in ``<prefix>threads`` (``_id`` is the thread id) and entries in
``<prefix>entries`` (``_id`` is the entry id), prefix ``memory_`` by default. Times are kept
twice: as BSON dates (``created_at``/``updated_at``, milliseconds, for people and TTL
indexes) and as integer microseconds (``created_us``/``updated_us``), which the store
orders and filters by and returns. Fields never set are left out of the documents.

Atomicity. Every write that touches one document is one MongoDB operation. Writes that touch
a thread and its entries (``add_entry``, ``delete_entry``, ``clear_thread``, ``rewind``,
``checkout``, ``fork_thread``, ``delete_thread``) run in a multi-document transaction when the
server accepts one (found at ``connect()`` by running one, or forced by ``transactions=``), and
are retried on write conflicts. Without transactions (a standalone ``mongod``) the same
writes run in an order that never leaves a broken tree: an entry is inserted before the
thread's leaf moves to it, the leaf moves by compare-and-set, children are moved before their
parent is deleted (and again after, for writes that raced), and a write that finds its thread
or parent gone undoes itself. A client may also die between two writes, so what that leaves is
never read: ``delete_thread`` deletes the entries before the thread; reads (``get_entries``,
``get_path``, ``get_entry``) return no entries of a thread that does not exist; a fork's copies
carry ``pending_fork`` (the origin and the fork's users) until its thread is written, so the
erasure of those users (``threads_of_user``, which ``delete_user`` runs first) deletes the copies
of a fork that never got its thread; and a new thread (``create_thread``, ``fork_thread``) is
refused while entries left by an interrupted write carry its id (``delete_thread`` removes them).
See ``docs/mongodb.md``.

"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...clock import from_micros, to_micros
from ...errors import (
    ConflictError,
    NotFoundError,
    StoreUnavailableError,
)
from ...result import MemoryResult, ok
from ...threads import tree
from ...threads.damage import broken_branch
from ...threads.records import FORKS_KEY, MEMORY_USERS_KEY, USER_ID_KEY, MemoryEntry, NewMemoryEntry, Thread
from ...threads.tree import type_allowed

if TYPE_CHECKING:
    from pymongo.asynchronous.client_session import AsyncClientSession
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.mongo_client import AsyncMongoClient

T = TypeVar("T")
Doc = dict[str, Any]

DEFAULT_URI = "mongodb://localhost:27017"
DEFAULT_DATABASE = "cogitator"
DEFAULT_PREFIX = "memory_"
#: The fields of an entry that redaction rewrites (everything else is its place in the tree).
CONTENT_FIELDS = ("message", "event", "metadata", "tool_calls", "tool_results")
#: The field of a fork's copies written before the fork thread (see :func:`pending_mark`).
PENDING_FORK = "pending_fork"
_THREAD_INTERNAL = ("next_seq", "created_us", "updated_us")
_FIRST_WINDOW = 64
_MAX_WINDOW = 4096


# --- documents (no I/O) -------------------------------------------------------------------


def thread_document(thread: Thread, next_seq: int) -> Doc:
    """The stored form of a thread; ``active_leaf_id`` is left out when there is none."""
    doc: Doc = {
        "_id": thread.id,
        "agent_id": thread.agent_id,
        "metadata": thread.metadata,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "created_us": to_micros(thread.created_at),
        "updated_us": to_micros(thread.updated_at),
        "next_seq": next_seq,
    }
    if thread.active_leaf_id is not None:
        doc["active_leaf_id"] = thread.active_leaf_id
    return doc


def thread_from_document(doc: Doc) -> Thread:
    """The :class:`Thread` a stored document holds (times from the microsecond fields)."""
    return Thread(
        id=doc["_id"],
        agent_id=doc["agent_id"],
        metadata=doc.get("metadata") or {},
        created_at=from_micros(doc["created_us"]),
        updated_at=from_micros(doc["updated_us"]),
        active_leaf_id=doc.get("active_leaf_id"),
    )


def entry_document(entry: MemoryEntry) -> Doc:
    """The stored form of an entry: its JSON fields (``None`` left out) plus the times."""
    body = entry.model_dump(mode="json", exclude_none=True)
    doc: Doc = {"_id": body.pop("id"), **body}
    doc["created_at"] = entry.created_at
    doc["created_us"] = to_micros(entry.created_at)
    return doc


def entry_from_document(doc: Doc) -> MemoryEntry:
    """The :class:`MemoryEntry` a stored document holds."""
    body = {k: v for k, v in doc.items() if k not in ("_id", "created_us", PENDING_FORK)}
    body["id"] = doc["_id"]
    body["created_at"] = from_micros(doc["created_us"])
    return MemoryEntry.model_validate(body)


def entries_filter(
    thread_id: str, *, types: frozenset[str] | None, before: datetime | None, after: datetime | None
) -> Doc:
    """The query of ``get_entries``: the thread's entries of ``types`` created in (after, before)."""
    query: Doc = {"thread_id": thread_id}
    if types is not None:
        query["type"] = {"$in": sorted(types)}
    created: Doc = {}
    if after is not None:
        created["$gt"] = to_micros(after)
    if before is not None:
        created["$lt"] = to_micros(before)
    if created:
        query["created_us"] = created
    return query


def scan_filter(
    agent_id: str | None, updated_after: datetime | None, updated_before: datetime | None, after: tuple[int, str] | None
) -> Doc:
    """The query of ``list_threads``: agent, update-time bounds and the keyset position."""
    clauses: list[Doc] = []
    if agent_id is not None:
        clauses.append({"agent_id": agent_id})
    if updated_after is not None:
        clauses.append({"updated_us": {"$gt": to_micros(updated_after)}})
    if updated_before is not None:
        clauses.append({"updated_us": {"$lt": to_micros(updated_before)}})
    if after is not None:
        stamp, last_id = after
        clauses.append({"$or": [{"updated_us": {"$lt": stamp}}, {"updated_us": stamp, "_id": {"$lt": last_id}}]})
    if not clauses:
        return {}
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def user_filter(user_id: str) -> Doc:
    """The query of ``threads_of_user``: threads whose metadata ``user_id`` is the user or whose
    ``memory_user_ids`` holds them, each branch served by its index (``by_user``, ``with_users``).

    MongoDB also matches an array ``user_id`` holding the user and a ``memory_user_ids`` that is
    the user's id itself; :func:`names_user` drops those."""
    return {"$or": [{f"metadata.{USER_ID_KEY}": user_id}, {f"metadata.{MEMORY_USERS_KEY}": user_id}]}


def names_user(thread: Thread, user_id: str) -> bool:
    """Whether the thread's metadata ``user_id`` is the user, or its ``memory_user_ids`` (a list)
    lists them: the contract of ``threads_of_user`` on every store."""
    metadata = thread.metadata or {}
    users = metadata.get(MEMORY_USERS_KEY)
    return metadata.get(USER_ID_KEY) == user_id or (isinstance(users, list) and user_id in users)


def leaf_update(leaf_id: str | None) -> Doc:
    """The update that makes ``leaf_id`` the active leaf (unset for ``None``)."""
    if leaf_id is None:
        return {"$unset": {"active_leaf_id": ""}}
    return {"$set": {"active_leaf_id": leaf_id}}


def parent_update(parent_id: str | None) -> Doc:
    """The update that puts an entry under ``parent_id`` (a root for ``None``)."""
    if parent_id is None:
        return {"$unset": {"parent_id": ""}}
    return {"$set": {"parent_id": parent_id}}


def merge_metadata_pipeline(metadata: Doc, replace: bool, now: datetime) -> list[Doc]:
    """An update pipeline that merges (or replaces) a thread's metadata and stamps the time.

    ``$literal`` keeps keys with dots or dollars, and string values starting with ``$``, as data.
    """
    literal = {"$literal": metadata}
    value: Any = literal if replace else {"$mergeObjects": [{"$ifNull": ["$metadata", {}]}, literal]}
    return [{"$set": {"metadata": value, "updated_at": now, "updated_us": to_micros(now)}}]


def pending_mark(origin_id: str, fork: Thread) -> Doc:
    """What a fork's copies carry (in :data:`PENDING_FORK`) until the fork thread is written: the
    origin and the users the fork is for (its ``user_id`` and ``memory_user_ids``), whose
    erasure deletes the copies of a fork that never got its thread."""
    metadata = fork.metadata or {}
    users: list[str] = []
    owner, listed = metadata.get(USER_ID_KEY), metadata.get(MEMORY_USERS_KEY)
    for user in [owner, *(listed if isinstance(listed, list) else [])]:
        if isinstance(user, str) and user not in users:
            users.append(user)
    return {"origin": origin_id, "users": users}


def list_fork_pipeline(fork_id: str, now: datetime) -> list[Doc]:
    """An update pipeline that appends ``fork_id`` to ``metadata.memory_forks`` (made a list)."""
    current = f"$metadata.{FORKS_KEY}"
    forks = {"$concatArrays": [{"$cond": [{"$isArray": current}, current, []]}, {"$literal": [fork_id]}]}
    merged = {"$mergeObjects": [{"$ifNull": ["$metadata", {}]}, {FORKS_KEY: forks}]}
    return [{"$set": {"metadata": merged, "updated_at": now, "updated_us": to_micros(now)}}]


class MongoDBThreads:
    """The thread half of :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`: it
    writes through the adapter's collections and ``_atomic`` (a transaction when the server has
    them)."""

    #: The entries collection the index of pending fork copies was made on (once per connection).
    _pending_indexed: object | None = None

    if TYPE_CHECKING:  # provided by the adapter
        _use_transactions: bool
        socket_timeout: float

        @property
        def client(self) -> AsyncMongoClient[Doc]: ...
        @property
        def uses_transactions(self) -> bool: ...
        @property
        def threads_collection(self) -> AsyncCollection[Doc]: ...
        @property
        def entries_collection(self) -> AsyncCollection[Doc]: ...
        async def _atomic(self, work: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T: ...
        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

    # ----- threads -------------------------------------------------------------------------

    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        from pymongo import ReturnDocument
        from pymongo.errors import DuplicateKeyError

        fresh = Thread(id=thread_id, agent_id=agent_id, metadata=metadata, created_at=now, updated_at=now)
        await self._refuse_leftovers(thread_id, None)
        while True:
            try:
                await self.threads_collection.insert_one(thread_document(fresh, 1))
                return fresh
            except DuplicateKeyError:
                pass
            doc = await self.threads_collection.find_one_and_update(
                {"_id": thread_id},
                merge_metadata_pipeline(metadata, False, now),
                return_document=ReturnDocument.AFTER,
            )
            if doc is not None:
                return thread_from_document(doc)

    async def _get_thread(self, thread_id: str) -> Thread | None:
        doc = await self.threads_collection.find_one({"_id": thread_id})
        return None if doc is None else thread_from_document(doc)

    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        from pymongo import ReturnDocument

        doc = await self.threads_collection.find_one_and_update(
            {"_id": thread_id}, merge_metadata_pipeline(metadata, replace, now), return_document=ReturnDocument.AFTER
        )
        return None if doc is None else thread_from_document(doc)

    async def _delete_thread(self, thread_id: str) -> bool:
        threads, entries = self.threads_collection, self.entries_collection

        async def work(session: AsyncClientSession | None) -> bool:
            if session is None:
                # A client that dies between two of these writes leaves the thread (a retry
                # finishes), never entries without their thread: the leaf goes first (no leaf
                # names a deleted entry), then the entries, then the thread.
                await threads.update_one({"_id": thread_id}, leaf_update(None))
            await entries.delete_many({"thread_id": thread_id}, session=session)
            gone = await threads.delete_one({"_id": thread_id}, session=session)
            if session is None:
                await entries.delete_many({"thread_id": thread_id})  # what a racing add_entry wrote meanwhile
            return gone.deleted_count > 0

        return await self._atomic(work)

    async def _refuse_leftovers(self, thread_id: str, session: AsyncClientSession | None) -> None:
        """Fail when entries carry ``thread_id`` though no such thread exists: what a client that
        died mid-write left (a fork's copies, a deleted thread's entries). A new thread of that id
        would take them as its own; ``delete_thread`` removes them."""
        if await self.entries_collection.find_one({"thread_id": thread_id}, {"_id": 1}, session=session) is None:
            return
        if await self.threads_collection.find_one({"_id": thread_id}, {"_id": 1}, session=session) is not None:
            return
        raise ConflictError(
            f"thread id {thread_id} is held by entries that an interrupted write left (a client stopped "
            f"between two writes); delete_thread({thread_id!r}) removes them"
        )

    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        cursor = (
            self.threads_collection.find(scan_filter(agent_id, updated_after, updated_before, after))
            .sort([("updated_us", -1), ("_id", -1)])
            .limit(limit)
        )
        return [thread_from_document(doc) async for doc in cursor]

    async def threads_of_user(self, user_id: str) -> MemoryResult[list[Thread]]:
        """Every thread whose metadata ``user_id`` is the user or whose ``memory_user_ids`` lists
        them (what a user's erasure deletes), found through the indexes ``by_user`` and
        ``with_users`` (made at ``connect()``) instead of reading every thread."""
        try:
            self._require_connected()
            user = tree.check_id("user_id", user_id)
            await self._drop_dead_forks(user)
            cursor = self.threads_collection.find(user_filter(user)).sort("_id", 1)
            found = [thread_from_document(doc) async for doc in cursor]
            return ok([thread for thread in found if names_user(thread, user)])
        except Exception as exc:
            return self._fail("threads_of_user", exc)

    # ----- entries -------------------------------------------------------------------------

    async def _entry_of(self, thread_id: str, entry_id: str, session: AsyncClientSession | None) -> Doc:
        """The entry ``entry_id`` of the thread: ``NotFoundError`` when missing, ``ConflictError``
        when it belongs to another thread."""
        doc = await self.entries_collection.find_one({"_id": entry_id}, {"thread_id": 1}, session=session)
        if doc is None:
            raise NotFoundError(f"parent entry not found: {entry_id}")
        if doc["thread_id"] != thread_id:
            raise ConflictError(f"parent {entry_id} is an entry of another thread, not of {thread_id}")
        return doc

    async def _reserve_seq(self, thread_id: str, update: Doc, session: AsyncClientSession | None) -> Doc:
        """Take the thread's next seq (and apply ``update``); the thread as it was before."""
        from pymongo import ReturnDocument

        before = await self.threads_collection.find_one_and_update(
            {"_id": thread_id},
            {"$inc": {"next_seq": 1}, **update},
            projection={"next_seq": 1, "active_leaf_id": 1},
            return_document=ReturnDocument.BEFORE,
            session=session,
        )
        if before is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        return before

    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        token_count = tree.counted(entry, token_count)

        def build(seq: int, parent: str | None) -> MemoryEntry:
            return MemoryEntry.model_construct(
                id=entry_id,
                thread_id=entry.thread_id,
                parent_id=parent,
                seq=seq,
                type=entry.type,
                message=entry.message,
                token_count=token_count,
                created_at=now,
                metadata=entry.metadata,
                event=entry.event,
                tool_calls=entry.tool_calls,
                tool_results=entry.tool_results,
            )

        if not self._use_transactions:
            return await self._add_entry_ordered(entry, entry_id, build)

        async def work(session: AsyncClientSession | None) -> MemoryEntry:
            if entry.parent_id is not None:
                await self._entry_of(entry.thread_id, entry.parent_id, session)
            before = await self._reserve_seq(entry.thread_id, leaf_update(entry_id) if entry.activate else {}, session)
            parent = entry.parent_id if entry.parent_id is not None or entry.root else before.get("active_leaf_id")
            created = build(before["next_seq"], parent)
            await self.entries_collection.insert_one(entry_document(created), session=session)
            return created

        return entry_from_document(entry_document(await self._atomic(work)))

    async def _add_entry_ordered(
        self, entry: NewMemoryEntry, entry_id: str, build: Callable[[int, str | None], MemoryEntry]
    ) -> MemoryEntry:
        """``add_entry`` without transactions: insert first, then move the leaf by compare-and-set."""
        threads, entries = self.threads_collection, self.entries_collection
        tid = entry.thread_id
        deadline = asyncio.get_running_loop().time() + self.socket_timeout
        while True:
            if entry.parent_id is not None:
                await self._entry_of(tid, entry.parent_id, None)
            before = await self._reserve_seq(tid, {}, None)
            leaf = before.get("active_leaf_id")
            parent = entry.parent_id if entry.parent_id is not None or entry.root else leaf
            created = build(before["next_seq"], parent)
            await entries.insert_one(entry_document(created))
            if entry.parent_id is None and not entry.root and entry.activate:
                # Move the leaf only if no one moved it since; else go after the new leaf.
                while not (
                    await threads.update_one({"_id": tid, "active_leaf_id": leaf}, leaf_update(entry_id))
                ).matched_count:
                    if asyncio.get_running_loop().time() > deadline:
                        await entries.delete_one({"_id": entry_id})
                        raise StoreUnavailableError(f"mongodb add_entry: thread {tid} stayed too busy to append to")
                    try:
                        again = await self._reserve_seq(tid, {}, None)
                    except NotFoundError:
                        await entries.delete_one({"_id": entry_id})
                        raise
                    leaf = again.get("active_leaf_id")
                    created = build(again["next_seq"], leaf)
                    moved: Doc = {"$set": {"seq": again["next_seq"]}}
                    if leaf is None:
                        moved["$unset"] = {"parent_id": ""}
                    else:
                        moved["$set"]["parent_id"] = leaf
                    if not (await entries.update_one({"_id": entry_id}, moved)).matched_count:
                        await entries.insert_one(entry_document(created))  # a clear_thread took it: put it back
                return entry_from_document(entry_document(created))
            # The parent or thread may have gone between the check and the insert: undo then.
            thread_gone = await threads.find_one({"_id": tid}, {"_id": 1}) is None
            parent_gone = parent is not None and await entries.find_one({"_id": parent}, {"_id": 1}) is None
            if thread_gone or parent_gone:
                await entries.delete_one({"_id": entry_id})
                if thread_gone:
                    raise NotFoundError(f"thread not found: {tid}")
                if entry.parent_id is not None:
                    raise NotFoundError(f"parent entry not found: {parent}")
                continue  # the leaf we were to write after was deleted: start again
            if entry.activate and not (await threads.update_one({"_id": tid}, leaf_update(entry_id))).matched_count:
                await entries.delete_one({"_id": entry_id})
                raise NotFoundError(f"thread not found: {tid}")
            return entry_from_document(entry_document(created))

    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        query = entries_filter(thread_id, types=types, before=before, after=after)
        cursor = self.entries_collection.find(query).sort("seq", -1 if limit else 1)
        if limit:
            cursor = cursor.limit(limit)
        # Read beside the entries: entries of a thread that does not exist (left by a client that
        # died mid-write) are not returned.
        docs, thread = await asyncio.gather(
            cursor.to_list(), self.threads_collection.find_one({"_id": thread_id}, {"_id": 1})
        )
        if thread is None:
            return None
        if limit:
            docs.reverse()
        return [entry_from_document(doc) for doc in docs]

    async def _get_entry(self, entry_id: str) -> MemoryEntry | None:
        doc = await self.entries_collection.find_one({"_id": entry_id})
        if doc is None:
            return None
        # An entry whose thread does not exist was left by a client that died mid-write.
        if await self.threads_collection.find_one({"_id": doc["thread_id"]}, {"_id": 1}) is None:
            return None
        return entry_from_document(doc)

    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        threads, entries = self.threads_collection, self.entries_collection

        async def work(session: AsyncClientSession | None) -> MemoryEntry | None:
            doc = await entries.find_one({"_id": entry_id}, session=session)
            if doc is None:
                return None
            tid, parent = doc["thread_id"], doc.get("parent_id")
            passes = 1 if session is not None else 2  # a second pass catches writes that raced the first
            for step in range(passes):
                await entries.update_many({"parent_id": entry_id}, parent_update(parent), session=session)
                await threads.update_one({"_id": tid, "active_leaf_id": entry_id}, leaf_update(parent), session=session)
                if step == 0 and not (await entries.delete_one({"_id": entry_id}, session=session)).deleted_count:
                    return None
            return entry_from_document(doc)

        return await self._atomic(work)

    async def _clear_thread(self, thread_id: str) -> bool:
        async def work(session: AsyncClientSession | None) -> bool:
            found = await self.threads_collection.update_one({"_id": thread_id}, leaf_update(None), session=session)
            if not found.matched_count:
                return False
            await self.entries_collection.delete_many({"thread_id": thread_id}, session=session)
            return True

        return await self._atomic(work)

    # ----- trees ---------------------------------------------------------------------------

    async def _walk(
        self,
        thread_id: str,
        leaf: Doc,
        *,
        lowest_seq: int = 0,
        projection: Doc | None = None,
        keep: Callable[[Doc], bool] = lambda doc: True,
        limit: int = 0,
        session: AsyncClientSession | None = None,
    ) -> list[Doc]:
        """The documents on the branch from ``leaf`` up to the root (newest first), those ``keep``
        accepts, at most ``limit`` (0: all), stopping below ``lowest_seq``.

        A parent always has a lower seq than its children, so the branch is read in seq ranges
        of the (thread, seq) index going down from the leaf, each twice the last; entries of
        other branches in a range are skipped. So the walk ends on any data; a parent of the
        thread that is not older than its child (parent links that loop) fails it.
        """
        picked: list[Doc] = []
        if keep(leaf):
            picked.append(leaf)
        target = leaf.get("parent_id")
        named_at = leaf["seq"]  # the seq of the entry that names `target` as its parent
        walked = 1
        upper = leaf["seq"] - 1
        window = max(_FIRST_WINDOW, limit + limit // 4) if limit else _MAX_WINDOW // 4
        floor = max(lowest_seq, 0)
        while target is not None and upper >= floor and not (limit and len(picked) >= limit):
            low = max(floor, upper - window + 1)
            query = {"thread_id": thread_id, "seq": {"$gte": low, "$lte": upper}}
            found = self.entries_collection.find(query, projection, session=session)
            for doc in await found.sort("seq", -1).to_list():
                if doc["_id"] != target:
                    continue
                walked += 1
                if keep(doc):
                    picked.append(doc)
                    if limit and len(picked) >= limit:
                        break
                target, named_at = doc.get("parent_id"), doc["seq"]
                if target is None:
                    break
            upper = low - 1
            window = min(window * 2, _MAX_WINDOW)
        if target is not None and floor == 0 and not (limit and len(picked) >= limit):
            # Not found below its child: deleted meanwhile (the branch ends there), or not older.
            stray = await self.entries_collection.find_one({"_id": target}, {"thread_id": 1, "seq": 1}, session=session)
            if stray is not None and stray["thread_id"] == thread_id and stray["seq"] >= named_at:
                raise broken_branch("mongodb", thread_id, leaf["_id"], walked)
        return picked

    async def _get_path(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        if leaf_id is None:
            thread = await self.threads_collection.find_one({"_id": thread_id}, {"active_leaf_id": 1})
            if thread is None:
                return None
            leaf_id = thread.get("active_leaf_id")
            if leaf_id is None:
                return []
            leaf = await self.entries_collection.find_one({"_id": leaf_id})
        else:
            leaf, thread = await asyncio.gather(
                self.entries_collection.find_one({"_id": leaf_id}),
                self.threads_collection.find_one({"_id": thread_id}, {"_id": 1}),
            )
            if thread is None:
                return None
        if leaf is None or leaf["thread_id"] != thread_id:
            if await self.threads_collection.find_one({"_id": thread_id}, {"_id": 1}) is None:
                return None
            raise NotFoundError(f"entry {leaf_id} is not an entry of thread {thread_id}")
        high = to_micros(before) if before is not None else None

        def keep(doc: Doc) -> bool:
            return type_allowed(doc["type"], types) and (high is None or doc["created_us"] < high)

        docs = await self._walk(thread_id, leaf, keep=keep, limit=limit)
        docs.reverse()
        return [entry_from_document(doc) for doc in docs]

    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        from pymongo import ReturnDocument

        threads, entries = self.threads_collection, self.entries_collection

        async def work(session: AsyncClientSession | None) -> Thread:
            while True:
                thread = await threads.find_one({"_id": thread_id}, {"active_leaf_id": 1}, session=session)
                if thread is None:
                    raise NotFoundError(f"thread not found: {thread_id}")
                target = await entries.find_one(
                    {"_id": entry_id}, {"thread_id": 1, "seq": 1, "parent_id": 1}, session=session
                )
                if target is None or target["thread_id"] != thread_id:
                    raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
                current = thread.get("active_leaf_id")
                if on_active_path and current != entry_id:
                    leaf = (
                        None
                        if current is None
                        else await entries.find_one({"_id": current}, {"seq": 1, "parent_id": 1}, session=session)
                    )
                    skeleton = {"_id": 1, "parent_id": 1, "seq": 1}
                    found = leaf is not None and any(
                        doc["_id"] == entry_id
                        for doc in await self._walk(
                            thread_id, leaf, lowest_seq=target["seq"], projection=skeleton, session=session
                        )
                    )
                    if not found:
                        raise ConflictError(
                            f"entry {entry_id} is not on the active branch of {thread_id}: use checkout()"
                        )
                moved = await threads.find_one_and_update(
                    {"_id": thread_id, "active_leaf_id": current},
                    leaf_update(entry_id),
                    return_document=ReturnDocument.AFTER,
                    session=session,
                )
                if moved is None:
                    continue  # the leaf moved under us: look again
                if session is None and await entries.find_one({"_id": entry_id}, {"_id": 1}) is None:
                    # Deleted while we moved the leaf to it: put the leaf where the delete would have.
                    await threads.update_one(
                        {"_id": thread_id, "active_leaf_id": entry_id}, leaf_update(target.get("parent_id"))
                    )
                    raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
                return thread_from_document(moved)

        return await self._atomic(work)

    async def _replace_entry(self, entry: MemoryEntry) -> None:
        doc = entry_document(entry)
        stages: list[Doc] = [{"$set": {k: {"$literal": doc[k]} for k in CONTENT_FIELDS if k in doc}}]
        absent = [k for k in CONTENT_FIELDS if k not in doc]
        if absent:
            stages.append({"$unset": absent})
        result = await self.entries_collection.update_one({"_id": entry.id}, stages)
        if not result.matched_count:
            raise NotFoundError(f"entry not found: {entry.id}")

    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        from pymongo.errors import DuplicateKeyError

        threads, stored = self.threads_collection, self.entries_collection

        async def work(session: AsyncClientSession | None) -> Thread:
            if await threads.find_one({"_id": origin_id}, {"_id": 1}, session=session) is None:
                raise NotFoundError(f"thread not found: {origin_id}")
            if await threads.find_one({"_id": fork.id}, {"_id": 1}, session=session) is not None:
                raise ConflictError(f"thread {fork.id} already exists")
            await self._refuse_leftovers(fork.id, session)
            # Entries first: the fork's leaf never names an entry not yet stored. Without a
            # transaction they are marked pending, with the users the fork is for, until the
            # fork thread exists: the copies of a client that dies before are found and deleted
            # by the users' erasure (threads_of_user) and read by no one meanwhile.
            if entries:
                docs = [entry_document(e) for e in entries]
                if session is None:
                    pending = pending_mark(origin_id, fork)
                    for doc in docs:
                        doc[PENDING_FORK] = pending
                await stored.insert_many(docs, ordered=True, session=session)
            try:
                await threads.insert_one(thread_document(fork, len(entries) + 1), session=session)
            except DuplicateKeyError:
                if session is None:
                    await stored.delete_many({"_id": {"$in": [e.id for e in entries]}})
                raise ConflictError(f"thread {fork.id} already exists") from None
            # An origin deleted meanwhile (only possible without transactions) has no list to keep.
            await threads.update_one({"_id": origin_id}, list_fork_pipeline(fork.id, now), session=session)
            if session is None and entries:
                done = await stored.update_many(
                    {"thread_id": fork.id, PENDING_FORK: {"$exists": True}}, {"$unset": {PENDING_FORK: ""}}
                )
                if done.modified_count < len(entries):
                    # An erasure of the fork's user took the copies before the thread was there.
                    await self._delete_thread(fork.id)
                    raise ConflictError(f"fork {fork.id} was erased while it was written (delete_user)")
            return fork

        return await self._atomic(work)

    async def _drop_dead_forks(self, user_id: str) -> None:
        """Delete the pending copies of forks for ``user_id`` whose fork thread does not exist:
        what a client that died inside ``fork_thread`` left (never read, as their thread does
        not exist). A fork still being written loses its copies and undoes itself."""
        stored = self.entries_collection
        if self._pending_indexed is not stored:
            await stored.create_index([(f"{PENDING_FORK}.users", 1)], name="pending_forks", sparse=True)
            self._pending_indexed = stored
        forks = await stored.distinct("thread_id", {f"{PENDING_FORK}.users": user_id})
        for fork_id in sorted(forks):
            if await self.threads_collection.find_one({"_id": fork_id}, {"_id": 1}) is None:
                await stored.delete_many({"thread_id": fork_id, PENDING_FORK: {"$exists": True}})


__all__ = [
    "CONTENT_FIELDS",
    "MongoDBThreads",
    "entries_filter",
    "entry_document",
    "entry_from_document",
    "merge_metadata_pipeline",
    "scan_filter",
    "thread_document",
    "thread_from_document",
]
