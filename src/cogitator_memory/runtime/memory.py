"""``Memory``: one object, built from the memory config, that owns every store and service.

:class:`Memory` makes the thread store the config names (through
:mod:`cogitator_memory.engines.factory`), the message index and its vectors, memory items, core
facts, the knowledge graph, memory files, compaction and the context builder, and gives the
calls an application needs: :meth:`Memory.add` a conversation (OpenAI or Anthropic messages),
:meth:`Memory.search` what a user said and what is known about them, :meth:`Memory.build_context`
for the next model call, :meth:`Memory.remember` / :meth:`Memory.recall` / :meth:`Memory.forget`
facts (the memory tools), :meth:`Memory.history` of a thread. Between runs it gives
:meth:`Memory.brief` (cards for the next turn), :meth:`Memory.refresh_observations` and
:meth:`Memory.consolidate` (the upkeep of :mod:`cogitator_memory.upkeep`), and takes entries out
of memory with what was derived from them through :attr:`Memory.cascade`
(:meth:`Memory.delete_entries`, :meth:`Memory.redact_entries`, :meth:`Memory.rewind`,
:meth:`Memory.delete_thread`, :meth:`Memory.forget_user`).
See ``docs/runtime.md``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from .. import clock
from ..cascade.service import MemoryCascade
from ..context.builder import ContextBuilder
from ..context.config import ContextStrategy, check_time_zone
from ..context.history import entry_messages, read_compacted_history, summary_message
from ..context.message_index import MessageIndex
from ..context.records import BuiltContext
from ..engines.factory import create_embedding_adapter, create_memory_adapter
from ..errors import ConflictError, InvalidArgumentError, MemoryStoreError
from ..facts.core import CoreFacts
from ..files.base import is_memory_file_adapter
from ..files.service import MemoryFiles
from ..files.tools import MemoryFileTool
from ..ids import thread_id as new_thread_id
from ..index.base import is_recall_index
from ..index.indexer import RecallIndexer
from ..items.records import MemoryItem, NewMemoryItem
from ..items.service import MemoryItems
from ..models.convert import from_anthropic_messages, from_openai_messages
from ..recall.query import check_query
from ..recall.retriever import MemoryRetriever
from ..result import unwrap
from ..threads import tree
from ..threads.base import BaseMemoryAdapter
from ..threads.records import REDACTED_KEY, MemoryEntry, Message, NewMemoryEntry
from ..upkeep.brief import MemoryBriefer
from ..upkeep.consolidation import MemoryConsolidator
from ..upkeep.observations import MemoryObservations
from ..vectors.base import EmbeddingAdapter
from .between_runs import BetweenRuns, ConsolidationReport
from .config import ConfigError, MemoryConfig, coerce_config
from .forgetting import Forgetting
from .search import SearchHit, check_reader, search_memory
from .tool_calls import MemoryTools

if TYPE_CHECKING:
    from ..compat.mem0 import Mem0Compat

logger = logging.getLogger(__name__)


MessageFormat = Literal["openai", "anthropic"]
#: The Anthropic content blocks OpenAI's messages never hold.
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "document"})
#: The heading core facts go under in the system prompt.
CORE_FACTS_HEADING = "What I know about the user"


#: The steps :meth:`Memory.add` runs once the turns are stored.
AddStage = Literal["compaction", "extraction"]


@dataclass(frozen=True, slots=True)
class AddError:
    """A step :meth:`Memory.add` ran after storing the turns that failed: ``stage`` names it,
    ``message`` says what failed, ``error`` is the exception (the turns stay stored)."""

    stage: AddStage
    message: str
    error: Exception = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class AddResult:
    """What :meth:`Memory.add` wrote: the thread and the entries, in order.

    ``errors`` lists the steps run after the write that failed (compaction, extraction), each an
    :class:`AddError`; the entries are stored either way, so the call is not to be repeated for
    them. ``replayed`` is true when the ``idempotency_key`` named an add already stored: nothing
    was written and ``entries`` are that add's.
    """

    thread_id: str
    entries: list[MemoryEntry] = field(default_factory=list)
    errors: list[AddError] = field(default_factory=list)
    replayed: bool = False


def _keyed_ids(thread_id: str, key: str, count: int) -> list[str]:
    """The entry ids of an add with an idempotency key: the same for the same thread and key,
    so a retry finds what the first call wrote (and a store refuses a second write of an id)."""
    digest = hashlib.sha256(f"{thread_id}\x00{key}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    first = f"entry_k{digest}_0"
    return [_keyed_id(first, n) for n in range(count)]


def _keyed_id(first: str, n: int) -> str:
    """The ``n``-th keyed id of the add whose first keyed id is ``first``."""
    return f"{first.rsplit('_', 1)[0]}_{n}"


def message_format(messages: Sequence[Any], system: Any = None) -> MessageFormat:
    """Anthropic's shape when a ``system`` is given or a message holds a block only Anthropic
    has (``tool_use``, ``tool_result``, an image with a ``source``), else OpenAI's."""
    if system is not None:
        return "anthropic"
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, Mapping) else getattr(block, "type", None)
            has_source = (
                block.get("source") if isinstance(block, Mapping) else getattr(block, "source", None)
            ) is not None
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and has_source):
                return "anthropic"
    return "openai"


def create_store(config: MemoryConfig, dimensions: int | None = None) -> BaseMemoryAdapter:
    """The thread store ``config`` names, made (not connected) through the engine factory, its
    folder made for SQLite; ``dimensions`` sizes PostgreSQL's vector column. A bad option raises
    :class:`ConfigError` naming the key (``memory.options.<name>``, ``memory.connection_string``)."""
    cfg = config
    options = cfg.store_options()
    if cfg.adapter == "postgres" and dimensions is not None:
        options.setdefault("dimensions", dimensions)  # the vector column's size
    if cfg.adapter == "sqlite":
        Path(options["path"]).expanduser().parent.mkdir(parents=True, exist_ok=True)
    try:
        return create_memory_adapter(options)
    except InvalidArgumentError as exc:
        key = exc.argument
        if key in cfg.options:
            key = f"options.{key}"
        elif key in ("connection_string", "url", "uri"):
            key = "connection_string"
        elif key == "config":
            key = "options"
        raise ConfigError(f"memory.{key}", exc.problem) from None


def store_key(config: MemoryConfig) -> str:
    """The config key that says where the store is (named when it cannot be reached)."""
    if config.adapter == "sqlite":
        return "memory.path"
    if config.adapter == "memory":
        return "memory.adapter"
    return "memory.connection_string"


class Memory(MemoryTools, BetweenRuns, Forgetting):
    """Memory for one application, set up from a :class:`MemoryConfig` (see the module docstring).

    ``config`` is a :class:`MemoryConfig`, a dict of the ``memory`` section, the path of a
    ``cogitator.yml``, or ``None`` (``$COGITATOR_CONFIG``, else ``./cogitator.yml``, else the
    defaults). ``adapter`` replaces the configured thread store, ``embedding_service`` the
    configured embeddings, ``summarize`` the model of compaction and extraction. Nothing
    connects until :meth:`connect` (or ``async with``, or :meth:`open`).
    """

    def __init__(
        self,
        config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        *,
        adapter: BaseMemoryAdapter | None = None,
        embedding_service: Any = None,
        summarize: Any = None,
    ) -> None:
        self.config = coerce_config(config)
        cfg = self.config
        wanting = cfg.wanting_model() if summarize is None and cfg.model is None else None
        if wanting is not None:
            raise ConfigError(
                f"memory.{wanting}", "needs a model: add a 'model' section (provider, model), or give Memory summarize="
            )
        self._owned: list[Any] = []  # clients made here, closed by close()
        self.agent_id = cfg.agent_id
        self.embedding_service: Any = embedding_service
        if self.embedding_service is None:
            options = cfg.embedding_options()
            if options is not None:
                from ..embeddings.factory import create_embedding_service

                try:
                    self.embedding_service = create_embedding_service(options)
                    self._owned.append(self.embedding_service)
                except InvalidArgumentError as exc:
                    raise ConfigError(f"memory.embedding.{exc.argument}", exc.problem) from None
        dims = getattr(self.embedding_service, "dimensions", None)
        self.adapter: BaseMemoryAdapter = adapter if adapter is not None else create_store(cfg, dims)
        self.summarize: Any = summarize if summarize is not None else self._make_summarize(cfg)
        self.graph: Any = None
        if cfg.knowledge_graph:
            if hasattr(self.adapter, "traverse") and hasattr(self.adapter, "query_nodes"):
                self.graph = self.adapter
            elif "knowledge_graph" in cfg.model_fields_set:
                raise ConfigError(
                    "memory.knowledge_graph",
                    f"the {cfg.adapter} store keeps no knowledge graph: set it false or use sqlite, postgres or memory",
                )
        self.items = MemoryItems(adapter=self.adapter)  # type: ignore[arg-type]
        self.files: MemoryFiles | None = MemoryFiles(adapter=self.adapter) if cfg.files.enabled else None  # type: ignore[arg-type]
        #: Observations of entities (memory files): made when files are on, read by the context builder.
        self.observations: MemoryObservations | None = (
            MemoryObservations(files=self.files, items=self.items) if self.files is not None else None
        )
        #: Dedupe and the playbook; the playbook is a memory file, folded only when files are on.
        self.consolidator: MemoryConsolidator | None = None
        if self.files is not None or is_memory_file_adapter(self.adapter):
            self.consolidator = MemoryConsolidator(
                items=self.items,
                files=self.files if self.files is not None else MemoryFiles(adapter=self.adapter),  # type: ignore[arg-type]
            )
        self.briefer: MemoryBriefer | None = None
        if self.summarize is not None:
            self.briefer = MemoryBriefer(
                summarize=self.summarize, max_cards=cfg.brief.max_cards, max_tokens=cfg.brief.max_tokens
            )
        #: Deletes, redacts and rewinds entries with what was derived from them; made on connect.
        self.cascade: MemoryCascade | None = None
        self.vectors: Any = None
        self.message_index: MessageIndex | None = None
        #: Keeps the store's recall index in step with its threads (made on connect).
        self.indexer: RecallIndexer | None = None
        self.context_builder: ContextBuilder | None = None
        self.compaction: Any = None
        self.extractor: Any = None
        self.auto_extractor: Any = None
        self.retriever = MemoryRetriever()
        self.enabled = True
        self._connected = False
        self._core: dict[tuple[str, str | None], CoreFacts] = {}
        self._tools: dict[tuple[str, str | None], dict[str, Any]] = {}
        #: The memory file tool of each (agent, user), which remembers what it last showed them.
        self._file_tools: OrderedDict[tuple[str, str | None], MemoryFileTool] = OrderedDict()
        #: Counts of items sent to a model (note_retrieved), written in the background.
        self._background: set[asyncio.Task[None]] = set()
        #: One lock per thread an add is writing to, so that concurrent adds do not interleave.
        self._add_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    # ----- construction ------------------------------------------------------------------------

    def _make_summarize(self, cfg: MemoryConfig) -> Any:
        if cfg.model is None:
            return None
        from ..models.base import summarize_fn
        from ..models.factory import create_chat_client

        try:
            client = create_chat_client(cfg.model.model_dump(exclude_none=True))
        except InvalidArgumentError as exc:
            raise ConfigError(f"memory.model.{exc.argument}", exc.problem) from None
        self._owned.append(client)
        return summarize_fn(client)

    def _make_vectors(self) -> Any:
        cfg = self.config
        dims = getattr(self.embedding_service, "dimensions", None)
        chosen = cfg.vectors
        if chosen is None:
            if cfg.adapter == "sqlite":
                return create_embedding_adapter({"provider": "sqlite"}, store=self.adapter, dimensions=dims)
            if cfg.adapter == "postgres" and hasattr(self.adapter, "search"):
                return self.adapter
            return create_embedding_adapter({"provider": "memory"}, dimensions=dims)
        options: dict[str, Any] = {"provider": chosen.adapter, "dimensions": dims}
        if chosen.adapter == "sqlite":
            if chosen.path:
                options["path"] = str(Path(chosen.path).expanduser())
            elif cfg.adapter == "sqlite":
                options["store"] = self.adapter
            else:
                raise ConfigError("memory.vectors.path", "vectors in SQLite need a path when the store is not SQLite")
        elif chosen.adapter == "postgres":
            if cfg.adapter != "postgres":
                raise ConfigError("memory.vectors.adapter", "postgres vectors live in the postgres store")
            return self.adapter
        elif chosen.adapter == "qdrant":
            if chosen.url and chosen.path:
                raise ConfigError("memory.vectors.path", "give Qdrant a url (a server) or a path (local), not both")
            if chosen.path:
                options["path"] = str(Path(chosen.path).expanduser())
            options.update({k: v for k, v in (("url", chosen.url), ("collection", chosen.collection)) if v})
        try:
            return create_embedding_adapter(options)
        except InvalidArgumentError as exc:
            raise ConfigError(f"memory.vectors.{exc.argument}", exc.problem) from None

    # ----- lifecycle ---------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Memory:
        """A connected :class:`Memory` (``Memory(config, **options)`` then :meth:`connect`)."""
        memory = cls(config, **options)
        await memory.connect()
        return memory

    async def connect(self) -> None:
        """Connect the stores and start the services. A store that cannot be reached raises
        :class:`ConfigError` naming the key that says where it is, or, with ``on_error:
        disable``, turns memory off with a warning (calls then write nothing and find nothing)."""
        if self._connected:
            return
        cfg = self.config
        opened = await self.adapter.connect()
        if not opened.success and opened.error_type is not None and issubclass(opened.error_type, InvalidArgumentError):
            # the store answered and refused what it was given (vectors of another size than its
            # table...): a config to fix, never "memory off" whatever on_error says
            key = "memory.embedding" if "dimension" in (opened.error or "") else store_key(cfg)
            raise ConfigError(key, opened.error or "the store refused its settings")
        if not opened.success:
            problem = f"cannot reach the {cfg.adapter} store: {opened.error}"
            if cfg.on_error == "disable":
                warnings.warn(f"memory disabled: {problem}", RuntimeWarning, stacklevel=2)
                self.enabled = False
                self._connected = True
                return
            raise ConfigError(store_key(cfg), problem)
        try:
            await self._start()
        except BaseException:
            await self.adapter.disconnect()
            raise
        self._connected = True

    async def _start(self) -> None:
        cfg = self.config
        if is_recall_index(self.adapter):
            self.indexer = RecallIndexer(self.adapter)
            self.indexer.attach()
        if self.embedding_service is not None:
            self.vectors = self._make_vectors()
            if self.vectors is not self.adapter:
                unwrap(await self.vectors.connect())
            self.message_index = MessageIndex(
                store=cast(EmbeddingAdapter, self.vectors), embedding=self.embedding_service
            )
            self.message_index.attach(self.adapter)
            if self.indexer is not None:  # turns another writer added get their vectors too
                self.indexer.on_resync = self.message_index.use
        ctx = cfg.context_builder
        strategy = ctx.strategy or "hybrid"
        builder_config: dict[str, Any] = {
            "strategy": strategy,
            "max_tokens": ctx.max_tokens,
            "reserve_tokens": ctx.reserve_tokens,
            "include_facts": ctx.include_facts,
            "include_semantic_context": ctx.include_semantic_context and self.embedding_service is not None,
            "include_graph_context": ctx.include_graph_context and self.graph is not None,
        }
        if ctx.time_zone is not None:
            builder_config["time_zone"] = ctx.time_zone
        deps: dict[str, Any] = {
            "memory_adapter": self.adapter,
            "embedding_service": self.embedding_service,
            "embedding_adapter": self.vectors,
            "message_index": self.message_index,
            "graph_adapter": self.graph,
            "memory_items": self.items,
            "observations": self.observations,
        }
        try:
            self.context_builder = ContextBuilder(builder_config, deps)
        except InvalidArgumentError as exc:
            raise ConfigError(f"memory.context_builder.{exc.argument}", exc.problem) from None
        if self.summarize is not None and cfg.compaction is not None:
            from ..compaction.service import CompactionService

            self.compaction = CompactionService(self.adapter, self.summarize)
        if self.summarize is not None and cfg.auto_extract and self.graph is not None:
            from ..graph.auto import AutoExtractor

            self.auto_extractor = AutoExtractor(
                graph=self.graph, summarize=self.summarize, memory=self.adapter, settings={"enabled": True}
            )
            self.auto_extractor.attach(self.adapter)
        if self.summarize is not None and cfg.extraction.mode != "off":
            from ..items.extract import MemoryExtractor

            mode: Literal["apply", "shadow"] = "shadow" if cfg.extraction.mode == "shadow" else "apply"
            self.extractor = MemoryExtractor(items=self.items, summarize=self.summarize, mode=mode)
        vectors = self.vectors if callable(getattr(self.vectors, "get_by_sources", None)) else None
        self.cascade = MemoryCascade(
            memory=self.adapter, items=self.items, files=self.files, graph=self.graph, embeddings=vectors
        )

    async def close(self) -> None:
        """Stop the services and disconnect the stores. Safe to call twice."""
        if not self._connected:
            return
        self._connected = False
        await self._settle()
        self._file_tools.clear()
        for facts in self._core.values():
            await facts.close()
        self._core.clear()
        self._tools.clear()
        self.cascade = None
        if self.auto_extractor is not None:
            await self.auto_extractor.close()
            self.auto_extractor = None
        if self.message_index is not None:
            self.message_index.detach()
            await self.message_index.close()
            self.message_index = None
        if self.indexer is not None:
            await self.indexer.close()
            self.indexer = None
        if self.vectors is not None and self.vectors is not self.adapter:
            await self.vectors.disconnect()
        self.vectors = None
        if self.enabled:
            await self.adapter.disconnect()
        for client in self._owned:
            await client.aclose()

    async def flush(self) -> None:
        """Wait until the background work queued so far is done: the recall index, message
        vectors and the knowledge graph's auto-extraction."""
        self._require()
        if self.indexer is not None:
            await self.indexer.flush()
        if self.message_index is not None:
            await self.message_index.flush()
        if self.auto_extractor is not None:
            await self.auto_extractor.flush()
        await self._settle()

    async def _settle(self) -> None:
        """Wait for the background counts of items sent to a model."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)

    def _count_sent(self, built: BuiltContext) -> None:
        """Count, in the background, the memory items a context sends to a model (its facts and
        what hybrid recall brought): their ``times_retrieved`` and ``last_retrieved_at``, which
        rank items sent often a little higher (the spec's retrieval counts). A failed count is
        logged; the context is sent all the same."""
        ids = [i for i in (getattr(f, "item_id", None) for f in built.facts) if isinstance(i, str)]
        if built.recalled is not None:
            ids.extend(item.id for item in built.recalled.get("items", ()) if isinstance(item, MemoryItem))
        ids = list(dict.fromkeys(ids))
        if not ids:
            return

        async def count() -> None:
            try:
                await self.items.note_retrieved(ids)
            except Exception as exc:  # a count never fails the build that sent the items
                logger.warning("could not count %d memory items sent to a model: %s", len(ids), exc)

        task = asyncio.get_running_loop().create_task(count())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def mem0(self) -> Mem0Compat:
        """mem0's calls (``add``, ``search``, ``get_all``, ``get``, ``update``, ``delete``,
        ``delete_all``, ``history``, ``reset``) in mem0's shapes over this memory (docs/mem0.md)."""
        from ..compat.mem0 import Mem0Compat

        return Mem0Compat(self)

    def _require(self) -> None:
        if not self._connected:
            raise MemoryStoreError("memory is not connected: use 'async with Memory(...)' or 'await Memory.open()'")

    def _agent(self, agent_id: str | None) -> str:
        return self.agent_id if agent_id is None else tree.check_id("agent_id", agent_id)

    # ----- conversations -----------------------------------------------------------------------

    async def add(
        self,
        messages: Sequence[Any],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        system: Any = None,
        format: MessageFormat | None = None,
        idempotency_key: str | None = None,
        created_at: datetime | None = None,
    ) -> AddResult:
        """Add a conversation's messages (OpenAI's or Anthropic's shape, told apart by
        :func:`message_format` unless ``format`` says) to ``thread_id``, created when missing for
        ``agent_id`` (default the config's) with ``user_id`` in its metadata. Without
        ``thread_id`` a new thread is made. ``system`` is an Anthropic request's system prompt.

        ``created_at`` dates the messages when they were said, for a conversation imported after
        the fact (a session of last May): recall then finds them for a question about that time
        and reads their time words ("tomorrow") from it. Every message of the call gets it (add
        a conversation session by session, or message by message, to date each); default now.
        A naive datetime is taken as UTC; a time in the future raises
        :class:`InvalidArgumentError`.

        Every message is checked before any is written (bad input raises
        :class:`InvalidArgumentError`, writing nothing), and the messages are written all or
        none, next to each other on the thread's active branch even when other adds to the
        thread run at the same time in this process. Then the thread is compacted when the
        config asks and its messages are read for memory items when extraction is on; a failure
        there is logged and reported in :attr:`AddResult.errors`, never raised: the turns stay.

        ``idempotency_key`` (with a ``thread_id``) makes a retry safe: an add whose key and
        thread match an add already stored writes nothing and returns that add's entries
        (``replayed``); the same key with other messages raises :class:`InvalidArgumentError`.
        """
        self._require()
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        key = tree.check_optional_id("idempotency_key", idempotency_key)
        if key is not None and thread_id is None:
            raise InvalidArgumentError("idempotency_key", "needs a thread_id: a retry must name the thread it adds to")
        tid = new_thread_id() if thread_id is None else tree.check_id("thread_id", thread_id)
        said = tree.check_said_at("created_at", created_at, clock.now())
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise InvalidArgumentError("messages", "must be a list of chat messages")
        if format not in (None, "openai", "anthropic"):
            raise InvalidArgumentError("format", f"must be 'openai' or 'anthropic', got {format!r}")
        shape = format or message_format(messages, system)
        if shape == "anthropic":
            new = from_anthropic_messages(messages, thread_id=tid, system=system)
        else:
            if system is not None:
                raise InvalidArgumentError("system", "is Anthropic's; OpenAI messages carry it as a system message")
            new = from_openai_messages(messages, thread_id=tid)
        if said is not None:
            new = [e.model_copy(update={"created_at": said}) for e in new]
        if not self.enabled:
            return AddResult(thread_id=tid)
        async with self.thread_lock(tid):
            existing = unwrap(await self.adapter.get_thread(tid))
            if existing is not None:
                owner = (existing.metadata or {}).get("user_id")
                if user is not None and owner is not None and owner != user:
                    raise InvalidArgumentError("thread_id", f"{tid} is another user's thread")
            stored: list[MemoryEntry] = []
            if key is not None:
                new = [e.model_copy(update={"id": i}) for e, i in zip(new, _keyed_ids(tid, key, len(new)), strict=True)]
                if existing is not None:
                    stored = await self._stored_add(new)
                    if stored and len(stored) == len(new):
                        await self._indexed(tid, stored)  # a first add cut short may not have been
                        return AddResult(thread_id=tid, entries=stored, replayed=True)
            if existing is None:
                metadata = {"user_id": user} if user is not None else None
                unwrap(await self.adapter.create_thread(agent, metadata=metadata, thread_id=tid))
            try:
                written = await self._write(new, stored)
            except BaseException as exc:
                if key is not None and isinstance(exc, ConflictError):
                    # Another process wrote this key's entries meanwhile: that add is this one.
                    stored = await self._stored_add(new)
                    if stored and len(stored) == len(new):
                        await self._indexed(tid, stored)
                        return AddResult(thread_id=tid, entries=stored, replayed=True)
                # The thread made here goes too, unless another process wrote to it meanwhile.
                if existing is None and not unwrap(await self.adapter.get_entries(tid, limit=1, types="all")):
                    await self.adapter.delete_thread(tid)
                raise
        if self.indexer is not None:  # the turns are in the recall index before add returns
            await self.indexer.flush()
        errors = await self.after_write(tid, written, agent_id=agent, user_id=user)
        return AddResult(thread_id=tid, entries=written, errors=errors)

    async def _indexed(self, tid: str, entries: list[MemoryEntry]) -> None:
        """Write the recall records of ``entries`` of ``tid`` now (what a replayed add returns)."""
        if self.indexer is not None:
            thread = unwrap(await self.adapter.get_thread(tid))
            if thread is not None:
                await self.indexer.index_entries(thread, entries)

    async def _stored_add(self, keyed: list[NewMemoryEntry]) -> list[MemoryEntry]:
        """The entries of an earlier add of these keyed entries still in the store, in order
        (fewer than asked when that add was cut short; none when there was no such add).

        Raises :class:`InvalidArgumentError` for ``idempotency_key`` when the key was used for
        other messages (their number, kind or text differ; a redacted entry is taken as it
        was)."""
        stored: list[MemoryEntry] = []
        for entry in keyed:
            found = unwrap(await self.adapter.get_entry(cast(str, entry.id)))
            if found is None:
                break
            if found.thread_id != entry.thread_id or (
                not (found.metadata or {}).get(REDACTED_KEY)
                and (found.type != entry.type or found.message != entry.message)
            ):
                raise InvalidArgumentError("idempotency_key", "was used for other messages of this thread")
            stored.append(found)
        if stored and len(stored) == len(keyed):
            beyond = _keyed_id(cast(str, keyed[0].id), len(keyed))
            if unwrap(await self.adapter.get_entry(beyond)) is not None:
                raise InvalidArgumentError("idempotency_key", "was used for other messages of this thread")
        return stored

    async def _write(self, new: list[NewMemoryEntry], stored: list[MemoryEntry]) -> list[MemoryEntry]:
        """Write ``new``, less the first ones already ``stored`` (by an add cut short), after the
        active leaf; on a failure take out what this call wrote.

        Each entry goes after the active leaf, not after an explicit parent: a message added
        to the thread in between (by another process, or since an add was cut short) then
        stays on the active path instead of on a branch that hides it or these from
        :meth:`history`. Adds of this :class:`Memory` do not come in between (:meth:`add`'s lock)."""
        written = list(stored)
        try:
            for entry in new[len(stored) :]:
                written.append(unwrap(await self.adapter.add_entry(entry)))
        except BaseException:
            for entry_written in reversed(written[len(stored) :]):
                await self.adapter.delete_entry(entry_written.id)
            raise
        return written

    def thread_lock(self, thread_id: str) -> asyncio.Lock:
        """The lock :meth:`add` holds while it writes to ``thread_id``: a writer of its own (an
        integration's session) takes it too, so its turns and an add's do not interleave."""
        lock = self._add_locks.get(thread_id)
        if lock is None:
            lock = self._add_locks[thread_id] = asyncio.Lock()
        return lock

    async def after_write(
        self, thread_id: str, written: list[MemoryEntry], *, agent_id: str, user_id: str | None
    ) -> list[AddError]:
        """What :meth:`add` does once its turns are stored, for a writer of its own: compact the
        thread and extract memory items from ``written``, as the config asks. A step that fails
        is logged and returned, never raised (the turns are stored)."""
        tid, agent, user = thread_id, agent_id, user_id
        cfg = self.config
        errors: list[AddError] = []
        if self.compaction is not None and cfg.compaction is not None:
            try:
                await self.compaction.compact(
                    tid,
                    strategy=cfg.compaction.strategy,
                    message_threshold=cfg.compaction.threshold,
                    threshold=cfg.compaction.tokens,
                    keep_recent=cfg.compaction.keep_recent,
                )
            except Exception as exc:
                errors.append(AddError("compaction", str(exc) or type(exc).__name__, exc))
        if self.extractor is not None and written:
            try:
                await self.extractor.extract(
                    written, scope={"agent_id": agent, "user_id": user}, user_id=user, before_write=self._entries_left
                )
            except Exception as exc:
                errors.append(AddError("extraction", str(exc) or type(exc).__name__, exc))
        for error in errors:
            logger.warning("add to thread %s: %s failed, the turns are stored: %s", tid, error.stage, error.message)
        return errors

    async def _entries_left(self, items: list[NewMemoryItem]) -> list[NewMemoryItem]:
        """The items extraction is about to write, less what stood on entries deleted or redacted
        while the model answered: an item keeps the quotes of the entries still there and is
        dropped when none is left (quotes of no entry, such as a file's, are kept)."""
        named = {e.entry_id for item in items for e in item.evidence if e.entry_id}
        gone: set[str] = set()
        for entry_id in named:
            entry = unwrap(await self.adapter.get_entry(entry_id))
            if entry is None or (entry.metadata or {}).get(REDACTED_KEY):
                gone.add(entry_id)
        if not gone:
            return items
        kept: list[NewMemoryItem] = []
        for item in items:
            evidence = [e for e in item.evidence if e.entry_id not in gone]
            if len(evidence) == len(item.evidence):
                kept.append(item)
            elif evidence:
                kept.append(item.model_copy(update={"evidence": evidence}))
        return kept

    async def history(self, thread_id: str, *, limit: int | None = None) -> list[Message]:
        """The thread's conversation as the model is sent it: the latest compaction's summary
        (a user message opening with "Summary of the earlier conversation:"), then the messages after it, on the active branch, tool calls and
        results included (the newest ``limit`` messages when given)."""
        self._require()
        tid = tree.check_id("thread_id", thread_id)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidArgumentError("limit", f"must be a positive integer, got {limit!r}")
        if not self.enabled:
            return []
        read = await read_compacted_history(self.adapter, thread_id=tid)
        if not read.success:
            raise MemoryStoreError(read.error or "the store failed")
        messages: list[Message] = []
        for entry in read.data or []:
            if entry.type == "compaction":
                messages.append(summary_message(entry))
            else:
                messages.extend(entry_messages(entry))
        return messages[-limit:] if limit else messages

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        limit: int = 10,
        as_of: datetime | None = None,
        time_zone: str | None = None,
    ) -> list[SearchHit]:
        """What answers ``query`` in the memory of ``{agent_id, user_id}``, best first: the
        user's turns in every thread of the agent (or only ``thread_id``, which must not be
        another user's), their memory items and core facts, and the facts ``remember`` saved;
        found through the store's recall index by words (stemmed), time, names and, with
        embeddings, meaning, and ranked by the :class:`~cogitator_memory.recall.MemoryRetriever`
        (see ``docs/recall-index.md``).

        ``as_of`` (default now) is when the query is asked: the time it names ("last week",
        "two days ago") is read from it, in ``time_zone`` (an IANA zone; default the config's
        ``context_builder.time_zone``, else UTC), as :meth:`build_context` reads its input.
        It does not hide what was said or learned after it."""
        self._require()
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query", "must be non-empty text")
        check_query("query", query)
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        tid = tree.check_optional_id("thread_id", thread_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidArgumentError("limit", f"must be an integer from 1 to 100, got {limit!r}")
        anchor = tree.check_datetime("as_of", as_of)
        zone = check_time_zone("time_zone", time_zone if time_zone is not None else self._time_zone())
        if not self.enabled:
            return []
        return await search_memory(
            self, query, agent=agent, user=user, thread_id=tid, limit=limit, anchor=anchor, time_zone=zone
        )

    def _time_zone(self) -> str:
        """The IANA zone times named in queries are read in: the config's ``context_builder.time_zone``,
        else UTC (what the context builder reads its input in)."""
        return self.config.context_builder.time_zone or "UTC"

    async def build_context(
        self,
        thread_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        current_input: str | None = None,
        system_prompt: str | None = None,
        max_tokens: int | None = None,
        reserve_tokens: int | None = None,
        pinned: Sequence[str] | str | None = None,
        leaf_id: str | None = None,
        as_of: datetime | None = None,
        time_zone: str | None = None,
        brief: str | None = None,
        strategy: ContextStrategy | None = None,
    ) -> BuiltContext:
        """The messages of the next model call of ``thread_id`` within ``max_tokens`` (default the
        config's), with the user's core facts in the system prompt under "What I know about the
        user" (read at each call), and, when files are on, up to three observations of the
        entities ``current_input`` names. ``brief`` is a block of :func:`~cogitator_memory.upkeep.brief_block`
        (see :meth:`brief`). ``strategy`` (``recent``, ``relevant`` or ``hybrid``; default the
        config's) is for this call only. The other arguments are those of :meth:`ContextBuilder.build`."""
        self._require()
        tid = tree.check_id("thread_id", thread_id)
        agent = self._agent(agent_id)
        user = tree.check_optional_id("user_id", user_id)
        if not self.enabled or self.context_builder is None:
            raise MemoryStoreError("memory is disabled: the store could not be reached when it started")
        await check_reader(self, tid, user)
        facts = await (await self.core_facts(user_id=user, agent_id=agent)).format_for_prompt()
        prompt = system_prompt
        if facts:
            prompt = f"{system_prompt}\n\n" if system_prompt else ""
            prompt += f"{CORE_FACTS_HEADING}:\n{facts}"
        # the memory files of the caller, listed in the system message (the spec's index)
        listing = await self._file_tool(agent, user).index() if self.files is not None else ""
        built = await self.context_builder.build(
            tid,
            agent_id=agent,
            user_id=user,
            system_prompt=prompt,
            current_input=current_input,
            max_tokens=max_tokens,
            reserve_tokens=reserve_tokens,
            pinned=pinned,
            leaf_id=leaf_id,
            as_of=as_of,
            time_zone=time_zone,
            brief=brief,
            strategy=strategy,
            index=listing or None,
        )
        self._count_sent(built)
        return built


__all__ = [
    "CORE_FACTS_HEADING",
    "AddError",
    "AddResult",
    "ConsolidationReport",
    "Memory",
    "MessageFormat",
    "SearchHit",
    "message_format",
]
