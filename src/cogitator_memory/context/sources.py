"""What a :class:`~cogitator_memory.context.ContextBuilder` reads from: its dependencies.

:class:`ContextBuilderDeps` names them. The thread store is required; the rest are optional and
each enables a part: an embedding service (relevance, semantic context), an embedding store
(semantic context), a fact source or the memory items (``include_facts``, recalled items), a
message index, a graph store (``include_graph_context``), a reranker of recalled hits
(:class:`~cogitator_memory.recall.Reranker`, used by ``relevant`` and ``hybrid``) and the
observations of entities (:class:`~cogitator_memory.upkeep.MemoryObservations`: a turn naming
an entity, or recalling one of its items, gets up to three next to the facts).

:class:`FactSource` is the small protocol the builder needs of a fact store: any object with an
async ``get_facts(agent_id, *, user_id, limit)`` returning a
:class:`~cogitator_memory.MemoryResult` (or a plain list) of facts, each with ``id`` and
``content``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..embeddings.base import EmbeddingService
from ..errors import InvalidArgumentError
from ..result import MemoryResult
from ..threads.base import MemoryAdapter

if TYPE_CHECKING:
    from ..graph.base import GraphAdapter
    from ..vectors.base import EmbeddingAdapter
    from .message_index import MessageIndex


@runtime_checkable
class ContextFact(Protocol):
    """A fact as the builder reads it: an ``id`` and the ``content`` sent under ``Known facts:``."""

    @property
    def id(self) -> str: ...

    @property
    def content(self) -> str: ...


@runtime_checkable
class FactSource(Protocol):
    """Where ``include_facts`` reads facts from: the facts visible to an agent and a user, best
    first (the source orders them)."""

    async def get_facts(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> MemoryResult[Sequence[ContextFact]] | Sequence[ContextFact]: ...


@dataclass(slots=True)
class ContextBuilderDeps:
    """The stores and services a builder reads from (only ``memory_adapter`` is required)."""

    memory_adapter: MemoryAdapter
    embedding_service: EmbeddingService | None = None
    embedding_adapter: EmbeddingAdapter | None = None
    fact_adapter: FactSource | None = None
    message_index: MessageIndex | None = None
    graph_adapter: GraphAdapter | None = None
    memory_items: Any = None
    reranker: Any = None
    observations: Any = None


def check_deps(value: object) -> ContextBuilderDeps:
    """A checked :class:`ContextBuilderDeps` from one, or a dict of its fields."""
    if isinstance(value, ContextBuilderDeps):
        deps = value
    elif isinstance(value, Mapping):
        known = {f.name for f in fields(ContextBuilderDeps)}
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise InvalidArgumentError(
                "deps", f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        if value.get("memory_adapter") is None:
            raise InvalidArgumentError("deps.memory_adapter", "is required")
        deps = ContextBuilderDeps(**value)
    else:
        raise InvalidArgumentError("deps", f"must be a ContextBuilderDeps or a dict, got {type(value).__name__}")
    if not hasattr(deps.memory_adapter, "get_path"):
        raise InvalidArgumentError("deps.memory_adapter", "must be a thread store (MemoryAdapter)")
    if deps.embedding_service is not None and not hasattr(deps.embedding_service, "embed"):
        raise InvalidArgumentError("deps.embedding_service", "must be an EmbeddingService")
    if deps.embedding_adapter is not None and not hasattr(deps.embedding_adapter, "search"):
        raise InvalidArgumentError("deps.embedding_adapter", "must be an EmbeddingAdapter")
    if deps.fact_adapter is not None and not hasattr(deps.fact_adapter, "get_facts"):
        raise InvalidArgumentError(
            "deps.fact_adapter", "must have an async get_facts(agent_id, user_id=..., limit=...)"
        )
    if deps.graph_adapter is not None and not (
        hasattr(deps.graph_adapter, "traverse") and hasattr(deps.graph_adapter, "query_nodes")
    ):
        raise InvalidArgumentError("deps.graph_adapter", "must be a graph store (GraphAdapter)")
    if deps.observations is not None and not (
        hasattr(deps.observations, "read") and hasattr(deps.observations, "select")
    ):
        raise InvalidArgumentError("deps.observations", "must be a MemoryObservations (with read and select)")
    if deps.message_index is not None and not hasattr(deps.message_index, "search"):
        raise InvalidArgumentError("deps.message_index", "must be a MessageIndex")
    return deps


__all__ = ["ContextBuilderDeps", "ContextFact", "FactSource", "check_deps"]
