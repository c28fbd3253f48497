"""Token-aware context from memory: the builder, its partitions, strategies and message index.

:class:`ContextBuilder` builds the messages of the next model call from a thread (``recent``,
``relevant`` or ``hybrid`` history, facts, semantic context) within a token budget, ordered for
the prompt cache. :class:`ContextAssembler`, :data:`DEFAULT_PARTITIONS` and :func:`fit_in_order`
assemble contexts of your own; :class:`MessageIndex` keeps message vectors in an embedding
store; :func:`to_openai_messages` and :func:`to_anthropic_request` convert messages to request
shapes, :func:`from_openai_messages` and :func:`from_anthropic_messages` turn the SDKs' messages
into entries. See ``docs/context.md`` and ``docs/convert.md``.
"""

from ..models.convert import from_anthropic_messages, from_openai_messages, to_anthropic_request, to_openai_messages
from .assembler import DEFAULT_PARTITIONS, Assembly, ContextAssembler, Fit, Fitter, default_partitions, fit_in_order
from .builder import ContextBuilder, mark_turn_ends
from .config import (
    PARTITIONS,
    STRATEGIES,
    ContextBuilderConfig,
    ContextPartition,
    ContextPartitionBudget,
    ContextStrategy,
    GraphContextOptions,
    RecallSettings,
)
from .graph_context import GraphContext
from .history import (
    HistoryReader,
    HistoryWindow,
    compacted_history,
    entry_messages,
    read_compacted_history,
    summary_message,
)
from .message_index import MESSAGES_INDEX, MessageIndex
from .records import (
    BuiltContext,
    BuiltContextMetadata,
    ContextBlock,
    ContextBuildError,
    DroppedBlock,
    DroppedContext,
    DropReason,
)
from .sources import ContextBuilderDeps, ContextFact, FactSource
from .turn_context import extend_turn_context, format_turn_context, without_turn_context

__all__ = [
    "DEFAULT_PARTITIONS",
    "MESSAGES_INDEX",
    "PARTITIONS",
    "STRATEGIES",
    "Assembly",
    "BuiltContext",
    "BuiltContextMetadata",
    "ContextAssembler",
    "ContextBlock",
    "ContextBuildError",
    "ContextBuilder",
    "ContextBuilderConfig",
    "ContextBuilderDeps",
    "ContextFact",
    "ContextPartition",
    "ContextPartitionBudget",
    "ContextStrategy",
    "DropReason",
    "DroppedBlock",
    "DroppedContext",
    "FactSource",
    "Fit",
    "Fitter",
    "GraphContext",
    "GraphContextOptions",
    "HistoryReader",
    "HistoryWindow",
    "MessageIndex",
    "RecallSettings",
    "compacted_history",
    "default_partitions",
    "entry_messages",
    "extend_turn_context",
    "fit_in_order",
    "format_turn_context",
    "from_anthropic_messages",
    "from_openai_messages",
    "mark_turn_ends",
    "read_compacted_history",
    "summary_message",
    "to_anthropic_request",
    "to_openai_messages",
    "without_turn_context",
]
