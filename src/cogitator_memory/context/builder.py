"""``ContextBuilder``: a token-aware context for the next model call, from memory.

A build reads the newest part of the thread's compacted view that the budget can hold, the
facts and the semantic context it is asked for, fits them into partitions with a
:class:`~cogitator_memory.context.ContextAssembler`, and orders the messages for the prompt
cache. It never raises because a part failed to load: the part is left out and reported in
``errors`` (a relevance that fails falls back to the recent strategy). Bad arguments raise
:class:`~cogitator_memory.errors.InvalidArgumentError` naming the argument.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from .. import clock
from ..errors import InvalidArgumentError, NotFoundError
from ..items.records import MemoryItem
from ..jobs import given
from ..recall.indexed_items import FoundItems
from ..recall.query import THREAD_ABOVE_CHARS, QueryAnalysis, analyze_query_async, check_query
from ..result import unwrap
from ..threads import tree
from ..threads.records import MemoryEntry, Message, copy_entry, copy_message
from ..tokens import MESSAGE_OVERHEAD
from .assembler import Assembly, ContextAssembler, Fitter
from .config import (
    ContextBuilderConfig,
    ContextPartition,
    ContextStrategy,
    check_as_of,
    check_budget,
    check_config,
    check_reserve,
    check_strategy,
    check_text,
    check_texts,
    check_time_zone,
    default_reserve,
)
from .facts import FactLine, read_fact_lines
from .graph_context import GraphContextNode, graph_section
from .history import (
    HistoryReader,
    HistoryWindow,
    TokenCache,
    entry_messages,
    reads_shared,
    summary_message,
)
from .hybrid import (
    ITEMS_HEADING,
    OTHER_HEADING,
    TURNS_HEADING,
    HybridRecall,
    OtherTurn,
    RecalledTurns,
    estimated_cut,
    fit_recall,
    gather_vectors,
    settle_recall,
)
from .records import (
    BuiltContext,
    BuiltContextMetadata,
    ContextBlock,
    ContextBuildError,
    DroppedBlock,
    DroppedContext,
)
from .relevance import RelevanceRanking, _Branch
from .sections import (
    OBSERVATIONS_HEADING,
    SEMANTIC_LIMIT,
    SEMANTIC_THRESHOLD,
    MemorySections,
    _Loaded,
    _Observed,
)
from .sources import ContextBuilderDeps, check_deps
from .strategies import fit_recent, fit_relevant
from .turn_context import format_turn_context

#: The default of ``config.recall.window``: how many entries ``relevant`` scores without a
#: message index (the newest of the history; ``hybrid``: of the turns older than it keeps).
RELEVANT_WINDOW = 200
#: The default of ``config.recall.search_limit``: how many hits a search of the index asks for.
RELEVANT_SEARCH_LIMIT = 50
#: Facts read per build.
FACTS_LIMIT = 100
FACTS_HEADING = "Known facts:"
#: About what the note of an oversized tool result costs (the history read counts no more).
TOOL_NOTE_TOKENS = 30
SEMANTIC_HEADING = "Relevant context:"
#: History blocks kept per builder for entries read as a store's own objects (cleared when full).
MAX_HELD_BLOCKS = 50_000


class ContextBuilder(MemorySections, RelevanceRanking):
    """Builds the context of a turn (see the module docs and ``docs/context.md``).

    ``config`` is a :class:`ContextBuilderConfig` or a dict of its fields; ``deps`` a
    :class:`ContextBuilderDeps` or a dict (``memory_adapter`` required). Invalid partitions or
    options raise :class:`~cogitator_memory.errors.InvalidArgumentError`. One builder serves
    many threads and turns; it caches entry token counts, entry vectors (per entry id), the
    vector of recent inputs and the compaction in effect per thread.
    """

    def __init__(
        self,
        config: ContextBuilderConfig | dict[str, Any] | None = None,
        deps: ContextBuilderDeps | dict[str, Any] | None = None,
    ) -> None:
        self.config = check_config(config)
        if deps is None:
            raise InvalidArgumentError("deps", "is required: at least {'memory_adapter': <thread store>}")
        self.deps = check_deps(deps)
        if self.config.include_graph_context and self.deps.graph_adapter is None:
            raise InvalidArgumentError(
                "deps.graph_adapter", "is required by config.include_graph_context: give the graph store to read"
            )
        self.assembler = ContextAssembler(self.config.partitions, strategy=self.config.strategy)
        self._assemblers: dict[str, ContextAssembler] = {self.config.strategy: self.assembler}
        self._tokens = TokenCache()
        self._history = HistoryReader()
        self._vectors: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._inputs: OrderedDict[str, list[float]] = OrderedDict()
        self._branches: OrderedDict[str, _Branch] = OrderedDict()
        self._held_blocks: dict[str, ContextBlock] = {}
        self.max_cached_vectors = 20_000
        self._recall = HybridRecall(self.deps, self.config.recall, self._tokens)

    # ----- the build -------------------------------------------------------------------------

    async def build(
        self,
        thread_id: str,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        system_prompt: str | None = None,
        current_input: str | None = None,
        pinned: Sequence[str] | str | None = None,
        index: str | None = None,
        brief: str | None = None,
        max_tokens: int | None = None,
        reserve_tokens: int | None = None,
        leaf_id: str | None = None,
        as_of: datetime | None = None,
        time_zone: str | None = None,
        strategy: ContextStrategy | None = None,
    ) -> BuiltContext:
        """Build the context of the next turn of ``thread_id``.

        ``max_tokens`` (or the config's) is the budget, ``reserve_tokens`` (default 10% of it,
        at least 100) is kept free for the reply. ``pinned`` texts and ``index`` go into the
        system message with the system prompt; ``brief`` into the memory context;
        ``current_input`` is counted (partition ``final``) but not put in ``messages``; it is at
        most :data:`~cogitator_memory.recall.MAX_QUERY_CHARS` characters.
        ``leaf_id`` builds from that entry's branch instead of the active one. ``as_of`` is the
        moment the turn is read at (now by default): the time the input names ("yesterday") is
        read from it, and memory items are read as known then. ``time_zone`` (default the
        config's) is the IANA zone that time is read in and recalled turns are dated in.
        ``strategy`` (default the config's) is ``recent``, ``relevant`` or ``hybrid`` for this
        build only, with that strategy's default partitions under the config's ``partitions``.
        """
        cfg = self.config
        tid = tree.check_id("thread_id", thread_id)
        agent = tree.check_optional_id("agent_id", agent_id)
        user = tree.check_optional_id("user_id", user_id)
        prompt = check_text("system_prompt", system_prompt)
        text_input = check_text("current_input", current_input)
        if text_input is not None:
            check_query("current_input", text_input)  # at most MAX_QUERY_CHARS characters
        pins = check_texts("pinned", pinned)
        index_text = check_text("index", index)
        brief_text = check_text("brief", brief)
        leaf = tree.check_optional_id("leaf_id", leaf_id)
        anchor = check_as_of(as_of) or clock.now()
        zone = check_time_zone("time_zone", time_zone) if time_zone is not None else ZoneInfo(cfg.time_zone)
        strategy = cfg.strategy if strategy is None else check_strategy("strategy", strategy)
        assembler = self._assembler(strategy)
        if max_tokens is not None:
            limit = check_budget("max_tokens", max_tokens)
        elif cfg.max_tokens is not None:
            limit = cfg.max_tokens
        else:
            raise InvalidArgumentError("max_tokens", "no budget: give max_tokens to build() or to the config")
        if reserve_tokens is not None:
            reserve = check_reserve("reserve_tokens", reserve_tokens)
            if reserve >= limit:
                raise InvalidArgumentError("reserve_tokens", f"must be less than max_tokens ({limit}), got {reserve}")
        elif cfg.reserve_tokens is not None:
            reserve = cfg.reserve_tokens
            if reserve >= limit:
                raise InvalidArgumentError(
                    "reserve_tokens", f"the config's {reserve} must be less than max_tokens ({limit})"
                )
        else:
            reserve = default_reserve(limit)
        budget = max(0, limit - reserve)
        errors: list[ContextBuildError] = []
        warnings: list[str] = []
        if budget == 0:
            warnings.append(f"max_tokens {limit} minus reserve_tokens {reserve} leaves no room for the context")

        if text_input is not None and len(text_input) > THREAD_ABOVE_CHARS:
            # a long input is counted in a worker thread, off the event loop (then read from the cache)
            await asyncio.to_thread(self._tokens.text_tokens, text_input)
        blocks, overhead = self._required_blocks(prompt, pins, index_text, brief_text, text_input)
        required = sum(b.tokens for part in blocks.values() for b in part) + sum(overhead.values())
        room = max(0, budget - required)
        has_input = bool(text_input and text_input.strip())
        service = self.deps.embedding_service
        relevance = strategy == "relevant" and has_input and service is not None
        analysis: QueryAnalysis | None = None
        if (strategy == "hybrid" or relevance) and has_input:
            analysis = await analyze_query_async(text_input or "", anchor, zone)
        recall_on = strategy == "hybrid" and analysis is not None and analysis.search
        semantic = (
            cfg.include_semantic_context
            and has_input
            and service is not None
            and self.deps.embedding_adapter is not None
        )

        loaded = _Loaded(assembler=assembler)
        by_count = relevance and self.deps.message_index is None
        jobs = [self._load_history(tid, leaf, room, by_count, loaded, errors, warnings)]
        if cfg.include_facts and (self.deps.fact_adapter is not None or self.deps.memory_items is not None):
            jobs.append(
                self._load_facts(tid, agent, user, None if as_of is None else anchor, loaded, errors, text_input)
            )
        if relevance or semantic or (recall_on and service is not None):
            jobs.append(self._load_vector(text_input or "", loaded, errors, relevance or recall_on, semantic))
        if recall_on and self.deps.memory_items is not None and analysis is not None:
            jobs.append(self._load_items(tid, agent, user, anchor, as_of, analysis, loaded, errors))
        if recall_on and analysis is not None:
            jobs.append(self._load_other_channels(tid, analysis, loaded, errors))
        if cfg.include_graph_context and has_input:
            graph_analysis = analysis or await analyze_query_async(text_input or "", anchor, zone)
            jobs.append(self._load_graph(tid, agent, user, text_input or "", graph_analysis, loaded, errors, warnings))
        if self.deps.observations is not None and has_input:
            jobs.append(self._load_observations(tid, agent, user, loaded, errors))
        if len(jobs) == 1:  # most builds: no task to schedule
            await jobs[0]
        else:
            await asyncio.gather(*jobs)

        window = loaded.window
        candidates: list[ContextBlock] | None = None
        semantic_hits: list[Any] = []
        recall_blocks: list[ContextBlock] = []
        vector = loaded.vector
        rank_job = None
        if vector is not None and relevance and loaded.history_ok and analysis is not None:
            rank_job = self._rank(tid, leaf, window, vector, analysis, errors)
        semantic_job = self._semantic(tid, agent, user, vector, errors) if semantic and vector is not None else None
        recall_job = None
        if recall_on and loaded.history_ok and analysis is not None:
            recall_job = self._recall_blocks(tid, leaf, window, analysis, loaded, room, blocks, errors, zone, anchor)
        if rank_job is not None or semantic_job is not None or recall_job is not None:
            candidates, semantic_hits, recall_blocks = await asyncio.gather(
                rank_job or given(None), semantic_job or given([]), recall_job or given([])
            )
        # The strategy reported is the one that chose the history: ``hybrid`` only when its recall
        # searched, ``relevant`` only when the entries were ranked; otherwise ``recent``.
        if candidates is not None:
            used_strategy = "relevant"
        elif recall_job is not None:
            used_strategy = "hybrid"
        else:
            used_strategy = "recent"
        if strategy == "relevant" and has_input and service is None:
            warnings.append(
                "strategy 'relevant' needs an embedding service to rank the history; the newest entries"
                " were kept instead (strategy 'recent')"
            )
        if (
            candidates is None
            and by_count
            and loaded.history_ok
            and not window.complete
            and sum(self._tokens.tokens(e) for e in window.entries) <= room
        ):
            # Fell back to recent after a read of the newest entries by count: read by budget.
            await self._load_history(tid, leaf, room, False, loaded, errors, warnings)
            window = loaded.window

        start = 0
        if recall_blocks:  # the history keeps what recall leaves, at least its share
            need = sum(b.tokens for b in recall_blocks) + 30
            left = max(self._history_room(window, room, blocks, loaded), room - self._summary_tokens(window) - need)
            start = estimated_cut(window, left, self._tokens, self._window_blocks(window))
        self._add_context_blocks(
            blocks, overhead, window, loaded.facts, semantic_hits, candidates, recall_blocks, start
        )
        if loaded.graph is not None and loaded.graph.blocks:
            self._add_graph_blocks(blocks, overhead, loaded.graph)
        if loaded.observations:
            self._add_observations(blocks, overhead, loaded.observations, text_input or "", recall_blocks, errors)
        fitter: Fitter
        if candidates is not None:
            fitter = fit_relevant
        else:
            fitter = partial(fit_recent, complete=window.complete and start == 0, counter=self._tokens)
        fitters: dict[ContextPartition, Fitter] = {"recent": fitter}
        if recall_blocks:
            fitters["recall"] = fit_recall
        assembly = assembler.assemble(budget, blocks, fitters=fitters, overhead=overhead)
        if recall_blocks:
            assembly = await settle_recall(self._recall, tid, assembler, budget, blocks, overhead, fitter, assembly)
        warnings.extend(assembly.warnings)
        built = self._result(assembly, window, used_strategy, errors, warnings, window.entries[:start])
        if cfg.include_graph_context:
            self._graph_result(built, assembly.kept.get("recall", ()), loaded.graph)
        return built

    def _assembler(self, strategy: ContextStrategy) -> ContextAssembler:
        """The assembler of ``strategy``: the config's partitions over that strategy's defaults."""
        assembler = self._assemblers.get(strategy)
        if assembler is None:
            try:
                assembler = ContextAssembler(self.config.partitions, strategy=strategy)
            except InvalidArgumentError as exc:
                raise InvalidArgumentError(
                    "strategy", f"{strategy!r} cannot use the config's partitions: {exc}"
                ) from None
            self._assemblers[strategy] = assembler
        return assembler

    # ----- loading ---------------------------------------------------------------------------

    async def _load_history(
        self,
        thread_id: str,
        leaf_id: str | None,
        room: int,
        by_count: bool,
        loaded: _Loaded,
        errors: list[ContextBuildError],
        warnings: list[str],
    ) -> None:
        memory = self.deps.memory_adapter
        try:
            loaded.window = await self._history.read(
                memory,
                thread_id,
                leaf_id,
                tokens=self._held_tokens if reads_shared(memory) else self._tokens.tokens,
                tool_cap=TOOL_NOTE_TOKENS,
                token_limit=None if by_count else room,
                count_limit=self.config.recall.window if by_count else None,
            )
        except NotFoundError as exc:
            loaded.history_ok = False
            if leaf_id is not None:
                found = await memory.get_entry(leaf_id)
                if found.success and found.data is None:
                    raise InvalidArgumentError("leaf_id", f"{leaf_id} is not an entry") from None
                if found.success and found.data is not None and found.data.thread_id != thread_id:
                    raise InvalidArgumentError(
                        "leaf_id", f"{leaf_id} is an entry of thread {found.data.thread_id}, not of {thread_id}"
                    ) from None
            if "thread not found" in str(exc):
                warnings.append(f"thread {thread_id} not found: the context has no history")
            else:
                errors.append(ContextBuildError("history", exc))
        except Exception as exc:
            loaded.history_ok = False
            errors.append(ContextBuildError("history", exc))

    async def _thread_scope(
        self, thread_id: str, agent_id: str | None, user_id: str | None
    ) -> tuple[str | None, str | None]:
        if agent_id is not None:
            return agent_id, user_id
        found = await self.deps.memory_adapter.get_thread(thread_id)
        thread = unwrap(found)
        if thread is None:
            return None, user_id
        meta_user = thread.metadata.get("user_id")
        return thread.agent_id, user_id or (meta_user if isinstance(meta_user, str) else None)

    async def _load_facts(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        as_of: datetime | None,
        loaded: _Loaded,
        errors: list[ContextBuildError],
        query: str | None = None,
    ) -> None:
        """The facts of the build (see ``context/facts.py``): the items the run sees that hold
        at ``as_of`` (``None``: now), those of a fact source that keeps no items, and the facts
        ``remember`` saved that ``query`` (the input) matches."""
        try:
            agent, user = await self._thread_scope(thread_id, agent_id, user_id)
            if agent is None:
                return
            loaded.facts = await read_fact_lines(self.deps, agent, user, thread_id, as_of, FACTS_LIMIT, query)
        except Exception as exc:
            errors.append(ContextBuildError("facts", exc))

    # ----- hybrid recall -----------------------------------------------------------------------

    def _summary_tokens(self, window: HistoryWindow) -> int:
        if window.summary is None:
            return 0
        return self._tokens.text_tokens(summary_message(window.summary).text) + MESSAGE_OVERHEAD

    def _history_room(
        self, window: HistoryWindow, room: int, required: dict[ContextPartition, list[ContextBlock]], loaded: _Loaded
    ) -> int:
        """The room the history is sure of: its share of the room, as the assembler gives it (what
        the shares of recall and facts leave; room facts leave goes to recall first). A history cut
        for more would lose its oldest turns in assembly, and the room they were cut for."""
        share = (loaded.assembler or self.assembler).shares().get("recent", 0.0)
        return max(0, int((room - self._summary_tokens(window)) * share))

    def _window_blocks(self, window: HistoryWindow) -> list[ContextBlock]:
        return [ContextBlock("recent", "", self._tokens.tokens(e), e.id, e) for e in window.entries]

    async def _load_items(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        anchor: datetime,
        as_of: datetime | None,
        analysis: QueryAnalysis,
        loaded: _Loaded,
        errors: list[ContextBuildError],
    ) -> None:
        """The items the recall ranks: what the recall index's channels find of them (the items'
        vectors are searched once the input's is made), or every item the run sees when the
        index cannot answer for them (see :meth:`HybridRecall.item_filter`)."""
        try:
            agent, user = await self._thread_scope(thread_id, agent_id, user_id)
            flt = self._recall.item_filter(agent, user, as_of)
            if flt is not None:
                loaded.item_channels = flt, await self._recall.item_channels(flt, analysis)
            else:
                loaded.items = await self._recall.read_items(agent, user, thread_id, anchor)
        except Exception as exc:
            errors.append(ContextBuildError("relevance", exc))

    async def _load_other_channels(
        self, thread_id: str, analysis: QueryAnalysis, loaded: _Loaded, errors: list[ContextBuildError]
    ) -> None:
        """The thread's agent and user, and what the recall index's keyword and time channels
        find of the user's other conversations (asked while the input is embedded: they need
        no vector)."""
        try:
            agent, user = await self._thread_scope(thread_id, None, None)
            loaded.others_found = await self._recall.other_channels(agent, user, analysis)
            loaded.scope = agent, user
        except Exception as exc:
            errors.append(ContextBuildError("relevance", exc))

    async def _recall_blocks(
        self,
        thread_id: str,
        leaf_id: str | None,
        window: HistoryWindow,
        analysis: QueryAnalysis,
        loaded: _Loaded,
        room: int,
        required: dict[ContextPartition, list[ContextBlock]],
        errors: list[ContextBuildError],
        zone: ZoneInfo,
        as_of: datetime,
    ) -> list[ContextBlock]:
        """The recall partition's blocks of a hybrid build, best first (see ``context/hybrid.py``):
        those of the thread's older turns, then those of the user's other conversations. The two
        searches run side by side (one's reads while the other ranks); one that fails leaves the
        other's blocks and is reported in ``errors``."""

        async def indexed_items() -> FoundItems | None:
            if loaded.item_channels is None:
                return None
            flt, found = loaded.item_channels
            try:
                return await self._recall.indexed_items(flt, thread_id, analysis, found, loaded.vector)
            except Exception as exc:  # the turns are still searched
                errors.append(ContextBuildError("relevance", exc))
                return None

        async def own() -> list[ContextBlock]:
            try:
                history_room = self._history_room(window, room, required, loaded)
                cut = estimated_cut(window, history_room, self._tokens, self._window_blocks(window))
                turns, places = await self._recall.older_turns(thread_id, leaf_id, window, cut)
                (turn_cos, item_cos), indexed = await asyncio.gather(
                    gather_vectors(
                        self._recall, thread_id, turns, loaded.items, loaded.vector, self._embed_entries, errors
                    ),
                    indexed_items(),
                )
                hits = await self._recall.search(analysis, turns, turn_cos, loaded.items, item_cos, errors, indexed)
                return self._recall.blocks(hits, turns, zone, as_of, analysis.terms, places)
            except Exception as exc:
                errors.append(ContextBuildError("relevance", exc))
                return []

        async def others() -> list[ContextBlock]:
            if loaded.scope is None:  # its channels failed (reported) before
                return []
            agent, user = loaded.scope
            try:
                return await self._recall.other_conversations(
                    thread_id, agent, user, analysis, loaded.vector, zone, errors, loaded.others_found
                )
            except Exception as exc:
                errors.append(ContextBuildError("relevance", exc))
                return []

        mine, theirs = await asyncio.gather(own(), others())
        return [*mine, *theirs]

    def _held_tokens(self, entry: MemoryEntry) -> int:
        """The tokens of an entry that is a store's own object (see ``reads_shared``): such an
        object never changes (a changed entry is a new object), so its history block, tokens
        included, is made once per object and found again by identity."""
        held = self._held_blocks
        block = held.get(entry.id)
        if block is None or block.item is not entry:
            if len(held) >= MAX_HELD_BLOCKS:
                held.clear()
            block = held[entry.id] = ContextBlock("recent", "", self._tokens.tokens(entry), entry.id, entry)
        return block.tokens

    # ----- assembly --------------------------------------------------------------------------

    def _required_blocks(
        self, prompt: str | None, pins: list[str], index_text: str | None, brief: str | None, text_input: str | None
    ) -> tuple[dict[ContextPartition, list[ContextBlock]], dict[ContextPartition, int]]:
        blocks: dict[ContextPartition, list[ContextBlock]] = {}
        overhead: dict[ContextPartition, int] = {}
        if self.config.include_system_prompt and prompt and prompt.strip():
            blocks["system"] = [
                ContextBlock("system", prompt, self._tokens.text_tokens(prompt) + MESSAGE_OVERHEAD, "system_prompt")
            ]
        if pins:
            blocks["pinned"] = [
                ContextBlock("pinned", text, self._tokens.text_tokens(text) + 1, f"pinned:{i}")
                for i, text in enumerate(pins)
            ]
        if index_text and index_text.strip():
            blocks["index"] = [ContextBlock("index", index_text, self._tokens.text_tokens(index_text) + 1, "index")]
        if "system" not in blocks:
            first: ContextPartition | None = (
                "pinned" if "pinned" in blocks else ("index" if "index" in blocks else None)
            )
            if first is not None:
                overhead[first] = MESSAGE_OVERHEAD
        if brief and brief.strip():
            blocks["brief"] = [ContextBlock("brief", brief, self._tokens.text_tokens(brief) + 1, "brief")]
        if text_input and text_input.strip():
            blocks["final"] = [
                ContextBlock(
                    "final", text_input, self._tokens.text_tokens(text_input) + MESSAGE_OVERHEAD, "current_input"
                )
            ]
        return blocks, overhead

    def _add_context_blocks(
        self,
        blocks: dict[ContextPartition, list[ContextBlock]],
        overhead: dict[ContextPartition, int],
        window: HistoryWindow,
        facts: list[FactLine],
        hits: list[Any],
        candidates: list[ContextBlock] | None,
        recalled: list[ContextBlock],
        start: int = 0,
    ) -> None:
        if window.summary is not None:
            text = summary_message(window.summary).text
            blocks["summaries"] = [
                ContextBlock(
                    "summaries",
                    text,
                    self._tokens.text_tokens(text) + MESSAGE_OVERHEAD,
                    window.summary.id,
                    window.summary,
                )
            ]
        if facts:
            blocks["facts"] = [
                ContextBlock("facts", f.text, self._tokens.text_tokens(f.text) + 2, f.source_id, f.fact) for f in facts
            ]
            overhead["facts"] = overhead.get("facts", 0) + self._tokens.text_tokens(FACTS_HEADING) + 1
        if recalled or hits:
            blocks["recall"] = [
                *recalled,
                *(
                    ContextBlock("recall", h.content, self._tokens.text_tokens(h.content) + 2, h.id, h, float(h.score))
                    for h in hits
                ),
            ]
            heads = [SEMANTIC_HEADING] if hits else []
            if any(isinstance(b.item, RecalledTurns) for b in recalled):
                heads.append(TURNS_HEADING)
            if any(isinstance(b.item, OtherTurn) for b in recalled):
                heads.append(OTHER_HEADING)
            if any(isinstance(b.item, MemoryItem) for b in recalled):
                heads.append(ITEMS_HEADING)
            overhead["recall"] = overhead.get("recall", 0) + sum(self._tokens.text_tokens(h) + 2 for h in heads)
        framing = self._framing_tokens()
        if "brief" in blocks:
            overhead["brief"] = overhead.get("brief", 0) + framing
        else:
            for part in ("facts", "recall"):
                if part in blocks:
                    overhead[part] = overhead.get(part, 0) + framing
        if candidates is not None:
            blocks["recent"] = candidates
        elif window.shared:  # the blocks the reader kept while counting (see _held_tokens)
            held = self._held_blocks
            recent: list[ContextBlock] = []
            for e in window.entries[start:]:
                block = held.get(e.id)
                if block is None or block.item is not e:  # dropped when the cache was cleared
                    block = ContextBlock("recent", "", self._tokens.tokens(e), e.id, e)
                recent.append(block)
            blocks["recent"] = recent
        else:
            known = window.tokens
            blocks["recent"] = [
                ContextBlock("recent", "", known.get(e.id) or self._tokens.tokens(e), e.id, e)
                for e in window.entries[start:]
            ]

    def _result(
        self,
        assembly: Assembly,
        window: HistoryWindow,
        strategy: str,
        errors: list[ContextBuildError],
        warnings: list[str],
        hidden: Sequence[MemoryEntry] = (),
    ) -> BuiltContext:
        kept = assembly.kept
        messages: list[Message] = []
        system_parts = [b.text for part in ("system", "pinned", "index") for b in kept.get(part, ())]
        if system_parts:
            messages.append(Message(role="system", content="\n\n".join(system_parts)))
        history: list[Message] = []
        summary_kept = bool(kept.get("summaries"))
        if summary_kept and window.summary is not None:
            history.append(summary_message(window.summary))
        included: list[MemoryEntry] = []
        shared = window.shared
        for block in kept.get("recent", ()):
            item = block.item
            for entry in item if isinstance(item, list) else (item,):
                included.append(entry)
                message = entry.message
                if message is not None and not entry.tool_results and not entry.tool_calls:
                    history.append(copy_message(message) if shared else message)  # most entries
                else:
                    history.extend(entry_messages(entry, copy=shared))
        mark_turn_ends(history)
        messages.extend(history)
        sections: list[str | None] = [kept["brief"][0].text if kept.get("brief") else None]
        fact_blocks = [b for b in kept.get("facts", ()) if not isinstance(b.item, _Observed)]
        facts = [b.item for b in fact_blocks]
        if facts:
            sections.append(FACTS_HEADING + "\n" + "\n".join(f"- {b.text}" for b in fact_blocks))
        observed = [b.text for b in kept.get("facts", ()) if isinstance(b.item, _Observed)]
        if observed:
            sections.append(OBSERVATIONS_HEADING + "\n" + "\n\n".join(observed))
        kept_recall = kept.get("recall", ())
        semantic_blocks = [
            b for b in kept_recall if not isinstance(b.item, RecalledTurns | OtherTurn | MemoryItem | GraphContextNode)
        ]
        semantic = [b.item for b in semantic_blocks]
        if semantic:
            sections.append(SEMANTIC_HEADING + "\n" + "\n".join(f"- {b.text}" for b in semantic_blocks))
        turn_blocks = [b for b in kept_recall if isinstance(b.item, RecalledTurns)]
        if turn_blocks:
            sections.append(TURNS_HEADING + "\n" + "\n\n".join(b.text for b in turn_blocks))
        other_blocks = [b for b in kept_recall if isinstance(b.item, OtherTurn)]
        if other_blocks:
            sections.append(OTHER_HEADING + "\n" + "\n".join(b.text for b in other_blocks))
        item_blocks = [b for b in kept_recall if isinstance(b.item, MemoryItem)]
        if item_blocks:
            sections.append(ITEMS_HEADING + "\n" + "\n".join(f"- {b.text}" for b in item_blocks))
        graph_blocks = [b for b in kept_recall if isinstance(b.item, GraphContextNode)]
        if graph_blocks:
            sections.append(graph_section(graph_blocks))
        recalled_entries = [e for b in turn_blocks for e in b.item.hits]
        recalled_ids = {e.id for e in recalled_entries}
        memory_context = format_turn_context(sections) or None
        if memory_context:
            messages.append(Message(role="user", content=memory_context))

        dropped = DroppedContext(blocks=assembly.dropped_blocks)
        sent = {e.id for e in included}
        lost: dict[str, MemoryEntry] = {}
        history_cut = not window.complete
        for block, _reason in assembly.dropped:
            dropped.token_count += block.tokens
            if block.partition == "recent":
                for entry in block.item if isinstance(block.item, list) else [block.item]:
                    if entry.id not in sent and entry.id not in recalled_ids:
                        lost[entry.id] = entry
                        history_cut = True
            elif block.partition == "facts" and not isinstance(block.item, _Observed):
                dropped.facts.append(block.item)
            elif block.partition == "recall" and not isinstance(
                block.item, RecalledTurns | OtherTurn | MemoryItem | GraphContextNode
            ):
                dropped.semantic_results.append(block.item)
        # older than the history hybrid keeps, and the rest of the last page read: not recalled
        for entry in itertools.chain(hidden, window.older):
            if entry.id not in recalled_ids and entry.id not in lost:
                tokens = self._tokens.tokens(entry)
                lost[entry.id] = entry
                dropped.blocks.append(DroppedBlock("recent", "budget", tokens, entry.id))
                dropped.token_count += tokens
                history_cut = True
        dropped._hold(sorted(lost.values(), key=lambda e: e.seq), shared=window.shared)
        dropped.entries_complete = window.listed_complete
        partitions = {p: t for p, t in assembly.tokens.items() if t > 0}
        original = len(sent) + len(lost)
        built = BuiltContext(
            messages=messages,
            memory_context=memory_context,
            partitions=partitions,
            facts=facts,
            semantic_results=semantic,
            token_count=assembly.used - partitions.get("final", 0),
            truncated=history_cut,
            dropped=dropped,
            errors=errors,
            warnings=warnings,
            metadata=BuiltContextMetadata(
                original_message_count=max(original, len(window.entries)),
                included_message_count=len(included),
                facts_included=len(facts),
                semantic_results_included=len(semantic),
            ),
            strategy=strategy,
        )
        if strategy == "hybrid":  # only when hybrid recall searched (see build)
            built.recalled = {
                "entries": [copy_entry(e) for e in recalled_entries],
                "items": [b.item.model_copy(deep=True) for b in item_blocks],
            }
        built._hold(included, shared=window.shared)
        return built


def mark_turn_ends(history: list[Message]) -> None:
    """Set ``cache_breakpoint`` on the last message of ``history`` and on the last message of the
    turn before it (the message before the last user message), in place, on copies of them."""
    if not history:
        return
    marks = [len(history) - 1]
    for i in range(len(history) - 1, 0, -1):
        if history[i].role == "user":
            marks.append(i - 1)
            break
    for i in marks:  # copies, so the entries' own messages stay as they were read
        history[i] = history[i].model_copy(update={"cache_breakpoint": True})


__all__ = [
    "FACTS_HEADING",
    "OBSERVATIONS_HEADING",
    "RELEVANT_SEARCH_LIMIT",
    "RELEVANT_WINDOW",
    "SEMANTIC_HEADING",
    "SEMANTIC_LIMIT",
    "SEMANTIC_THRESHOLD",
    "ContextBuilder",
    "mark_turn_ends",
]
