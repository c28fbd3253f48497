"""``import``: writing chat messages or an exported tree into a store, all or nothing.

Into a SQLite file the whole import is one SQLite transaction
(:meth:`~cogitator_memory.cli.store.CliStore.transaction`): a failure, a Ctrl-C or a killed
process leaves the file as it was, a thread the import created included. Into another store
(``--config``), which has no transaction across writes, a failure or a Ctrl-C takes back what
the import wrote: its entries are deleted newest first and the active leaf set back, or the
thread it created is deleted; only a killed process can leave a part there. The writes give the
event loop a turn after each entry, so Ctrl-C (which cancels the command's task) stops the
import at the next entry instead of after the last. Afterwards the thread is read back to check
that nothing is left; if something is, the command says so. The thread's turns are written into
the store's recall index with them (in the same transaction on a SQLite file), so ``search``
finds them without a ``reindex``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..clock import frozen_clock
from ..index.base import is_recall_index
from ..index.indexer import RecallIndexer
from ..threads import tree
from ..threads.base import BaseMemoryAdapter
from ..threads.records import USER_ID_KEY, NewMemoryEntry, Thread
from .formats import CliError, ExportedThread
from .progress import Progress
from .store import DEFAULT_AGENT, CliStore, need


@dataclass
class ImportResult:
    """What an import wrote: the thread, how many entries, whether the thread is new, whether
    the exported entry ids were kept."""

    thread: Thread
    count: int
    created: bool
    kept_ids: bool = True


@dataclass(frozen=True)
class _Before:
    """The target thread before the import (``None`` when the import creates it), and the
    ``seq`` of its newest entry (-1: none)."""

    thread: Thread | None
    last_seq: int = -1


async def _before(store: BaseMemoryAdapter, thread: Thread | None) -> _Before:
    if thread is None:
        return _Before(None)
    newest = need(await store.get_entries(thread_id=thread.id, limit=1, types="all"))
    return _Before(thread, newest[-1].seq if newest else -1)


@dataclass
class _Written:
    """What the import wrote so far: whether it created the thread, and its entries in order."""

    created: bool = False
    ids: list[str] = field(default_factory=list)


async def _target(store: BaseMemoryAdapter, thread_id: str, agent: str | None, user: str | None) -> Thread | None:
    """The existing thread ``thread_id`` (checked against ``agent`` and ``user`` when given), or ``None``."""
    thread = need(await store.get_thread(thread_id))
    if thread is not None and agent is not None and thread.agent_id != agent:
        raise CliError(f"thread {thread_id} belongs to agent {thread.agent_id}, not {agent}")
    if thread is not None and user is not None:
        owner = (thread.metadata or {}).get(USER_ID_KEY)
        if owner != user:
            whose = f"user {owner}'s" if owner is not None else "of no user"
            raise CliError(f"thread {thread_id} is {whose}, not user {user}'s: import into a new thread")
    return thread


def _with_user(metadata: dict[str, Any] | None, user: str | None) -> dict[str, Any] | None:
    """The metadata of a thread the import creates: ``user_id`` set to ``user`` when given."""
    if user is None:
        return metadata
    return {**(metadata or {}), USER_ID_KEY: user}


async def _take_back(store: BaseMemoryAdapter, before: _Before, thread_id: str, written: _Written) -> None:
    """Undo the import's writes on a store without transactions: the thread it created, or its
    entries (newest first, so each is a leaf when it goes) and the active leaf as it was. An
    entry whose write was done but whose answer was lost (a cancellation as it came back) is
    found by its ``seq``, newer than any the thread had. What cannot be undone is found by
    :func:`_check_taken_back`."""
    if written.created:
        await store.delete_thread(thread_id)
        return
    for entry_id in reversed(written.ids):
        await store.delete_entry(entry_id)
    newest = await store.get_entries(thread_id=thread_id, limit=len(written.ids) + 10, types="all")
    unknown = [e.id for e in (newest.data or []) if e.seq > before.last_seq]
    for entry_id in reversed(unknown):
        await store.delete_entry(entry_id)
    leaf = before.thread.active_leaf_id if before.thread is not None else None
    if leaf is not None:
        await store.checkout(thread_id, leaf)


async def _check_taken_back(
    store: BaseMemoryAdapter, before: _Before, thread_id: str, written: _Written, *, exact: bool
) -> None:
    """After a rollback (or a take-back): the thread is as it was, gone again when the import
    created it. ``exact``: every field, its update time included (a rolled-back transaction);
    else its active leaf and metadata (deleting entries moves the update time on)."""
    now = await store.get_thread(thread_id)
    problem: str | None = None
    if not now.success:
        problem = f"cannot read thread {thread_id} back ({now.error})"
    elif before.thread is None and now.data is not None:
        problem = f"thread {thread_id}, which the import created, is still there"
    elif before.thread is not None and now.data is None:
        problem = f"thread {thread_id} is gone"
    elif before.thread is not None and now.data is not None and _changed(before.thread, now.data, exact=exact):
        problem = f"thread {thread_id} changed"
    else:
        for entry_id in written.ids:
            found = await store.get_entry(entry_id)
            if not found.success or found.data is not None:
                problem = f"entry {entry_id} of the import is still in thread {thread_id}"
                break
        if problem is None and before.thread is not None:
            newest = await store.get_entries(thread_id=thread_id, limit=1, types="all")
            if newest.success and newest.data and newest.data[-1].seq > before.last_seq:
                problem = f"entry {newest.data[-1].id}, newer than the import's start, is in thread {thread_id}"
    if problem is not None:
        raise CliError(f"the import failed and was not fully taken back: {problem}")


async def _index(store: BaseMemoryAdapter, thread: Thread) -> None:
    """Write the imported thread's turns into the store's recall index with them (in the same
    transaction on a SQLite file): an exported thread keeps its old update time, so the
    indexer's catch-up, which looks at threads updated since its last pass, would not find it."""
    if is_recall_index(store):
        await RecallIndexer(store).resync_thread(thread, force=True)


def _changed(before: Thread, now: Thread, *, exact: bool) -> bool:
    if exact:
        return now != before
    return (now.active_leaf_id, now.metadata) != (before.active_leaf_id, before.metadata)


async def import_messages(
    store: BaseMemoryAdapter,
    entries: list[NewMemoryEntry],
    thread_id: str,
    agent: str | None,
    progress: Progress,
    *,
    user: str | None = None,
) -> ImportResult:
    """Append ``entries`` (made for ``thread_id``) after the active leaf of the thread, created
    for ``agent`` (default :data:`~cogitator_memory.cli.store.DEFAULT_AGENT`) and ``user`` (its
    ``metadata.user_id``, so the user's searches find it and forgetting the user takes it) when
    missing; one transaction. An existing thread must be ``user``'s."""
    existing = await _target(store, thread_id, agent, user)
    before = await _before(store, existing)
    written = _Written()

    async def steps() -> ImportResult:
        thread = existing
        if thread is None:
            thread = need(
                await store.create_thread(agent or DEFAULT_AGENT, _with_user(None, user), thread_id=thread_id)
            )
            written.created = True
        progress.start("importing", len(entries))
        for number, entry in enumerate(entries, start=1):
            written.ids.append(need(await store.add_entry(entry)).id)
            progress.update(number)
            await asyncio.sleep(0)  # Ctrl-C cancels here
        await _index(store, thread)
        progress.end()
        return ImportResult(thread, len(entries), existing is None)

    return await _run(store, thread_id, before, written, steps)


async def import_export(
    store: BaseMemoryAdapter,
    exported: ExportedThread,
    thread_id: str,
    agent: str | None,
    *,
    must_be_new: bool,
    progress: Progress,
    user: str | None = None,
) -> ImportResult:
    """Recreate an exported tree in one transaction: every branch, the active leaf, the times of
    the records, and the entry ids when none of them is taken in the file.

    Into a new thread ``thread_id``, or after the active leaf of that thread when it exists
    (refused with ``must_be_new``). When an exported id is taken already (the file was imported
    before, or the thread was copied within the file) every entry gets a new id, and an event
    that names an entry written before it (a compaction's first kept entry, a label's target)
    names its copy. ``user`` (when given) becomes the new thread's ``metadata.user_id``, and an
    existing thread must be theirs.
    """
    source = exported.thread
    existing = await _target(store, thread_id, agent, user)
    if existing is not None and must_be_new:
        raise CliError(
            f"thread {thread_id} already exists: pass --thread NEW_ID to import a copy, "
            f"or --thread {thread_id} to add the entries after its active leaf"
        )
    before = await _before(store, existing)
    written = _Written()

    async def steps() -> ImportResult:
        thread = existing
        if thread is None:
            with frozen_clock(source.created_at):
                thread = need(
                    await store.create_thread(
                        agent or source.agent_id, _with_user(source.metadata, user), thread_id=thread_id
                    )
                )
            written.created = True
        keep = True
        for entry in exported.entries:
            if need(await store.get_entry(entry.id)) is not None:
                keep = False
                break
        progress.start("importing", len(exported.entries))
        new_ids: dict[str, str] = {}
        for number, entry in enumerate(exported.entries, start=1):
            new = NewMemoryEntry(
                thread_id=thread.id,
                id=entry.id if keep else None,
                parent_id=new_ids[entry.parent_id] if entry.parent_id is not None else None,
                activate=False,
                type=entry.type,
                message=entry.message,
                event=entry.event if keep else tree.with_entry_ids_mapped(entry.event, new_ids),
                metadata=entry.metadata,
                tool_calls=entry.tool_calls,
                tool_results=entry.tool_results,
                token_count=entry.token_count,
                created_at=entry.created_at,
            )
            new_ids[entry.id] = need(await store.add_entry(new)).id
            written.ids.append(new_ids[entry.id])
            progress.update(number)
            await asyncio.sleep(0)  # Ctrl-C cancels here
        if source.active_leaf_id is not None:
            need(await store.checkout(thread.id, new_ids[source.active_leaf_id]))
        if existing is None:
            with frozen_clock(source.updated_at):
                thread = need(await store.update_thread(thread.id, {}))
        await _index(store, thread)
        progress.end()
        return ImportResult(thread, len(new_ids), existing is None, keep)

    return await _run(store, thread_id, before, written, steps)


async def _run(
    store: BaseMemoryAdapter,
    thread_id: str,
    before: _Before,
    written: _Written,
    steps: Callable[[], Awaitable[ImportResult]],
) -> ImportResult:
    """Run ``steps`` all or nothing: in one transaction on a SQLite file, else taken back after a
    failure (Ctrl-C included); then check that nothing is left."""
    if isinstance(store, CliStore):
        try:
            with store.transaction():
                return await steps()
        except BaseException:
            await _check_taken_back(store, before, thread_id, written, exact=True)
            raise
    try:
        return await steps()
    except BaseException:
        await _take_back(store, before, thread_id, written)
        await _check_taken_back(store, before, thread_id, written, exact=False)
        raise


__all__ = ["ImportResult", "import_export", "import_messages"]
