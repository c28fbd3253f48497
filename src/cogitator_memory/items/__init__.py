"""Memory items: what conversations established, with quotes, trust, scope and times.

:mod:`.records` holds the records (``MemoryItem``, ``NewMemoryItem``, ``MemoryScope``,
``MemoryItemFilter``, ``ItemUpdate``) and the keys engines index by, :mod:`.base` the
``MemoryItemAdapter`` protocol and the ``MemoryItemStoreMixin`` engines mix into their adapter
class, :mod:`.rules` the rules without I/O (same value, layout by time, trust, activation,
bitemporal reads) and :mod:`.service` ``MemoryItems``, which applies them over a store. Engines implement it in ``cogitator_memory.engines.<engine>.items``; nothing
here imports an engine. See ``docs/items.md``.
"""

from . import rules
from .base import (
    BaseMemoryItemAdapter,
    ItemFilterInput,
    ItemInput,
    MemoryItemAdapter,
    MemoryItemStoreMixin,
    UpdateInput,
    is_memory_item_adapter,
)
from .extract import (
    EXTRACTION_ATTEMPTS,
    EXTRACTION_CONTINUATIONS,
    EXTRACTION_PROMPT,
    ExtractedItem,
    ExtractedQuote,
    ExtractionAnswerError,
    ExtractionMode,
    ExtractionReport,
    MemoryExtractor,
    WindowError,
    WindowReport,
    extraction_continuation_prompt,
    parse_extraction,
    trust_of_entry,
)
from .records import (
    ITEM_KINDS,
    ITEM_STATUSES,
    TRUST_ORDER,
    ItemEvidence,
    ItemKind,
    ItemOrder,
    ItemQuery,
    ItemStatus,
    ItemUpdate,
    MemoryItem,
    MemoryItemFilter,
    MemoryScope,
    NewMemoryItem,
    Slot,
    Trust,
)
from .rules import same_value
from .service import MemoryItems, without_entries

__all__ = [
    "EXTRACTION_ATTEMPTS",
    "EXTRACTION_CONTINUATIONS",
    "EXTRACTION_PROMPT",
    "ITEM_KINDS",
    "ITEM_STATUSES",
    "TRUST_ORDER",
    "BaseMemoryItemAdapter",
    "ExtractedItem",
    "ExtractedQuote",
    "ExtractionAnswerError",
    "ExtractionMode",
    "ExtractionReport",
    "ItemEvidence",
    "ItemFilterInput",
    "ItemInput",
    "ItemKind",
    "ItemOrder",
    "ItemQuery",
    "ItemStatus",
    "ItemUpdate",
    "MemoryExtractor",
    "MemoryItem",
    "MemoryItemAdapter",
    "MemoryItemFilter",
    "MemoryItemStoreMixin",
    "MemoryItems",
    "MemoryScope",
    "NewMemoryItem",
    "Slot",
    "Trust",
    "UpdateInput",
    "WindowError",
    "WindowReport",
    "extraction_continuation_prompt",
    "is_memory_item_adapter",
    "parse_extraction",
    "rules",
    "same_value",
    "trust_of_entry",
    "without_entries",
]
