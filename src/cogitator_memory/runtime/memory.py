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
import logging
import os
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from ..cascade.service import MemoryCascade
from ..context.builder import ContextBuilder
from ..context.config import ContextStrategy, check_time_zone
from ..context.history import entry_messages, read_compacted_history, summary_message
from ..context.message_index import MessageIndex
from ..context.records import BuiltContext
from ..engines.factory import create_embedding_adapter, create_memory_adapter
from ..errors import InvalidArgumentError, MemoryStoreError
from ..facts.core import CoreFacts
from ..files.base import is_memory_file_adapter
from ..files.service import MemoryFiles
from ..files.tools import MemoryFileTool
from ..index.base import is_recall_index
from ..index.indexer import RecallIndexer
from ..items.records import MemoryItem
from ..items.service import MemoryItems
from ..recall.query import check_query
from ..recall.retriever import MemoryRetriever
from ..result import unwrap
from ..threads import tree
from ..threads.base import BaseMemoryAdapter
from ..threads.records import Message
from ..upkeep.brief import MemoryBriefer
from ..upkeep.consolidation import MemoryConsolidator
from ..upkeep.observations import MemoryObservations
from ..vectors.base import EmbeddingAdapter
from .adding import AddError, Adding, AddResult, MessageFormat, message_format
from .between_runs import BetweenRuns, ConsolidationReport
from .config import ConfigError, MemoryConfig, coerce_config
from .forgetting import Forgetting
from .search import SearchHit, SearchKind, check_kinds, check_reader, search_memory
from .tool_calls import MemoryTools

if TYPE_CHECKING:
    from ..compat.mem0 import Mem0Compat

logger = logging.getLogger(__name__)


#: The heading core facts go under in the system prompt.
CORE_FACTS_HEADING = "What I know about the user"


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


class Memory(Adding, MemoryTools, BetweenRuns, Forgetting):
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
            await self.indexer.mark_if_new()
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
        shared_only: bool = False,
        kinds: Collection[SearchKind] | None = None,
    ) -> list[SearchHit]:
        """What answers ``query`` in the memory of ``{agent_id, user_id}``, best first: the
        user's turns in every thread of the agent (or only ``thread_id``, which must not be
        another user's), their memory items and core facts, and the facts ``remember`` saved;
        found through the store's recall index by words (stemmed), time, names and, with
        embeddings, meaning, and ranked by the :class:`~cogitator_memory.recall.MemoryRetriever`
        (see ``docs/recall-index.md``).

        Without ``user_id`` the search is not scoped by user: every user's memory of the agent
        is searched (an operator's view, as the CLI and REST search give it). ``shared_only=True``
        (without ``user_id``) searches only what belongs to no user, the shared memory, as
        ``recall`` without a user does and an MCP server started without a user serves: other
        users' turns, items and facts are left out inside the store's indexes, and a
        ``thread_id`` of a user's thread is refused.

        ``kinds`` (default all) names the kinds of hits wanted, of ``"entry"`` (turns),
        ``"item"`` (memory items and core facts), ``"fact"`` (what ``remember`` saved, graph
        facts) and ``"file"`` (memory-file sections): the channels of the others do not run.

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
        if not isinstance(shared_only, bool):
            raise InvalidArgumentError("shared_only", f"must be true or false, got {shared_only!r}")
        if shared_only:
            if user is not None:
                raise InvalidArgumentError("shared_only", "searches the memory of no user: leave out user_id")
            user = tree.NO_USER
        tid = tree.check_optional_id("thread_id", thread_id)
        wanted = check_kinds(kinds)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise InvalidArgumentError("limit", f"must be an integer from 1 to 100, got {limit!r}")
        anchor = tree.check_datetime("as_of", as_of)
        zone = check_time_zone("time_zone", time_zone if time_zone is not None else self._time_zone())
        if not self.enabled:
            return []
        return await search_memory(
            self,
            query,
            agent=agent,
            user=user,
            thread_id=tid,
            limit=limit,
            kinds=wanted,
            anchor=anchor,
            time_zone=zone,
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
