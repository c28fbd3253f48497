"""Memory files in MongoDB: the primitives of :class:`~cogitator_memory.files.base.MemoryFileStoreMixin`
as pymongo calls, mixed into :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`.

A version is a document of ``<prefix>file_versions`` (``_id`` is the version id): the fields
queries filter by are fields of their own (the scope key and the agent, user, project and thread
it is made of, path, sequence, ``head``, the entry of its place, the path it was renamed from),
the text is ``content`` and the rest one JSON string ``body``. The collection and its indexes are
made on the first file call after ``connect()``.

- A unique index on ``(scope_key, path, sequence)`` refuses a second version at one sequence,
  with or without transactions: the insert fails with a duplicate key.
- ``head`` marks the newest version of each scope and path; heads are read through the index
  ``(scope_key, head, path)``, never from history. A batch inserts its versions (each a head
  unless a higher sequence is there) and then clears the flag of the heads they replace, so a
  reader never finds a path without a head; one that reads between the two steps, or after a
  client died between them, finds two and keeps the higher sequence.
- A batch of several versions runs in a multi-document transaction when the adapter uses them
  (again after a write conflict: the unique index decides who keeps a sequence); one version is
  one insert, atomic on its own. Without transactions the versions are inserted in order, and a
  batch that fails part way deletes the ones it inserted before raising: a failed batch leaves
  nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...clock import to_micros
from ...errors import ConflictError, NotConnectedError
from ...files.base import MemoryFileStoreMixin
from ...files.errors import MemoryFileConflictError
from ...files.paths import prefix_range
from ...files.records import (
    FileHeadQuery,
    FileRedaction,
    FileVersionQuery,
    MemoryFileVersion,
    redacted_version,
)
from ...items.records import TRUSTED
from .conflicts import is_write_conflict, retry_pause

if TYPE_CHECKING:
    from pymongo.asynchronous.client_session import AsyncClientSession
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.mongo_client import AsyncMongoClient

T = TypeVar("T")
Doc = dict[str, Any]

_READ: Doc = {"_id": 0, "body": 1, "content": 1}
#: The indexes of ``<prefix>file_versions``: name, keys and whether the index is unique.
FILE_INDEXES: tuple[tuple[str, list[tuple[str, int]], bool], ...] = (
    ("scope_path_sequence", [("scope_key", 1), ("path", 1), ("sequence", 1)], True),
    ("heads", [("scope_key", 1), ("head", 1), ("path", 1)], False),
    ("agent_limits", [("agent_id", 1), ("user_id", 1), ("project_id", 1), ("thread_id", 1)], False),
    ("entries", [("entry_id", 1)], False),
    ("origins", [("scope_key", 1), ("renamed_from", 1)], False),
)


class _Unsettled(Exception):
    """A transaction met what an aborted one left behind: worth trying again."""


def _body(version: MemoryFileVersion) -> str:
    return version.model_dump_json(exclude_none=True, exclude={"content"})


def version_document(version: MemoryFileVersion, head: bool) -> Doc:
    """The stored form of a version: its indexed fields, its text and its JSON body."""
    scope, place = version.scope, version.place
    return {
        "_id": version.id,
        "agent_id": scope.agent_id,
        "user_id": scope.user_id,
        "project_id": scope.project_id,
        "thread_id": scope.thread_id,
        "scope_key": version.scope_key,
        "path": version.path,
        "sequence": version.sequence,
        "head": head,
        "entry_id": place.entry_id if place is not None else None,
        "renamed_from": version.renamed_from,
        "created_us": to_micros(version.created_at),
        "content": version.content,
        "body": _body(version),
    }


def version_from_document(doc: Doc) -> MemoryFileVersion:
    """The :class:`MemoryFileVersion` a stored document holds (checked when it was written)."""
    version = MemoryFileVersion.model_validate_json(doc["body"], context=TRUSTED)
    version.content = doc.get("content")
    return version


def _paths_filter(paths: frozenset[str] | None, prefix: str | None) -> Doc | None:
    if paths is not None:
        chosen = sorted(paths)
        return {"path": chosen[0] if len(chosen) == 1 else {"$in": chosen}}
    if prefix is not None:
        low, high = prefix_range(prefix)
        return {"$or": [{"path": prefix}, {"path": {"$gte": low, "$lt": high}}]}
    return None


def _one_or_in(values: list[str]) -> Any:
    return values[0] if len(values) == 1 else {"$in": values}


def heads_filter(query: FileHeadQuery) -> Doc:
    """The MongoDB filter of the heads a query asks for (read through the ``heads`` index)."""
    clauses: list[Doc] = [{"scope_key": _one_or_in(sorted(query.scope_keys)), "head": True}]
    paths = _paths_filter(query.paths, query.prefix)
    if paths is not None:
        clauses.append(paths)
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def versions_filter(query: FileVersionQuery) -> Doc:
    """The MongoDB filter of a checked version query."""
    clauses: list[Doc] = []
    if query.scope_keys is not None:
        clauses.append({"scope_key": _one_or_in(sorted(query.scope_keys))})
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
    paths = _paths_filter(query.paths, query.prefix)
    if paths is not None:
        clauses.append(paths)
    for field, values in (("entry_id", query.entry_ids), ("renamed_from", query.renamed_from), ("_id", query.ids)):
        if values is not None:
            clauses.append({field: _one_or_in(sorted(values))})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _refusal(exc: Exception, docs: list[Doc]) -> tuple[int, Exception | None]:
    """How many documents an ordered ``insert_many`` stored before ``exc``, and the refusal it
    stands for (``None`` when it failed for another reason)."""
    details = getattr(exc, "details", None) or {}
    errors = details.get("writeErrors") or []
    inserted = int(details.get("nInserted", 0))
    if not errors or errors[0].get("code") not in (11000, 11001):
        return inserted, None
    index = errors[0].get("index")
    doc = docs[index] if isinstance(index, int) and 0 <= index < len(docs) else None
    pattern = errors[0].get("keyPattern") or {}
    text = str(errors[0].get("errmsg", ""))
    if doc is not None and ("sequence" in pattern or "scope_path_sequence" in text):
        return inserted, MemoryFileConflictError(
            f"MEMORY_FILE_CONFLICT: {doc['path']} already has version {doc['sequence']} in its scope"
        )
    return inserted, ConflictError(f"memory file version id is taken: {doc['_id'] if doc else ''}")


class MongoDBFiles(MemoryFileStoreMixin):
    """The file half of :class:`~cogitator_memory.engines.mongodb.adapter.MongoDBAdapter`:
    versions in the collection ``<prefix>file_versions`` (see the module docstring)."""

    _files_state: tuple[Any, AsyncCollection[Doc]] | None = None
    _files_lock: asyncio.Lock | None = None

    if TYPE_CHECKING:  # provided by the adapter
        collection_prefix: str
        database: str
        _client: AsyncMongoClient[Doc] | None
        _use_transactions: bool

    async def _in_transaction(self, work: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T:
        """Run ``work`` in one transaction when the adapter uses them (else as it is), again after
        a write conflict that left the batch's sequences free (a conflict over other documents)."""
        if not self._use_transactions or self._client is None:
            return await work(None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10.0
        attempt = 0
        while True:
            async with self._client.start_session() as session:
                try:
                    await session.start_transaction()
                    result = await work(session)
                    await session.commit_transaction()
                    return result
                except BaseException as exc:
                    if session.in_transaction:
                        with contextlib.suppress(Exception):  # aborting a dead transaction; `exc` is the cause
                            await session.abort_transaction()
                    if not (is_write_conflict(exc) or isinstance(exc, _Unsettled)):
                        raise
                    if loop.time() > deadline:
                        raise MemoryFileConflictError(
                            "MEMORY_FILE_CONFLICT: other writers kept the transaction from committing"
                        ) from None
            attempt += 1
            await asyncio.sleep(retry_pause(attempt))

    async def _files(self) -> AsyncCollection[Doc]:
        """The collection of file versions, its indexes made once per connection."""
        client = self._client
        if client is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        state = self._files_state
        if state is not None and state[0] is client:
            return state[1]
        if self._files_lock is None:
            self._files_lock = asyncio.Lock()
        async with self._files_lock:
            state = self._files_state
            if state is not None and state[0] is client:
                return state[1]
            collection = client[self.database][f"{self.collection_prefix}file_versions"]
            for name, keys, unique in FILE_INDEXES:
                await collection.create_index(keys, name=name, unique=unique)
            self._files_state = (client, collection)
            return collection

    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        from pymongo.errors import BulkWriteError

        collection = await self._files()

        async def work(session: AsyncClientSession | None) -> None:
            docs: list[Doc] = []
            for version in versions:
                higher = await collection.find_one(
                    {"scope_key": version.scope_key, "path": version.path, "sequence": {"$gt": version.sequence}},
                    {"_id": 1},
                    session=session,
                )
                docs.append(version_document(version, head=higher is None))
            try:
                await collection.insert_many(docs, ordered=True, session=session)
            except BulkWriteError as exc:
                inserted, refusal = _refusal(exc, docs)
                if session is None and inserted:  # without a transaction: take back what went in
                    await collection.delete_many({"_id": {"$in": [d["_id"] for d in docs[:inserted]]}})
                if (
                    session is not None
                    and isinstance(refusal, ConflictError)
                    and not isinstance(refusal, MemoryFileConflictError)
                ):
                    # An id of this batch taken inside a transaction that no committed document
                    # holds: a write of an aborted attempt not yet gone. Try the transaction again.
                    ids = [d["_id"] for d in docs]
                    if await collection.count_documents({"_id": {"$in": ids}}) == 0:
                        raise _Unsettled from None
                if refusal is not None:
                    raise refusal from None
                raise
            for doc in docs:
                if doc["head"]:
                    await collection.update_many(
                        {
                            "scope_key": doc["scope_key"],
                            "head": True,
                            "path": doc["path"],
                            "sequence": {"$lt": doc["sequence"]},
                        },
                        {"$set": {"head": False}},
                        session=session,
                    )

        if len(versions) == 1:  # one insert is atomic on its own
            await work(None)
        else:
            await self._in_transaction(work)

    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        collection = await self._files()
        projection: Doc = {"_id": 0, "body": 1, "scope_key": 1, "path": 1, "sequence": 1}
        if query.content:
            projection["content"] = 1
        newest: dict[tuple[str, str], Doc] = {}
        async for doc in collection.find(heads_filter(query), projection).hint("heads"):
            where = (doc["scope_key"], doc["path"])
            found = newest.get(where)
            if found is None or found["sequence"] < doc["sequence"]:  # two heads: a write in between
                newest[where] = doc
        return [version_from_document(doc) for doc in newest.values()]

    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        collection = await self._files()
        cursor = collection.find(versions_filter(query), _READ)
        return [version_from_document(doc) for doc in await cursor.to_list()]

    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        collection = await self._files()
        cursor = collection.find({"_id": {"$in": ids}, "content": {"$ne": None}}, _READ)
        done: list[MemoryFileVersion] = []
        for doc in await cursor.to_list():
            version = redacted_version(version_from_document(doc), redaction)
            result = await collection.update_one(
                {"_id": version.id, "content": {"$ne": None}},
                {"$set": {"content": version.content, "body": _body(version)}},
            )
            if result.matched_count:
                done.append(version)
        return done


__all__ = [
    "FILE_INDEXES",
    "MongoDBFiles",
    "heads_filter",
    "version_document",
    "version_from_document",
    "versions_filter",
]
