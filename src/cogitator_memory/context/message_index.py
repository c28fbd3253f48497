"""``MessageIndex``: the vectors of a thread's messages, kept in an embedding store in the background.

``attach(memory)`` listens to the thread store's changes: each new message or tool result is
embedded once, in the background, and stored with ``metadata.index = "messages"`` and the
thread's ``thread_id``, ``agent_id`` and ``user_id`` (from the thread's metadata); a deleted or
redacted entry loses its vector, a cleared or deleted thread all of its vectors. With an index,
the ``relevant`` strategy finds older entries of the whole thread by a search of the store.

The background work is one task per index with a bounded queue (``queue_size``). When the queue
is full, the change listener hands the store a coroutine that waits for room (the store runs it
as a task), and :meth:`MessageIndex.index_entry` waits for room itself: back-pressure, not an
ever-growing backlog. Entries are embedded in batches; an embedding or store error is retried
with exponential backoff (``max_retries``; not again when the embedding service retried the
request itself), and a batch that still fails is counted in ``failed`` and logged, the index
going on. :meth:`MessageIndex.flush` waits until everything queued so far is done.

**Nothing is dropped when the embedding service is down.** Entries whose embedding (or storing)
failed after the retries stay **waiting** (:attr:`MessageIndex.waiting`): their threads are
kept in the thread store's recall-index state (:data:`WAITING_KEY`), so they outlive the
process, and they are embedded later: by a search or a flush once :data:`RETRY_AFTER` seconds
passed since the failure (:meth:`MessageIndex.retry_failed`), and by the first flush of the
next process to open the store (the next start), which backfills the threads an earlier run
left waiting. A flush that leaves entries waiting says so in a warning naming how many.

``vectors_kept`` bounds an index kept in the process (an :class:`InMemoryEmbeddingAdapter`) to
about that many vectors, of the threads used lately: past it, the vectors of the thread used
least lately are deleted, and a build that uses that thread again has it indexed again.

Entries the index did not see being added (written before ``attach``, by an import or by
another process) are **backfilled**: the first time a thread is used (a build's
:meth:`MessageIndex.use`, or :meth:`MessageIndex.search`) its entries without a vector are
embedded, and the first search of the thread waits for that, so it finds them. A thread the index
saw from its first entry on needs no such check. :meth:`MessageIndex.backfill` does it on demand
(after another process wrote to a thread this one already checked).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..embeddings.base import EmbeddingService, EmbeddingServiceError
from ..errors import ConflictError, InvalidArgumentError, StoreUnavailableError
from ..index.build import turn_text
from ..jobs import JobQueue
from ..recall.indexed import MESSAGES_INDEX  # ``metadata.index`` of every vector the index writes
from ..result import unwrap
from ..threads.base import MemoryAdapter
from ..threads.records import INDEX_KEY, USER_ID_KEY, ChangeEvent, MemoryEntry
from ..threads.tree import check_id
from ..vectors.base import nearest_ids
from ..vectors.records import VectorHit

if TYPE_CHECKING:
    from ..vectors.base import EmbeddingAdapter

logger = logging.getLogger("cogitator_memory")

#: Longest text (characters) embedded for one entry.
MAX_EMBED_CHARS = 8000
#: Seconds after a failure before :meth:`MessageIndex.retry_failed` asks the service again.
RETRY_AFTER = 30.0
#: The recall-index state (of the attached thread store) listing, as a JSON list, the threads
#: whose entries wait for their vectors: what a later process backfills at its first flush.
WAITING_KEY = "message_index.waiting_threads"


def vector_id(entry_id: str) -> str:
    """The id of an entry's vector (one per entry, so an entry is never embedded twice)."""
    return f"msg_{entry_id}"


def entry_text(entry: MemoryEntry) -> str:
    """The text an entry is embedded by: the text it is searched by (its message, tool calls and
    tool results, :func:`~cogitator_memory.index.build.turn_text`), cut at :data:`MAX_EMBED_CHARS`."""
    return turn_text(entry)[:MAX_EMBED_CHARS]


@dataclass(frozen=True, slots=True)
class _Job:
    kind: str  # add | delete | clear | reindex
    thread_id: str
    entry: MemoryEntry | None = None
    entry_id: str | None = None
    done: asyncio.Future[int] | None = None  # a reindex's count of entries embedded


def _settle(future: asyncio.Future[int] | None, result: int | BaseException) -> None:
    if future is None or future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)


class MessageIndex:
    """Embeds each entry of the attached thread store once, in the background (see the module docs).

    ``store`` is any embedding store, ``embedding`` any embedding service. ``vectors_kept``
    (optional) bounds the vectors kept; ``queue_size`` the jobs waiting; ``batch_size`` the
    entries embedded per request; ``max_retries`` and ``retry_delay`` (seconds, doubled each
    time up to ``max_retry_delay``) how failures are retried.
    """

    def __init__(
        self,
        *,
        store: EmbeddingAdapter,
        embedding: EmbeddingService,
        vectors_kept: int | None = None,
        queue_size: int = 1024,
        batch_size: int = 64,
        max_retries: int = 4,
        retry_delay: float = 0.5,
        max_retry_delay: float = 30.0,
    ) -> None:
        if store is None or not hasattr(store, "search"):
            raise InvalidArgumentError("store", "must be an embedding store (EmbeddingAdapter)")
        if embedding is None or not hasattr(embedding, "embed_batch"):
            raise InvalidArgumentError("embedding", "must be an embedding service (EmbeddingService)")
        for name, value in (("queue_size", queue_size), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(name, f"must be a positive integer, got {value!r}")
        if vectors_kept is not None and (
            isinstance(vectors_kept, bool) or not isinstance(vectors_kept, int) or vectors_kept < 1
        ):
            raise InvalidArgumentError("vectors_kept", f"must be a positive integer or None, got {vectors_kept!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError("max_retries", f"must be an integer of 0 or more, got {max_retries!r}")
        for name, delay in (("retry_delay", retry_delay), ("max_retry_delay", max_retry_delay)):
            if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
                raise InvalidArgumentError(name, f"must be a number of seconds >= 0, got {delay!r}")
        self.store = store
        self.embedding = embedding
        self.vectors_kept = vectors_kept
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.retry_delay = float(retry_delay)
        self.max_retry_delay = float(max_retry_delay)
        #: Entries embedded and stored since the index started.
        self.indexed = 0
        #: Entries whose embedding or storing failed after every retry.
        self.failed = 0
        #: The last error the background work met (``None`` while all went well).
        self.last_error: BaseException | None = None
        self._memory: MemoryAdapter | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._jobs: JobQueue[_Job] = JobQueue("cogitator-memory message index", self._run, self.queue_size)
        self._scopes: dict[str, dict[str, str]] = {}
        self._kept: OrderedDict[str, int] = OrderedDict()  # thread -> vectors kept, least lately used first
        self._dropped: set[str] = set()
        self._checked: set[str] = set()  # threads whose stored entries all have vectors (or are queued)
        self._backfills: dict[str, asyncio.Future[int]] = {}
        self._waiting: set[asyncio.Future[Any]] = set()
        self._retry: set[str] = set()  # threads whose entries failed, to backfill later
        self._failed_at = 0.0
        self._unembedded: dict[str, set[str]] = {}  # thread -> entries whose vectors failed
        self._waiting_threads: set[str] = set()  # threads with entries waiting (kept in WAITING_KEY)
        self._saved_waiting: set[str] | None = None  # what WAITING_KEY holds (None: not read yet)
        self._resumed = False
        self._cleared: set[str] = set()  # threads whose every entry has its vector, or that went
        self._told: tuple[int, int] = (0, 0)  # the waiting entries and threads last warned about

    # ----- wiring ----------------------------------------------------------------------------

    def attach(self, memory: MemoryAdapter) -> Callable[[], None]:
        """Index the entries ``memory`` adds from now on; returns the function that detaches."""
        if memory is None or not hasattr(memory, "on_change"):
            raise InvalidArgumentError("memory", "must be a thread store with on_change()")
        self.detach()
        self._memory = memory
        self._unsubscribe = memory.on_change(self._on_change)
        return self.detach

    def detach(self) -> None:
        """Stop listening to the attached store (queued work still runs)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def pending(self) -> int:
        """Jobs queued or running (entries to embed, vectors to delete)."""
        return self._jobs.pending

    @property
    def _embeds(self) -> bool:
        """Whether the service embeds at all: one that says ``embeds = False`` (a process that
        only reads and deletes vectors, such as the CLI's ``forget``) leaves waiting entries to
        a process that embeds."""
        return getattr(self.embedding, "embeds", True) is not False

    @property
    def waiting(self) -> int:
        """Entries whose embedding or storing failed after every retry, waiting to be embedded
        later (kept, never dropped; see the module docs)."""
        return sum(len(ids) for ids in self._unembedded.values())

    def _submit(self, job: _Job) -> Any:
        """Queue ``job``; when the queue is full, return the coroutine that waits for room."""
        return self._jobs.submit(job)

    def _on_change(self, event: ChangeEvent) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            logger.warning("message index: a change outside an event loop is not indexed (%s)", event.type)
            return None
        tid = event.thread_id
        if event.type == "entry-added":
            entry = event.entry
            if entry is not None and entry.seq == 1:
                self._checked.add(tid)  # seen from its first entry: nothing to backfill
            if entry is None or entry.is_event:
                return None
            return self._submit(_Job("add", tid, entry=entry))
        if event.type in ("entry-deleted", "entry-redacted") and event.entry_id is not None:
            return self._submit(_Job("delete", tid, entry_id=event.entry_id))
        if event.type in ("thread-cleared", "thread-deleted"):
            return self._submit(_Job("clear", tid))
        return None

    async def index_entry(self, entry: MemoryEntry) -> None:
        """Queue one entry for embedding, waiting while the queue is full."""
        if not isinstance(entry, MemoryEntry):
            raise InvalidArgumentError("entry", f"must be a MemoryEntry, got {type(entry).__name__}")
        if entry.is_event:
            return
        waiting = self._submit(_Job("add", entry.thread_id, entry=entry))
        if waiting is not None:
            await waiting

    def use(self, thread_id: str) -> None:
        """Note that a build uses ``thread_id``: it becomes the thread used most lately, and a
        backfill starts in the background when its vectors were dropped or it was never checked
        (the next :meth:`search` of the thread waits for it)."""
        if thread_id in self._kept:
            self._kept.move_to_end(thread_id)
        if self._memory is not None and self._needs_backfill(thread_id):
            self._start_backfill(thread_id)

    def _needs_backfill(self, thread_id: str) -> bool:
        return thread_id in self._dropped or thread_id not in self._checked

    def _start_backfill(self, thread_id: str) -> asyncio.Future[int]:
        """The backfill of ``thread_id`` under way, or a new one queued behind the work before it."""
        running = self._backfills.get(thread_id)
        if running is not None and not running.done():
            return running
        self._dropped.discard(thread_id)
        self._checked.add(thread_id)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._backfills[thread_id] = future

        def finished(f: asyncio.Future[int]) -> None:
            if self._backfills.get(thread_id) is f:
                del self._backfills[thread_id]
            if not f.cancelled() and f.exception() is not None:
                self._checked.discard(thread_id)  # try again at the next use

        future.add_done_callback(finished)
        waiting = self._submit(_Job("reindex", thread_id, done=future))
        if waiting is not None:
            task = asyncio.ensure_future(waiting)
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)
        return future

    async def backfill(self, thread_id: str) -> int:
        """Embed every entry of ``thread_id`` in the attached store that has no vector yet, and
        wait until they are stored; returns how many were embedded.

        For entries the index did not see being added: an import, another process, entries
        written before :meth:`attach`. The first use of a thread does this by itself; call it
        when another writer added to a thread since. Raises what the stores raised.
        """
        check_id("thread_id", thread_id)
        if self._memory is None:
            raise InvalidArgumentError("memory", "the index has no thread store to read: call attach(memory) first")
        running = self._backfills.get(thread_id)
        if running is not None and not running.done():  # it may have read the thread before the
            with contextlib.suppress(Exception):  # latest writes: let it end, then check again
                await asyncio.shield(running)
        return await asyncio.shield(self._start_backfill(thread_id))

    async def flush(self) -> None:
        """Wait until every job queued so far is done. The first flush of an index also
        backfills the threads an earlier process left waiting (:data:`WAITING_KEY`), and a flush
        retries the entries that failed :data:`RETRY_AFTER` seconds ago or more; entries still
        waiting after it are named in a warning."""
        await self._resume()
        self.retry_failed()
        await self._jobs.flush()
        told = (self.waiting, len(self._waiting_threads))
        if self._waiting_threads and told != self._told:  # once for each change, not at every flush
            self._told = told
            logger.warning(
                "message index: %d entries of %d threads are waiting for the embedding service (%s); they "
                "are kept and embedded when it answers: at a search or flush %.0f s after the failure, or "
                "at the next start",
                self.waiting,
                len(self._waiting_threads),
                self.last_error,
                RETRY_AFTER,
            )

    async def _resume(self) -> None:
        """Once per index: backfill the threads :data:`WAITING_KEY` names (left waiting by an
        earlier process, or by this one before)."""
        if self._resumed or self._memory is None or not self._embeds:
            return
        self._resumed = True
        for thread_id in sorted(await self._read_waiting() - self._cleared):
            self._waiting_threads.add(thread_id)
            self._checked.discard(thread_id)
            self._start_backfill(thread_id)

    async def _read_waiting(self) -> set[str]:
        """The threads :data:`WAITING_KEY` holds (empty on a store without a recall index)."""
        if self._saved_waiting is None:
            self._saved_waiting = set()
            reader = getattr(self._memory, "get_recall_state", None)
            if callable(reader):
                try:
                    text = unwrap(await reader(WAITING_KEY))
                    found = json.loads(text) if text else []
                    self._saved_waiting = {t for t in found if isinstance(t, str)} if isinstance(found, list) else set()
                except Exception as exc:  # the index goes on; the threads stay listed
                    logger.warning("message index: cannot read the threads waiting for vectors: %s", exc)
        return set(self._saved_waiting)

    async def _save_waiting(self) -> None:
        """Keep :attr:`_waiting_threads` in :data:`WAITING_KEY` when it changed."""
        writer = getattr(self._memory, "set_recall_state", None)
        if not callable(writer):
            return
        saved = await self._read_waiting()
        if not self._resumed:  # threads an earlier process left stay listed until resumed
            self._waiting_threads |= saved - self._cleared
        if saved == self._waiting_threads:
            return
        try:
            unwrap(await writer(WAITING_KEY, json.dumps(sorted(self._waiting_threads))))
            self._saved_waiting = set(self._waiting_threads)
        except Exception as exc:
            logger.warning("message index: cannot keep the threads waiting for vectors: %s", exc)

    async def _waiting_on(self, entries: Sequence[MemoryEntry]) -> None:
        """Note ``entries`` as waiting for their vectors (failed after every retry)."""
        for entry in entries:
            self._unembedded.setdefault(entry.thread_id, set()).add(entry.id)
            self._waiting_threads.add(entry.thread_id)
        self._later({e.thread_id for e in entries})
        await self._save_waiting()

    async def _embedded(self, done: Iterable[tuple[str, str]], *, whole_thread: str | None = None) -> None:
        """Note the entries ``done`` (thread id, entry id) as waiting no more: stored or gone
        (and every entry of ``whole_thread``, after its backfill or once it is deleted)."""
        changed = False
        for thread_id, entry_id in done:
            ids = self._unembedded.get(thread_id)
            if ids is not None and entry_id in ids:
                ids.discard(entry_id)
                if not ids:
                    del self._unembedded[thread_id]
                    if thread_id in self._waiting_threads:
                        self._waiting_threads.discard(thread_id)
                        changed = True
        if whole_thread is not None:
            self._unembedded.pop(whole_thread, None)
            self._cleared.add(whole_thread)
            if whole_thread in self._waiting_threads or whole_thread in await self._read_waiting():
                self._waiting_threads.discard(whole_thread)
                changed = True
        if changed:
            await self._save_waiting()

    async def close(self) -> None:
        """Detach, finish the queued work and stop the background task."""
        self.detach()
        await self.flush()
        await self._jobs.stop()

    # ----- reads for the builder -------------------------------------------------------------

    async def search(self, thread_id: str, vector: Sequence[float], *, limit: int = 50) -> list[VectorHit]:
        """The entries of the thread most similar to ``vector``, best first: hits whose
        ``source_id`` is the entry id, with their cosine (``score``; raises the store's error).

        The first search of a thread waits for its backfill (see the module docs); a backfill
        that fails is logged, and the search goes on with what is indexed."""
        if self._memory is not None:
            pending = self._backfills.get(thread_id)
            if pending is None and self._needs_backfill(thread_id):
                pending = self._start_backfill(thread_id)
            if pending is not None and not pending.done():
                try:
                    await asyncio.shield(pending)
                except Exception as exc:
                    logger.warning("message index: backfilling thread %s failed: %s", thread_id, exc)
        scope = {"thread_id": thread_id, "metadata": {INDEX_KEY: MESSAGES_INDEX}}
        found: list[VectorHit] = unwrap(
            await nearest_ids(self.store, vector, limit=limit, threshold=-1.0, filter=scope)
        )
        return found

    async def vectors_of(self, entry_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these entries, by entry id (entries not indexed yet are missing)."""
        if not entry_ids:
            return {}
        found = unwrap(await self.store.get_by_sources(list(entry_ids)))
        return {e.source_id: e.vector for e in found if e.metadata.get(INDEX_KEY) == MESSAGES_INDEX}

    # ----- background work -------------------------------------------------------------------

    async def _run(self, queue: asyncio.Queue[_Job]) -> None:
        while True:
            job = await queue.get()
            batch = [job]
            if job.kind == "add":
                while len(batch) < self.batch_size:
                    try:
                        nxt = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                    batch.append(nxt)
                    if nxt.kind != "add":
                        break
            try:
                adds = [j.entry for j in batch if j.kind == "add" and j.entry is not None]
                if adds:
                    await self._add(adds)
                for other in batch:
                    if other.kind != "add":
                        try:
                            _settle(other.done, await self._apply(other))
                        except Exception as exc:
                            _settle(other.done, exc)
                            raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the index goes on whatever one job met
                self.last_error = exc
                logger.exception("message index job failed")
            finally:
                for other in batch:  # stopped before it ran (close, an earlier job's error)
                    _settle(other.done, StoreUnavailableError("the message index stopped before this backfill ran"))
                self._jobs.done(len(batch))

    async def _retrying(self, what: str, call: Callable[[], Any]) -> Any:
        delay = self.retry_delay
        attempt = 0
        while True:
            try:
                return await call()
            except (InvalidArgumentError, ConflictError):
                raise
            except Exception as exc:
                retryable = not isinstance(exc, EmbeddingServiceError) or (exc.retryable and exc.attempts <= 1)
                if attempt >= self.max_retries or not retryable:  # a service that retried itself is not asked again
                    raise
                attempt += 1
                self.last_error = exc
                logger.warning("message index: %s failed (%s), retry %d in %.2fs", what, exc, attempt, delay)
                await asyncio.sleep(delay)
                delay = min(self.max_retry_delay, delay * 2 if delay else 0.0)

    async def _scope(self, thread_id: str) -> dict[str, str]:
        scope = self._scopes.get(thread_id)
        if scope is None:
            scope = {"thread_id": thread_id}
            if self._memory is not None:
                found = await self._memory.get_thread(thread_id)
                thread = found.data if found.success else None
                if thread is not None:
                    scope["agent_id"] = thread.agent_id
                    user = thread.metadata.get(USER_ID_KEY)
                    if isinstance(user, str) and user:
                        scope["user_id"] = user
                    self._scopes[thread_id] = scope
        return scope

    async def _add(self, entries: list[MemoryEntry], *, raise_errors: bool = False) -> int:
        """Embed and store the entries; how many were stored. Failures are counted and logged
        (raised too with ``raise_errors``, for a backfill that someone awaits)."""
        chosen = [(e, entry_text(e)) for e in entries]
        chosen = [(e, t) for e, t in chosen if t.strip()]
        if not chosen:
            return 0
        try:
            vectors: list[list[float]] = await self._retrying(
                "embedding", lambda: self.embedding.embed_batch([t for _, t in chosen])
            )
        except Exception as exc:
            self.failed += len(chosen)
            self.last_error = exc
            await self._waiting_on([e for e, _ in chosen])
            logger.error(
                "message index: embedding %d entries failed (%s); they wait and are embedded later", len(chosen), exc
            )
            if raise_errors:
                raise
            return 0
        records: list[dict[str, Any]] = []
        for (entry, text), vector in zip(chosen, vectors, strict=True):
            metadata: dict[str, Any] = {INDEX_KEY: MESSAGES_INDEX, **(await self._scope(entry.thread_id))}
            metadata["entry_seq"] = entry.seq
            records.append(
                {
                    "id": vector_id(entry.id),
                    "source_id": entry.id,
                    "source_type": "message",
                    "content": text,
                    "vector": vector,
                    "metadata": metadata,
                }
            )
        stored = await self._store(records)
        for record in stored:
            self._count(record["metadata"]["thread_id"], 1)
        self.indexed += len(stored)
        kept = {record["source_id"] for record in stored}
        await self._embedded((e.thread_id, e.id) for e, _ in chosen if e.id in kept)
        failed = len(records) - len(stored)
        if failed:
            self.failed += failed
            await self._waiting_on([e for e, _ in chosen if e.id not in kept])
        await self._evict()
        if failed and raise_errors and self.last_error is not None:
            raise self.last_error
        return len(stored)

    def _later(self, thread_ids: set[str]) -> None:
        """Threads whose entries could not be embedded or stored: checked again (backfilled) at
        their next use or search, or by :meth:`retry_failed`, so an entry written while the
        service was down is indexed later, not dropped."""
        self._checked.difference_update(thread_ids)
        self._retry.update(thread_ids)
        self._failed_at = time.monotonic()

    def retry_failed(self, *, after: float = RETRY_AFTER) -> int:
        """Start, in the background, the backfill of the threads whose entries failed, when the
        last failure is at least ``after`` seconds old (a service still down is not asked again
        at every call); how many were started."""
        if not self._retry or self._memory is None or not self._embeds or time.monotonic() - self._failed_at < after:
            return 0
        started = 0
        for thread_id in list(self._retry):
            self._retry.discard(thread_id)
            if self._needs_backfill(thread_id):
                self._start_backfill(thread_id)
                started += 1
        return started

    async def _store(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store the records; one already stored (its entry embedded before) is skipped."""
        try:
            await self._retrying("storing vectors", lambda: self._add_all(records))
            return records
        except ConflictError:
            pass
        except Exception as exc:
            self.last_error = exc
            logger.error("message index: storing %d vectors failed: %s", len(records), exc)
            return []
        stored: list[dict[str, Any]] = []
        for record in records:
            try:
                await self._retrying("storing a vector", lambda r=record: self._add_all([r]))  # type: ignore[misc]
                stored.append(record)
            except ConflictError:
                continue
            except Exception as exc:
                self.last_error = exc
        return stored

    async def _add_all(self, records: list[dict[str, Any]]) -> None:
        unwrap(await self.store.add_embeddings(records))

    def _count(self, thread_id: str, delta: int) -> None:
        self._kept[thread_id] = max(0, self._kept.get(thread_id, 0) + delta)
        self._kept.move_to_end(thread_id)

    async def _evict(self) -> None:
        if self.vectors_kept is None:
            return
        while sum(self._kept.values()) > self.vectors_kept and len(self._kept) > 1:
            thread_id, _count = next(iter(self._kept.items()))
            del self._kept[thread_id]
            await self._delete_thread_vectors(thread_id)
            self._dropped.add(thread_id)

    async def _delete_thread_vectors(self, thread_id: str) -> None:
        unwrap(await self.store.delete_by_filter(thread_id=thread_id, metadata={INDEX_KEY: MESSAGES_INDEX}))

    async def _apply(self, job: _Job) -> int:
        """Run a job other than an add; a reindex returns how many entries it embedded."""
        if job.kind == "delete" and job.entry_id is not None:
            unwrap(await self.store.delete_embedding(vector_id(job.entry_id)))
            if self._kept.get(job.thread_id):
                self._kept[job.thread_id] -= 1
            gone = self._unembedded.get(job.thread_id)
            if gone is not None and job.entry_id in gone:  # no vector to wait for any more
                await self._embedded([(job.thread_id, job.entry_id)])
        elif job.kind == "clear":
            await self._delete_thread_vectors(job.thread_id)
            self._kept.pop(job.thread_id, None)
            self._scopes.pop(job.thread_id, None)
            await self._embedded([], whole_thread=job.thread_id)
        elif job.kind == "reindex":
            return await self._reindex(job.thread_id)
        return 0

    async def _reindex(self, thread_id: str) -> int:
        if self._memory is None:
            return 0
        entries = unwrap(await self._memory.get_entries(thread_id=thread_id, include_tool_calls=True))
        have: set[str] = set()
        for start in range(0, len(entries), 5000):
            chunk = [e.id for e in entries[start : start + 5000]]
            have.update((await self.vectors_of(chunk)).keys())
        if have:
            self._kept[thread_id] = len(have)
        missing = [e for e in entries if e.id not in have]
        added = 0
        for start in range(0, len(missing), self.batch_size):
            added += await self._add(missing[start : start + self.batch_size], raise_errors=True)
        await self._embedded([], whole_thread=thread_id)  # every entry of the thread has its vector
        return added


__all__ = ["MAX_EMBED_CHARS", "MESSAGES_INDEX", "RETRY_AFTER", "WAITING_KEY", "MessageIndex", "entry_text", "vector_id"]
