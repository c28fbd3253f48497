"""The sections of a build's memory context besides history and recall, and the input's vector,
for :class:`~cogitator_memory.context.ContextBuilder` (a mixin, as :mod:`.relevance` is): the
graph context (see :mod:`.graph_context`), the observations of the entities the input names,
the input's vector (with the embedding service's cool-down, :mod:`~cogitator_memory.embeddings.cooldown`)
and the semantic context (the embedding store's nearest documents).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embeddings import cooldown
from ..embeddings.base import EmbeddingServiceError
from ..embeddings.cooldown import cooling, mark_failed, mark_working
from ..index.records import RecallFilter
from ..items.records import MemoryItem
from ..recall.indexed import MESSAGES_INDEX, ChannelHits
from ..recall.item_vectors import ITEMS_INDEX
from ..recall.query import QueryAnalysis
from ..result import unwrap
from ..tokens import MESSAGE_OVERHEAD
from .assembler import ContextAssembler
from .config import ContextBuilderConfig, ContextPartition
from .facts import FactLine
from .graph_context import GRAPH_HEADING, GraphContextNode, GraphSelection, graph_context, select_graph
from .history import HistoryWindow, TokenCache
from .records import BuiltContext, ContextBlock, ContextBuildError, DroppedBlock
from .turn_context import CLOSE_TAG, OPEN_TAG

if TYPE_CHECKING:
    from .sources import ContextBuilderDeps

#: Semantic context: how many results, and the least cosine they need.
SEMANTIC_LIMIT = 5
SEMANTIC_THRESHOLD = 0.7
#: The most vectors one semantic search looks through for them, past the ones memory keeps of
#: turns and items (in the same store, not semantic context: they are recalled by their channels).
SEMANTIC_MAX_SCAN = 1280
_OWN_INDEXES = frozenset({MESSAGES_INDEX, ITEMS_INDEX})
OBSERVATIONS_HEADING = "Observations:"


@dataclass(slots=True)
class _Loaded:
    """What a build's loads found, before assembly."""

    window: HistoryWindow = field(default_factory=HistoryWindow)
    history_ok: bool = True
    facts: list[FactLine] = field(default_factory=list)
    vector: list[float] | None = None
    items: list[MemoryItem] | None = None
    graph: GraphSelection | None = None
    observations: list[Any] | None = None
    assembler: ContextAssembler | None = None
    #: The thread's agent and user, read for the search of the user's other conversations
    #: (``None``: reading them or asking the channels below failed, and that search is not run).
    scope: tuple[str | None, str | None] | None = None
    #: What the recall index's keyword and time channels found for that search (asked while the
    #: input is embedded; ``None`` when it finds nothing by its rules).
    others_found: ChannelHits | None = None
    #: The scope the recall's items are asked of the recall index in, and what its channels
    #: found of them (``None``: the items were read whole into ``items``, or not at all).
    item_channels: tuple[RecallFilter, ChannelHits] | None = None


@dataclass(frozen=True, slots=True)
class _Observed:
    """An observation (``deps.observations``) as a block of the facts partition."""

    observation: Any


class MemorySections:
    """The graph, observations, input vector and semantic context of a build (mixed into
    :class:`~cogitator_memory.context.ContextBuilder`)."""

    config: ContextBuilderConfig
    deps: ContextBuilderDeps
    _tokens: TokenCache
    _inputs: OrderedDict[str, list[float]]

    if TYPE_CHECKING:  # the builder's

        async def _thread_scope(
            self, thread_id: str, agent_id: str | None, user_id: str | None
        ) -> tuple[str | None, str | None]: ...

    def _framing_tokens(self) -> int:
        """What the memory context's framing costs: its opening and closing tags and its message."""
        return self._tokens.text_tokens(OPEN_TAG) + self._tokens.text_tokens(CLOSE_TAG) + MESSAGE_OVERHEAD + 1

    async def _load_graph(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        text: str,
        analysis: QueryAnalysis,
        loaded: _Loaded,
        errors: list[ContextBuildError],
        warnings: list[str],
    ) -> None:
        """The graph context of the build (see ``context/graph_context.py``)."""
        adapter = self.deps.graph_adapter
        assert adapter is not None
        try:
            agent, user = await self._thread_scope(thread_id, agent_id, user_id)
            if agent is None:
                warnings.append("graph context needs an agent: give agent_id or build on a thread of an agent")
                return
            loaded.graph = await select_graph(
                adapter,
                agent,
                user,
                thread_id,
                text,
                analysis,
                self.config.graph_context_options,
                self._tokens.text_tokens,
            )
        except Exception as exc:
            errors.append(ContextBuildError("graph", exc))

    def _add_graph_blocks(
        self,
        blocks: dict[ContextPartition, list[ContextBlock]],
        overhead: dict[ContextPartition, int],
        graph: GraphSelection,
    ) -> None:
        """The graph's blocks at the end of the recall partition, with their heading (and the
        memory context's framing when nothing else frames it)."""
        if "brief" not in blocks and "recall" not in blocks:
            overhead["recall"] = overhead.get("recall", 0) + self._framing_tokens()
        blocks["recall"] = [*blocks.get("recall", ()), *graph.blocks]
        overhead["recall"] = overhead.get("recall", 0) + self._tokens.text_tokens(GRAPH_HEADING) + 2

    def _graph_result(self, built: BuiltContext, kept: Sequence[ContextBlock], graph: GraphSelection | None) -> None:
        """``graph_context``, its counts and what of it was left out, on a built context."""
        blocks = [b for b in kept if isinstance(b.item, GraphContextNode)]
        built.graph_context = graph_context(blocks)
        built.metadata.graph_nodes_included = len(built.graph_context.nodes)
        built.metadata.graph_edges_included = len(built.graph_context.edges)
        sent = {id(b) for b in blocks}
        dropped = built.dropped
        for block in graph.blocks if graph is not None else ():
            if id(block) not in sent:
                dropped.graph_nodes.append(block.item.node.model_copy(deep=True))
        for block in graph.extra if graph is not None else ():
            dropped.graph_nodes.append(block.item.node.model_copy(deep=True))
            dropped.blocks.append(DroppedBlock("recall", "not-selected", block.tokens, block.source_id))
            dropped.token_count += block.tokens

    async def _load_observations(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        loaded: _Loaded,
        errors: list[ContextBuildError],
    ) -> None:
        """The observations the run's scope sees (chosen for the turn once recall is known)."""
        try:
            agent, user = await self._thread_scope(thread_id, agent_id, user_id)
            if agent is not None:
                scope = {"agent_id": agent, "user_id": user}
                loaded.observations = list(await self.deps.observations.read(scope))
        except Exception as exc:
            errors.append(ContextBuildError("facts", exc))

    def _add_observations(
        self,
        blocks: dict[ContextPartition, list[ContextBlock]],
        overhead: dict[ContextPartition, int],
        observations: list[Any],
        text: str,
        recalled: Sequence[ContextBlock],
        errors: list[ContextBuildError],
    ) -> None:
        """Up to three observations of the entities the input names or whose items it recalled,
        after the facts (with their heading, and the framing when nothing else frames)."""
        try:
            item_ids = [b.item.id for b in recalled if isinstance(b.item, MemoryItem)]
            chosen = self.deps.observations.select(observations, text, item_ids)
            texts = [(o, str(o.context_text)) for o in chosen]
        except Exception as exc:
            errors.append(ContextBuildError("facts", exc))
            return
        if not texts:
            return
        if not any(part in blocks for part in ("brief", "facts", "recall")):
            overhead["facts"] = overhead.get("facts", 0) + self._framing_tokens()
        made = [
            ContextBlock("facts", t, self._tokens.text_tokens(t) + 2, f"observation:{o.path}", _Observed(o))
            for o, t in texts
        ]
        blocks["facts"] = [*blocks.get("facts", ()), *made]
        overhead["facts"] = overhead.get("facts", 0) + self._tokens.text_tokens(OBSERVATIONS_HEADING) + 2

    async def _load_vector(
        self, text: str, loaded: _Loaded, errors: list[ContextBuildError], relevance: bool, semantic: bool
    ) -> None:
        service = self.deps.embedding_service
        assert service is not None
        cached = self._inputs.get(text)
        if cached is not None:
            self._inputs.move_to_end(text)
            loaded.vector = cached
            return
        ago = cooling(service)
        failure: Exception | None = None
        if ago is not None:  # failed a moment ago (a build or a search): not asked again yet
            failure = EmbeddingServiceError(
                getattr(service, "provider", None) or type(service).__name__,
                None,
                f"failed {ago:.0f} s ago; not asked again until {cooldown.EMBEDDING_COOLDOWN:.0f} s after the failure",
            )
        else:
            try:
                vector = list(await service.embed(text))
            except Exception as exc:
                mark_failed(service)
                failure = exc
            else:
                mark_working(service)
        if failure is not None:
            if relevance:
                errors.append(ContextBuildError("relevance", failure))
            if semantic:
                errors.append(ContextBuildError("semantic", failure))
            return
        self._inputs[text] = vector
        while len(self._inputs) > 64:
            self._inputs.popitem(last=False)
        loaded.vector = vector

    async def _semantic(
        self,
        thread_id: str,
        agent_id: str | None,
        user_id: str | None,
        vector: list[float],
        errors: list[ContextBuildError],
    ) -> list[Any]:
        adapter = self.deps.embedding_adapter
        assert adapter is not None
        try:
            agent, user = await self._thread_scope(thread_id, agent_id, user_id)
            # the vectors memory keeps of turns and items are recalled by their own channels: a
            # store that leaves them out cheaply does (SQLite reads none of their codes), and the
            # hits are filtered here too (the others are searched with them, and widened below)
            scope: dict[str, Any] = {}
            if getattr(adapter, "cheap_metadata_not", False):
                scope["metadata_not"] = {"index": sorted(_OWN_INDEXES)}
            if agent is not None:
                scope["agent_id"] = agent
            if user is not None:
                scope["user_id"] = user
            limit = SEMANTIC_LIMIT * 4
            while True:
                hits = unwrap(await adapter.search(vector, limit=limit, threshold=SEMANTIC_THRESHOLD, filter=scope))
                out = [h for h in hits if (h.metadata or {}).get("index") not in _OWN_INDEXES]
                if len(out) >= SEMANTIC_LIMIT or len(hits) < limit or limit >= SEMANTIC_MAX_SCAN:
                    break
                limit *= 4  # a store full of turn vectors near the input: look further
        except Exception as exc:
            errors.append(ContextBuildError("semantic", exc))
            return []
        return out[:SEMANTIC_LIMIT]
