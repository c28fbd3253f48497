"""Auto-extraction: a background worker that reads each user message into the knowledge graph.

:class:`AutoExtractor` takes messages with :meth:`~AutoExtractor.submit` (or from a thread store
it is attached to: :meth:`~AutoExtractor.attach`) and returns at once; one task on the running
loop reads them, oldest first, with a :class:`~cogitator_memory.graph.extract.GraphExtractor`
(one message a call, its quotes checked against that message) and, when ``infer`` is on, runs
the inference pass (:func:`~cogitator_memory.graph.inference.run_inference`) on the scope it
wrote in. The caller's turn never waits for a model or the store:

- the queue holds at most ``queue_size`` messages; when it is full, ``on_full="drop_oldest"``
  (the default) drops the oldest waiting message to make room and ``"reject"`` refuses the new
  one. :meth:`~AutoExtractor.submit` says which (:data:`SubmitStatus`), and :attr:`~AutoExtractor.stats`
  counts them;
- a message whose extraction fails with a model or store error is tried again up to
  ``max_retries`` times, after ``backoff_base * 2**(n-1)`` seconds (at most ``backoff_max``,
  plus ``jitter``; :class:`~cogitator_memory.http.RetryPolicy`). An answer the model got wrong
  (no JSON array after its tries, or cut: see :mod:`cogitator_memory.graph.extract`) or a
  refused argument is not tried again. A message that still fails is counted, kept in
  :attr:`~AutoExtractor.failures` (the last 50) and passed to ``on_error``; the worker goes on;
- :meth:`~AutoExtractor.flush` waits until every message submitted so far is done;
  :meth:`~AutoExtractor.close` stops taking messages, finishes the queue (or, with
  ``drain=False``, drops it and stops the message being read, whose writes are taken back) and
  stops the worker.

:class:`AutoExtractSettings` holds the options as configuration (``enabled`` is off by default;
a runtime builds an extractor only when it is on).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InvalidArgumentError
from ..extraction.pipeline import DEFAULT_WINDOW_TOKENS, ExtractionAnswerError
from ..extraction.windows import MIN_WINDOW_TOKENS
from ..http import RetryPolicy
from ..items.records import MemoryScope, Trust, check_scope
from ..models.records import SummarizeFn
from ..result import unwrap
from ..threads import tree
from ..threads.records import USER_ID_KEY, ChangeEvent, MemoryEntry
from .base import GraphStoreMixin
from .extract import GraphAnswerCutError, GraphExtractionReport, GraphExtractor, GraphWindowError
from .inference import InferenceReport, InferenceRules, run_inference

logger = logging.getLogger("cogitator_memory")

Role: TypeAlias = Literal["user", "assistant", "system", "tool"]
FullQueuePolicy: TypeAlias = Literal["drop_oldest", "reject"]
SubmitStatus: TypeAlias = Literal["queued", "queued_dropped_oldest", "rejected", "ignored", "closed"]
"""What :meth:`AutoExtractor.submit` did: ``queued``; ``queued_dropped_oldest`` (the queue was
full and its oldest message was dropped); ``rejected`` (full, ``on_full="reject"``); ``ignored``
(not a message of ``roles``, or no text); ``closed`` (after :meth:`AutoExtractor.close`)."""

#: How many failures :attr:`AutoExtractor.failures` keeps.
MAX_KEPT_FAILURES = 50
_FINAL = (ExtractionAnswerError, GraphAnswerCutError, InvalidArgumentError)


class AutoExtractSettings(BaseModel):
    """The options of auto-extraction, as a configuration file gives them.

    ``enabled`` (default false) says whether a runtime runs it; ``queue_size`` and ``on_full``
    bound the queue; ``max_retries``, ``backoff_base``, ``backoff_max`` and ``jitter`` (seconds)
    say how a failed message is tried again; ``roles`` which messages are read (the user's, by
    default); ``min_trust`` the least trusted source written; ``infer`` whether the inference pass
    runs after each message that wrote something; ``model``, ``max_tokens`` and ``window_tokens``
    go to the extractor; ``time_zone`` dates the messages shown.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    queue_size: int = Field(default=100, ge=1, le=100_000)
    on_full: FullQueuePolicy = "drop_oldest"
    max_retries: int = Field(default=3, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0, le=600)
    backoff_max: float = Field(default=30.0, ge=0, le=3600)
    jitter: float = Field(default=0.1, ge=0, le=1)
    roles: tuple[Role, ...] = ("user",)
    min_trust: Trust = "user"
    infer: bool = True
    model: str | None = None
    max_tokens: int = Field(default=2000, ge=1)
    window_tokens: int = Field(default=DEFAULT_WINDOW_TOKENS, ge=MIN_WINDOW_TOKENS)
    time_zone: str = "UTC"

    @classmethod
    def of(cls, value: AutoExtractSettings | Mapping[str, Any] | bool | None) -> AutoExtractSettings:
        """Settings from what a configuration holds: settings as they are, ``true`` (on with the
        defaults), ``false`` or ``None`` (off), or a dict of the fields (``enabled`` defaults to
        true there: a section given means it is wanted). ``InvalidArgumentError`` naming the field."""
        if isinstance(value, AutoExtractSettings):
            return value
        if value is None or isinstance(value, bool):
            return cls(enabled=bool(value))
        if not isinstance(value, Mapping):
            raise InvalidArgumentError("auto_extract", f"must be true, false or a dict, got {type(value).__name__}")
        try:
            return cls.model_validate({"enabled": True, **value})
        except ValidationError as exc:
            raise tree.validation_error("auto_extract", exc) from None

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of these settings."""
        return RetryPolicy(
            max_retries=self.max_retries,
            backoff_base=self.backoff_base,
            backoff_max=self.backoff_max,
            jitter=self.jitter,
        )


@dataclass(frozen=True)
class AutoExtractFailure:
    """A message auto-extraction gave up on: its entry, how many attempts were made, the error."""

    entry_id: str
    thread_id: str
    attempts: int
    error: BaseException


@dataclass
class AutoExtractStats:
    """Counts since the extractor was made: messages ``submitted`` (queued), ``ignored``,
    ``dropped`` (oldest dropped from a full queue, or left when closed without draining),
    ``rejected``, ``done`` (finished: read, or given up on), ``failed`` (given up on), ``retries``;
    ``nodes_written`` and ``edges_written`` (added or updated), ``inferred_edges`` (added);
    ``pending`` (waiting or being read now)."""

    submitted: int = 0
    ignored: int = 0
    dropped: int = 0
    rejected: int = 0
    done: int = 0
    failed: int = 0
    retries: int = 0
    nodes_written: int = 0
    edges_written: int = 0
    inferred_edges: int = 0
    pending: int = 0


@dataclass(frozen=True)
class _Job:
    entry: MemoryEntry
    scope: MemoryScope | None


ErrorCallback: TypeAlias = Callable[[AutoExtractFailure], object]


class AutoExtractor:
    """Reads messages into the knowledge graph in the background (see the module docstring).

    ``graph`` is the graph store; ``summarize`` the :data:`~cogitator_memory.models.SummarizeFn`
    of the model; ``settings`` an :class:`AutoExtractSettings` (or a dict of its fields);
    ``memory`` the thread store that gives a message's scope (its thread's agent and
    ``metadata["user_id"]``) when :meth:`submit` is given none; ``on_error(failure)``, sync or
    async, hears of every message given up on. Use it on one event loop; ``async with`` closes it.
    """

    def __init__(
        self,
        *,
        graph: GraphStoreMixin,
        summarize: SummarizeFn,
        settings: AutoExtractSettings | Mapping[str, Any] | None = None,
        memory: Any = None,
        on_error: ErrorCallback | None = None,
    ) -> None:
        if isinstance(settings, AutoExtractSettings):
            checked = settings
        elif settings is None or isinstance(settings, Mapping):
            try:
                checked = AutoExtractSettings.model_validate(dict(settings or {}))
            except ValidationError as exc:
                raise tree.validation_error("settings", exc) from None
        else:
            raise InvalidArgumentError(
                "settings", f"must be AutoExtractSettings or a dict, got {type(settings).__name__}"
            )
        if memory is not None and not callable(getattr(memory, "get_thread", None)):
            raise InvalidArgumentError("memory", "must be a thread store (with get_thread), or None")
        if on_error is not None and not callable(on_error):
            raise InvalidArgumentError("on_error", "must be a function of the failure, or None")
        self.settings = checked
        self.graph = graph
        self.memory = memory
        self.on_error = on_error
        self.extractor = GraphExtractor(
            graph=graph,
            summarize=summarize,
            window_tokens=checked.window_tokens,
            max_tokens=checked.max_tokens,
            model=checked.model,
            min_trust=checked.min_trust,
        )
        self._retry = checked.retry
        self._queue: deque[_Job] = deque()
        self._busy = False
        self._closed = False
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None
        self._stats = AutoExtractStats()
        self._failures: deque[AutoExtractFailure] = deque(maxlen=MAX_KEPT_FAILURES)
        self._unsubscribe: list[Callable[[], None]] = []

    # ----- feeding -----------------------------------------------------------------------------

    def submit(self, entry: MemoryEntry, *, scope: MemoryScope | Mapping[str, Any] | None = None) -> SubmitStatus:
        """Queue ``entry`` for extraction in ``scope`` (default: its thread's, from ``memory``) and
        return at once, without waiting for anything (see :data:`SubmitStatus`). Call it on the
        loop the extractor runs on (outside a running loop it raises ``RuntimeError``)."""
        if not isinstance(entry, MemoryEntry):
            raise InvalidArgumentError("entry", f"must be a MemoryEntry, got {type(entry).__name__}")
        checked = None if scope is None else check_scope("scope", scope)
        if checked is None and self.memory is None:
            raise InvalidArgumentError("scope", "is needed when the extractor has no thread store (memory)")
        if self._closed:
            return "closed"
        loop = asyncio.get_running_loop()  # outside a running loop: RuntimeError, before anything changes
        message = entry.message
        text = message.content if message is not None else None
        if message is None or message.role not in self.settings.roles or not isinstance(text, str) or not text.strip():
            self._stats.ignored += 1
            return "ignored"
        status: SubmitStatus = "queued"
        if len(self._queue) >= self.settings.queue_size:
            if self.settings.on_full == "reject":
                self._stats.rejected += 1
                return "rejected"
            dropped = self._queue.popleft()
            self._stats.dropped += 1
            logger.warning("auto-extraction queue full: dropped entry %s", dropped.entry.id)
            status = "queued_dropped_oldest"
        self._queue.append(_Job(entry, checked))
        self._stats.submitted += 1
        self._idle.clear()
        self._wake.set()
        self._start(loop)
        return status

    def attach(self, memory: Any) -> Callable[[], None]:
        """Submit every entry added to ``memory`` (a thread store with ``on_change``) from now on;
        the extractor's ``memory`` becomes it when unset. Returns the function that detaches."""
        if not callable(getattr(memory, "on_change", None)):
            raise InvalidArgumentError("memory", "must be a thread store with on_change")
        if self.memory is None:
            self.memory = memory

        def listen(event: ChangeEvent) -> None:
            if event.type == "entry-added" and event.entry is not None and not self._closed:
                self.submit(event.entry)

        unsubscribe: Callable[[], None] = memory.on_change(listen)
        self._unsubscribe.append(unsubscribe)
        return unsubscribe

    # ----- state -------------------------------------------------------------------------------

    @property
    def stats(self) -> AutoExtractStats:
        """A copy of the counts (see :class:`AutoExtractStats`)."""
        pending = len(self._queue) + (1 if self._busy else 0)
        return AutoExtractStats(**{**self._stats.__dict__, "pending": pending})

    @property
    def failures(self) -> list[AutoExtractFailure]:
        """The last :data:`MAX_KEPT_FAILURES` messages given up on, oldest first."""
        return list(self._failures)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every message submitted so far is done (written or given up on); false when
        ``timeout`` seconds passed first."""
        if self._worker is not None and self._worker.done() and self._queue:
            self._start()  # a worker that died (it never should) is started again
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self, *, drain: bool = True, timeout: float | None = None) -> None:
        """Stop taking messages (and detach from stores); with ``drain`` finish the queue first
        (at most ``timeout`` seconds), else drop it. Then stop the worker: a message still being
        read is stopped and its writes taken back."""
        if not self._closed:
            self._closed = True
            for unsubscribe in self._unsubscribe:
                unsubscribe()
            self._unsubscribe.clear()
        if drain:
            await self.flush(timeout)
        if self._queue:
            self._stats.dropped += len(self._queue)
            self._queue.clear()
        worker, self._worker = self._worker, None
        if worker is not None and not worker.done():
            worker.cancel()
            await asyncio.wait({worker})  # its CancelledError stays in it; a cancel of close() is not swallowed
        self._busy = False
        self._idle.set()

    async def __aenter__(self) -> AutoExtractor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ----- the worker --------------------------------------------------------------------------

    def _start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if self._worker is None or self._worker.done():
            running = loop or asyncio.get_running_loop()
            self._worker = running.create_task(self._work(), name="cogitator-auto-extract")

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            job = self._queue.popleft()
            self._busy = True
            try:
                await self._run(job)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the worker die
                logger.exception("auto-extraction of entry %s failed unexpectedly", job.entry.id)
            finally:
                self._busy = False

    async def _scope_of(self, job: _Job) -> MemoryScope:
        if job.scope is not None:
            return job.scope
        thread = unwrap(await self.memory.get_thread(job.entry.thread_id))
        if thread is None:
            raise InvalidArgumentError("entry.thread_id", f"names no thread: {job.entry.thread_id}")
        user = (job.entry.metadata or {}).get(USER_ID_KEY) or (thread.metadata or {}).get(USER_ID_KEY)
        return check_scope("scope", {"agent_id": thread.agent_id, "user_id": user if isinstance(user, str) else None})

    async def _run(self, job: _Job) -> None:
        attempts = 0
        while True:
            attempts += 1
            try:
                scope = await self._scope_of(job)
                report = await self.extractor.extract([job.entry], scope=scope, time_zone=self.settings.time_zone)
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                cause = exc.__cause__ if isinstance(exc, GraphWindowError) else exc
                if isinstance(cause, _FINAL) or attempts > self._retry.max_retries:
                    await self._give_up(job, attempts, exc)
                    return
                self._stats.retries += 1
                await asyncio.sleep(self._retry.backoff(attempts))
        self._count(report)
        if self.settings.infer and (report.nodes or report.edges):
            try:
                inferred = await run_inference(self.graph, scope.agent_id, scope=scope, rules=InferenceRules())
                self._count_inferred(inferred)
            except Exception as exc:  # derived data: the next pass puts it right
                logger.warning("auto-extraction inference failed for entry %s: %s", job.entry.id, exc)
        self._stats.done += 1

    def _count(self, report: GraphExtractionReport) -> None:
        self._stats.nodes_written += len(report.nodes)
        self._stats.edges_written += len(report.edges)

    def _count_inferred(self, report: InferenceReport) -> None:
        self._stats.inferred_edges += len(report.added)

    async def _give_up(self, job: _Job, attempts: int, error: BaseException) -> None:
        failure = AutoExtractFailure(job.entry.id, job.entry.thread_id, attempts, error)
        self._stats.failed += 1
        self._stats.done += 1
        self._failures.append(failure)
        logger.warning("auto-extraction gave up on entry %s after %d attempts: %s", job.entry.id, attempts, error)
        if self.on_error is not None:
            try:
                result = self.on_error(failure)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("auto-extraction on_error failed")


__all__ = [
    "MAX_KEPT_FAILURES",
    "AutoExtractFailure",
    "AutoExtractSettings",
    "AutoExtractStats",
    "AutoExtractor",
    "FullQueuePolicy",
    "SubmitStatus",
]
