"""``RecallIndexer``: keeps a store's recall index in step with its threads.

**As turns are written.** ``attach()`` listens to the thread store's changes: every new
message or tool result is indexed in the background, in batches (one write of the index per
batch); a deleted or redacted entry loses its record, a cleared or deleted thread all of its
records. :meth:`RecallIndexer.flush` waits until what was queued is written: a search calls it
first, so what was just said is found. A write of the index that fails is retried with backoff;
one that still fails marks its thread for a resync at the next flush.

**What it did not see.** Entries written before the indexer started, by another process, an
import or a process that stopped before its queue was written are found by
:meth:`RecallIndexer.catch_up`: every thread updated since the last catch-up started (its time
is kept in the index, :data:`WATERMARK_KEY`) is checked, and a thread whose turns and records
differ in number is indexed again. The store's threads are the durable queue: a crash loses no
turn, since the watermark moves only when a whole pass is done. A pass walks the threads the
oldest update first (:func:`threads_oldest_first`), so that the index's write order follows the
conversations as live indexing does. ``catch_up(full=True)`` checks every thread
(``cogitator-memory reindex``); it keeps its place (:data:`REINDEX_KEY`: the last thread done)
so a pass stopped half way resumes where it stopped. A store's first catch-up, and every full one, also
writes the records of the memory items, graph nodes and edges and memory-file sections of the
agents of its threads (those the stores' own write paths index from then on); a store
``Memory`` opens empty is marked current then (:meth:`RecallIndexer.mark_if_new`), so its first
catch-up does not read them all back. A thread indexed
again is handed to :attr:`RecallIndexer.on_resync`, through which ``Memory`` has its message
index embed the turns that have no vector yet.

**What is gone.** A full catch-up then walks every record of the index, a page at a time
(:meth:`~cogitator_memory.index.RecallIndexMixin.prune_recall_records`), and removes those whose
source the store no longer holds: the turns of a deleted thread, deleted items, nodes and edges,
sections of memory files deleted, redacted or shortened (see :mod:`~cogitator_memory.index.orphans`),
all deleted by a writer that kept no index or undone by a restored backup. It keeps its place
too (:data:`PRUNE_KEY`): a reindex stopped in this pass goes on with it, not with the threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .. import clock
from ..errors import InvalidArgumentError
from ..jobs import JobQueue
from ..result import unwrap
from ..threads.records import ChangeEvent, MemoryEntry, Thread
from .base import is_recall_index
from .build import CORE_AGENT, edge_record, file_section_records, indexed_turn, item_record, node_record, turn_record
from .records import MAX_RECORD_BATCH, RecallRecord

logger = logging.getLogger("cogitator_memory")

#: The index state holding when the last complete catch-up started (ISO time).
WATERMARK_KEY = "indexer.turns.watermark"
#: The index state holding where a full reindex got to: the last thread done, in the walk's
#: order (see :func:`walk_mark`).
REINDEX_KEY = "indexer.turns.reindex_cursor"
#: The index state holding how far a full reindex got past its threads: :data:`SOURCES_DONE`
#: less, then ``prune:`` and the cursor of the records' walk (empty: no such pass under way).
PRUNE_KEY = "indexer.reindex.prune_cursor"
#: :data:`PRUNE_KEY` once the threads are done and the items, graph and files are to be written.
SOURCES_PHASE = "sources"
#: What :data:`PRUNE_KEY` starts with while the records of sources gone are being removed.
PRUNE_PHASE = "prune:"
#: Records checked against their sources in one page of a full reindex.
PRUNE_PAGE = 500
#: How far before its start a catch-up's watermark is put (clocks of other writers may lag).
WATERMARK_MARGIN = timedelta(seconds=5)
#: Threads read in one page by a catch-up.
THREAD_PAGE = 200
#: Threads whose scope (agent, user) is kept to index their turns without reading them again.
SCOPES_KEPT = 10_000


@dataclass
class CatchUpReport:
    """What a catch-up did: threads checked, threads indexed again, records written; and, in
    a full one, records checked against their sources and those removed (their source gone)."""

    threads_checked: int = 0
    threads_indexed: int = 0
    records_written: int = 0
    records_checked: int = 0
    records_removed: int = 0


@dataclass(slots=True)
class _Job:
    kind: str  # "add", "delete", "clear"
    thread_id: str
    entry: MemoryEntry | None = None
    entry_id: str | None = None


ProgressFn = Callable[[CatchUpReport], None]


def walk_mark(updated_at: datetime, thread_id: str) -> str:
    """Where a full catch-up got to (see :data:`REINDEX_KEY`): the last thread done, in the walk's
    order (oldest update first), as ``<updated_at ISO>|<thread id>``."""
    return f"{updated_at.isoformat()}|{thread_id}"


def parse_mark(text: str | None) -> tuple[datetime, str] | None:
    """The ``(updated_at, thread id)`` of :func:`walk_mark`; ``None`` for no mark, or for one this
    version cannot read (a walk kept by an earlier version starts over)."""
    if not text:
        return None
    when, sep, thread_id = text.partition("|")
    if not sep or not thread_id:
        return None
    try:
        updated = datetime.fromisoformat(when)
    except ValueError:
        return None
    return (updated, thread_id) if updated.tzinfo is not None else None


async def threads_oldest_first(
    store: Any, after: datetime | None, mark: tuple[datetime, str] | None = None
) -> list[tuple[datetime, str]]:
    """The threads of ``store`` updated after ``after`` (every one with ``None``) as
    ``(updated_at, id)``, the oldest update first, and past ``mark`` in that order when given.

    A catch-up writes the threads' records in this order, so that the index's write order
    follows the conversations (the records of the newest threads are indexed last, which a
    keyword search of a common word reads first: see
    :meth:`~cogitator_memory.index.RecallIndexMixin.recall_keyword`); the store lists them the
    most recently updated first, so their ids and times are read first, a page at a time (some
    100 bytes a thread)."""
    found: list[tuple[datetime, str]] = []
    cursor: str | None = None
    while True:
        page = unwrap(await store.list_threads(updated_after=after, limit=THREAD_PAGE, cursor=cursor))
        found.extend((t.updated_at, t.id) for t in page.threads)
        cursor = page.next_cursor
        if cursor is None:
            break
    found.sort()
    if mark is not None:
        found = [x for x in found if x > mark]
    return found


class RecallIndexer:
    """Indexes the turns of ``store`` (a thread store that keeps a recall index) in its recall
    index; see the module docs. ``batch_size`` bounds one write, ``max_retries`` and
    ``retry_delay`` (seconds, doubled each time) govern retries of a failed write."""

    def __init__(self, store: Any, *, batch_size: int = 500, max_retries: int = 3, retry_delay: float = 0.1) -> None:
        if not is_recall_index(store) or not hasattr(store, "on_change"):
            raise InvalidArgumentError("store", "must be a thread store that keeps a recall index")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_RECORD_BATCH:
            raise InvalidArgumentError("batch_size", f"must be an integer from 1 to {MAX_RECORD_BATCH}")
        self.store = store
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        #: Records written since the indexer started.
        self.indexed = 0
        #: The last error the background work met (``None`` while all went well).
        self.last_error: BaseException | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._jobs: JobQueue[_Job] = JobQueue("cogitator-memory recall indexer", self._run)
        self._scopes: OrderedDict[str, Thread] = OrderedDict()
        self._dirty: set[str] = set()
        self._caught_up: asyncio.Task[CatchUpReport] | None = None
        #: Called with the id of each thread a catch-up indexed again (turns another writer
        #: added): ``Memory`` has its message index embed the turns of it that have no vector.
        self.on_resync: Callable[[str], None] | None = None

    # ----- wiring ----------------------------------------------------------------------------

    def attach(self) -> Callable[[], None]:
        """Index what the store writes from now on; returns the function that detaches."""
        self.detach()
        self._unsubscribe = self.store.on_change(self._on_change)
        return self.detach

    def detach(self) -> None:
        """Stop listening to the store (queued work still runs)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _submit(self, job: _Job) -> None:
        self._jobs.submit(job)  # no bound on the queue: never a coroutine to wait for

    def _on_change(self, event: ChangeEvent) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the next catch-up finds it
            return
        tid = event.thread_id
        if event.type == "entry-added" and event.entry is not None:
            self._submit(_Job("add", tid, entry=event.entry))
        elif event.type in ("entry-deleted", "entry-redacted") and event.entry_id is not None:
            self._submit(_Job("delete", tid, entry_id=event.entry_id))
        elif event.type in ("thread-cleared", "thread-deleted"):
            self._scopes.pop(tid, None)
            self._submit(_Job("clear", tid))

    async def flush(self) -> None:
        """Wait until every change queued so far is in the index (and threads whose writes
        failed are indexed again)."""
        await self._jobs.flush()
        for tid in list(self._dirty):
            found = unwrap(await self.store.get_thread(tid))
            self._dirty.discard(tid)
            if found is not None:
                await self.resync_thread(found, force=True)

    async def close(self) -> None:
        """Detach, write what is queued and stop the background task."""
        self.detach()
        if self._caught_up is not None and not self._caught_up.done():
            self._caught_up.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._caught_up
        with contextlib.suppress(Exception):
            await self.flush()
        await self._jobs.stop()

    # ----- background work -------------------------------------------------------------------

    async def _run(self, queue: asyncio.Queue[_Job]) -> None:
        while True:
            batch = [await queue.get()]
            while len(batch) < self.batch_size:
                try:
                    batch.append(queue.get_nowait())
                except asyncio.QueueEmpty:
                    break
            try:
                await self._apply(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the indexer goes on; the threads are indexed again at the next flush
                self.last_error = exc
                self._dirty.update(job.thread_id for job in batch)
                logger.warning("recall indexer: a write failed, its threads are indexed again later: %s", exc)
            finally:
                self._jobs.done(len(batch))

    async def _apply(self, batch: list[_Job]) -> None:
        # a turn deleted or redacted (or whose thread went) later in the same batch is not
        # written at all: its text never reaches the index's pages only to be deleted again
        doomed: set[int] = set()
        deleted: set[str] = set()
        cleared: set[str] = set()
        for at in range(len(batch) - 1, -1, -1):
            job = batch[at]
            if job.kind == "delete" and job.entry_id is not None:
                deleted.add(job.entry_id)
            elif job.kind == "clear":
                cleared.add(job.thread_id)
            elif job.entry is not None and (job.entry.id in deleted or job.thread_id in cleared):
                doomed.add(at)
        records: list[RecallRecord] = []
        for at, job in enumerate(batch):
            if at in doomed:
                continue
            if job.kind == "add":
                assert job.entry is not None
                thread = await self._thread(job.thread_id)
                record = turn_record(job.entry, thread) if thread is not None else None
                if record is not None:
                    records.append(record)
                continue
            if records:  # keep the order of the changes: writes before a delete that follows them
                await self._write(records)
                records = []
            if job.kind == "delete" and job.entry_id is not None:
                await self._retrying(self.store.delete_recall_sources, [job.entry_id])
            elif job.kind == "clear":
                await self._retrying(self.store.delete_recall_scope, thread_id=job.thread_id)
        if records:
            await self._write(records)

    async def _write(self, records: list[RecallRecord]) -> None:
        for start in range(0, len(records), self.batch_size):
            chunk = records[start : start + self.batch_size]
            self.indexed += await self._retrying(self.store.index_recall_records, chunk)

    async def _retrying(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        delay = self.retry_delay
        attempt = 0
        while True:
            try:
                return unwrap(await call(*args, **kwargs))
            except InvalidArgumentError:
                raise
            except Exception as exc:
                if attempt >= self.max_retries:
                    raise
                attempt += 1
                self.last_error = exc
                await asyncio.sleep(delay)
                delay *= 2

    async def _thread(self, thread_id: str) -> Thread | None:
        kept = self._scopes.get(thread_id)
        if kept is not None:
            self._scopes.move_to_end(thread_id)
            return kept
        thread: Thread | None = unwrap(await self.store.get_thread(thread_id))
        if thread is not None:
            self._scopes[thread_id] = thread
            if len(self._scopes) > SCOPES_KEPT:
                self._scopes.popitem(last=False)
        return thread

    # ----- catching up -----------------------------------------------------------------------

    async def index_entries(self, thread: Thread, entries: list[MemoryEntry]) -> int:
        """Write the records of ``entries`` of ``thread`` now (they replace any held); how many."""
        records = [r for r in (turn_record(e, thread) for e in entries) if r is not None]
        await self._write(records)
        return len(records)

    async def resync_thread(self, thread: Thread, *, force: bool = False) -> int:
        """Index the turns of ``thread`` again when its records and turns differ in number (or
        always, with ``force``); how many records were written."""
        entries = unwrap(await self.store.get_entries(thread.id, include_tool_calls=True))
        records = [r for r in (turn_record(e, thread) for e in entries) if r is not None]
        if not force:
            flt = {"thread_id": thread.id, "kinds": ["turn"], "statuses": ["active", "superseded", "stale"]}
            held = unwrap(await self.store.count_recall_records(filter=flt))
            if held == len(records):
                return 0
        await self._retrying(self.store.delete_recall_scope, thread_id=thread.id)
        self._scopes[thread.id] = thread
        await self._write(records)
        await self._drop_forgotten(thread.id, records)
        return len(records)

    async def _drop_forgotten(self, thread_id: str, written: list[RecallRecord]) -> None:
        """Look at the thread again after writing its records from what was read before: the
        records of turns deleted or redacted in between (a forget that ran meanwhile, whose own
        removal of the records came before they were written) are taken out."""
        if not written:
            return
        found = await self.store.get_entries(thread_id, include_tool_calls=True)
        entries = unwrap(found) if found.success else []
        kept = {e.id for e in entries if indexed_turn(e)}
        gone = [r.source_id for r in written if r.source_id not in kept]
        for start in range(0, len(gone), MAX_RECORD_BATCH):
            await self._retrying(self.store.delete_recall_sources, gone[start : start + MAX_RECORD_BATCH])

    async def catch_up(self, *, full: bool = False, progress: ProgressFn | None = None) -> CatchUpReport:
        """Check the threads updated since the last catch-up started (every thread with
        ``full``), indexing again those whose records are missing; see the module docs."""
        started = clock.now()
        report = CatchUpReport()
        mark_text = None if full else unwrap(await self.store.get_recall_state(WATERMARK_KEY))
        after = datetime.fromisoformat(mark_text) if mark_text else None
        cursor = unwrap(await self.store.get_recall_state(REINDEX_KEY)) if full else None
        phase = (unwrap(await self.store.get_recall_state(PRUNE_KEY)) or "") if full else ""
        await self.flush()
        agents: set[str] = {CORE_AGENT}
        if not phase:
            mark = parse_mark(cursor)
            if mark is not None:  # resumed: the agents of the threads done before the stop
                agents |= await self._thread_agents()
            order = await threads_oldest_first(self.store, after, mark)
            for start in range(0, len(order), THREAD_PAGE):
                chunk = order[start : start + THREAD_PAGE]
                for _updated, thread_id in chunk:
                    thread = unwrap(await self.store.get_thread(thread_id))
                    if thread is None:  # deleted since it was listed
                        continue
                    agents.add(thread.agent_id)
                    written = await self.resync_thread(thread, force=full)
                    report.threads_checked += 1
                    if written:
                        report.threads_indexed += 1
                        report.records_written += written
                        if self.on_resync is not None:
                            self.on_resync(thread.id)
                if progress is not None:
                    progress(report)
                if full:
                    unwrap(await self.store.set_recall_state(REINDEX_KEY, walk_mark(*chunk[-1])))
            if full:  # the threads are done: a stop from here goes on past them
                unwrap(await self.store.set_recall_state(PRUNE_KEY, SOURCES_PHASE))
                unwrap(await self.store.set_recall_state(REINDEX_KEY, ""))
        elif phase == SOURCES_PHASE:
            agents |= await self._thread_agents()
        if after is None and not phase.startswith(PRUNE_PHASE):
            # a store indexed for the first time: the items and graph it held too
            report.records_written += await self._index_sources(sorted(agents))
        if full:
            await self._prune(phase[len(PRUNE_PHASE) :] if phase.startswith(PRUNE_PHASE) else "", report, progress)
            unwrap(await self.store.set_recall_state(REINDEX_KEY, ""))  # the next full one starts over
        unwrap(await self.store.set_recall_state(WATERMARK_KEY, (started - WATERMARK_MARGIN).isoformat()))
        return report

    async def mark_if_new(self) -> bool:
        """Mark the index current if the store was never caught up and holds nothing a first
        catch-up would index (no thread; no core fact or memory file of :data:`CORE_AGENT`);
        whether it did. Called when ``Memory`` opens a store: what is written from then on is
        indexed as it is written, so the first search does not read every item and fact the
        store gathered meanwhile to compare them with their records."""
        if unwrap(await self.store.get_recall_state(WATERMARK_KEY)):
            return False
        started = clock.now()
        if unwrap(await self.store.list_threads(limit=1)).threads:
            return False
        within = {"within": {"agent_id": CORE_AGENT}}
        store = self.store
        if callable(getattr(store, "query_items", None)) and unwrap(await store.query_items({**within, "limit": 1})):
            return False
        if callable(getattr(store, "query_file_versions", None)) and unwrap(await store.query_file_versions(within)):
            return False
        unwrap(await self.store.set_recall_state(WATERMARK_KEY, (started - WATERMARK_MARGIN).isoformat()))
        return True

    async def _thread_agents(self) -> set[str]:
        """The agents of every thread of the store (their rows read a page at a time)."""
        agents: set[str] = set()
        cursor: str | None = None
        while True:
            page = unwrap(await self.store.list_threads(limit=THREAD_PAGE, cursor=cursor))
            agents.update(t.agent_id for t in page.threads)
            cursor = page.next_cursor
            if cursor is None:
                return agents

    async def _prune(self, cursor: str, report: CatchUpReport, progress: ProgressFn | None) -> None:
        """Remove the records of sources gone, a page at a time from ``cursor`` (empty: the
        first page), keeping the place in :data:`PRUNE_KEY`; cleared once every page is done."""
        if callable(getattr(self.store, "prune_recall_records", None)):
            unwrap(await self.store.set_recall_state(PRUNE_KEY, PRUNE_PHASE + cursor))
            while True:
                page = unwrap(await self.store.prune_recall_records(cursor=cursor or None, limit=PRUNE_PAGE))
                report.records_checked += page.checked
                report.records_removed += page.removed
                if progress is not None:
                    progress(report)
                cursor = page.next_cursor or ""
                if not cursor:
                    break
                unwrap(await self.store.set_recall_state(PRUNE_KEY, PRUNE_PHASE + cursor))
        unwrap(await self.store.set_recall_state(PRUNE_KEY, ""))

    async def _index_sources(self, agents: list[str]) -> int:
        """Write the records of every memory item, graph node and edge, and memory-file section
        of ``agents`` (what a store held before it kept a recall index, or before it indexed
        those kinds) that the index does not hold as they are; how many were written. (A store
        whose live indexer wrote them all writes none: with 100,000 items and 100,000 facts,
        writing them all again took 223 s.)"""
        written = 0
        for agent in agents:
            records: list[RecallRecord] = []
            if callable(getattr(self.store, "query_items", None)):
                items = unwrap(await self.store.query_items({"within": {"agent_id": agent}}))
                records.extend(r for r in map(item_record, items) if r is not None)
            if callable(getattr(self.store, "query_nodes", None)) and agent != CORE_AGENT:
                nodes = unwrap(await self.store.query_nodes({"agent_id": agent}))
                records.extend(map(node_record, nodes))
                names = {n.id: n.name for n in nodes}
                edges = unwrap(await self.store.query_edges({"agent_id": agent}))
                records.extend(edge_record(e, names) for e in edges)
            if callable(getattr(self.store, "query_file_versions", None)):
                records.extend(await self._file_records(agent))
            changed = await self._not_held(records)
            await self._write(changed)
            written += len(changed)
        return written

    async def _not_held(self, records: list[RecallRecord]) -> list[RecallRecord]:
        """The ``records`` the index does not hold as they are (missing, or differing)."""
        out: list[RecallRecord] = []
        for start in range(0, len(records), MAX_RECORD_BATCH):
            chunk = records[start : start + MAX_RECORD_BATCH]
            held = {r.id: r for r in unwrap(await self.store.get_recall_records([r.id for r in chunk]))}
            out.extend(r for r in chunk if held.get(r.id) != r)
        return out

    async def _file_records(self, agent: str) -> list[RecallRecord]:
        """The section records of the head of each of ``agent``'s memory files (the heads are
        read from the versions: a store lists heads only by scope)."""
        versions = unwrap(await self.store.query_file_versions({"within": {"agent_id": agent}}))
        heads: dict[tuple[str, str], Any] = {}
        for version in versions:
            held = heads.get((version.scope_key, version.path))
            if held is None or version.sequence > held.sequence:
                heads[(version.scope_key, version.path)] = version
        return [r for head in heads.values() for r in file_section_records(head)]

    async def ready(self) -> None:
        """Catch up once per indexer (the first call runs it, later calls wait for it), then
        flush: after it, the index holds every turn the store holds."""
        if self._caught_up is None or (self._caught_up.done() and self._caught_up.exception() is not None):
            self._caught_up = asyncio.ensure_future(self.catch_up())
        await asyncio.shield(self._caught_up)
        await self.flush()


__all__ = [
    "PRUNE_KEY",
    "REINDEX_KEY",
    "WATERMARK_KEY",
    "CatchUpReport",
    "RecallIndexer",
    "parse_mark",
    "threads_oldest_first",
    "walk_mark",
]
