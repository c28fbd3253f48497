"""What a build returns: :class:`BuiltContext`, what it left out, and the parts that failed.

These are results, not stored records, so they are plain dataclasses (cheap to make on every
turn). Entries, messages and embeddings inside them are the package's pydantic records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..threads.records import MemoryEntry, Message, copy_entry
from .config import ContextPartition

DropReason: TypeAlias = Literal["budget", "duplicate", "not-selected", "oversized"]
ContextErrorSource: TypeAlias = Literal["history", "facts", "semantic", "graph", "relevance"]


@dataclass(slots=True)
class ContextBlock:
    """One piece a partition may hold: its text, its tokens, and what it stands for.

    ``source_id`` names where it comes from (an entry, a fact, an embedding); ``item`` is that
    thing itself (a :class:`~cogitator_memory.MemoryEntry`, a fact, a search result); ``score``
    ranks it where the strategy ranks (relevance), ``None`` elsewhere.
    """

    partition: ContextPartition
    text: str
    tokens: int
    source_id: str | None = None
    item: Any = None
    score: float | None = None


@dataclass(frozen=True, slots=True)
class DroppedBlock:
    """A block left out: its partition, why (``budget``, ``duplicate``, ``not-selected``,
    ``oversized``), its tokens and where it came from."""

    partition: ContextPartition
    reason: DropReason
    tokens: int
    source_id: str | None = None


class _HoldsEntries:
    """The ``entries`` of a result: when the builder read them as a store's own objects (see
    ``BaseMemoryAdapter.get_path(copy=False)``), they are copied on first access, so a build
    pays for copies only when somebody looks and the caller never holds the store's objects."""

    __slots__ = ("_entries", "_entries_shared")

    def __post_init__(self) -> None:
        self._entries: list[MemoryEntry] = []
        self._entries_shared = False

    @property
    def entries(self) -> list[MemoryEntry]:
        """The entries (see the class docs of the result)."""
        if self._entries_shared:
            self._entries = [copy_entry(e) for e in self._entries]
            self._entries_shared = False
        return self._entries

    @entries.setter
    def entries(self, value: list[MemoryEntry]) -> None:
        self._entries = list(value)
        self._entries_shared = False

    def _hold(self, entries: list[MemoryEntry], *, shared: bool) -> None:
        self._entries = entries
        self._entries_shared = shared


@dataclass(slots=True)
class DroppedContext(_HoldsEntries):
    """Everything left out of a context.

    ``entries`` is the history left out, in conversation order: every entry of the view the build
    read and did not send (the builder reads the store in pages sized to the budget and lists the
    whole of the last page, so a thread of up to about a page is listed whole);
    ``entries_complete`` says whether the list reaches the start of the view (``False`` on a
    thread longer than what was read: older entries exist and are not listed, nor counted in
    ``token_count`` or ``metadata.original_message_count``). ``facts``, ``semantic_results`` and
    ``graph_nodes`` are what did not fit; ``token_count`` the tokens of all of it; ``blocks``
    every block with its partition and reason.
    """

    facts: list[Any] = field(default_factory=list)
    semantic_results: list[Any] = field(default_factory=list)
    graph_nodes: list[Any] = field(default_factory=list)
    token_count: int = 0
    blocks: list[DroppedBlock] = field(default_factory=list)
    entries_complete: bool = True


@dataclass(frozen=True, slots=True)
class ContextBuildError:
    """A part of the context that failed to load and was left out (a record, not an exception).

    ``source`` is ``history``, ``facts``, ``semantic``, ``graph`` or ``relevance``; ``error`` the
    exception it failed with.
    """

    source: ContextErrorSource
    error: BaseException

    @property
    def message(self) -> str:
        """The error's text."""
        return str(self.error) or type(self.error).__name__


@dataclass(slots=True)
class BuiltContextMetadata:
    """Counts of a build: history entries read and sent, facts, search results, graph items."""

    original_message_count: int = 0
    included_message_count: int = 0
    facts_included: int = 0
    semantic_results_included: int = 0
    graph_nodes_included: int = 0
    graph_edges_included: int = 0


@dataclass(slots=True)
class BuiltContext(_HoldsEntries):
    """A built context, ready to send.

    ``messages`` is ordered for the prompt cache: one system message (system prompt, pinned,
    index), the compaction summary and the history (``cache_breakpoint`` on its last message and
    on the last message of the turn before), then one user message holding ``memory_context``
    (brief, facts, relevant context, recall) in a ``<memory_context>`` block. ``partitions``
    gives the tokens per partition, the input (``final``) included; ``token_count`` the tokens of
    the messages, the input not included. ``truncated`` says history entries were left out.
    ``entries`` are the history entries sent, in conversation order (the summary not included).
    Every record in it is the caller's own: changing one changes no store.
    """

    messages: list[Message]
    memory_context: str | None = None
    partitions: dict[ContextPartition, int] = field(default_factory=dict)
    facts: list[Any] = field(default_factory=list)
    semantic_results: list[Any] = field(default_factory=list)
    recalled: dict[str, list[Any]] | None = None
    graph_context: Any = None
    token_count: int = 0
    truncated: bool = False
    dropped: DroppedContext = field(default_factory=DroppedContext)
    errors: list[ContextBuildError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    metadata: BuiltContextMetadata = field(default_factory=BuiltContextMetadata)
    #: The strategy that chose the history, which may differ from the one asked for: ``relevant``
    #: only when the entries were ranked by relevance, ``hybrid`` only when hybrid recall searched
    #: (``recalled`` is set then, ``None`` otherwise), ``recent`` in every other case (no input,
    #: small talk that hybrid does not search, relevance with no embedding service or failing).
    strategy: str = "recent"


__all__ = [
    "BuiltContext",
    "BuiltContextMetadata",
    "ContextBlock",
    "ContextBuildError",
    "ContextErrorSource",
    "DropReason",
    "DroppedBlock",
    "DroppedContext",
]
