"""The recall index: one searchable record per thing memory can recall, kept by every store.

See :mod:`cogitator_memory.index.records` (the records and the scoping rule),
:mod:`cogitator_memory.index.terms` (stemmed terms), :mod:`cogitator_memory.index.base` (the
store contract) and :mod:`cogitator_memory.index.indexer` (what writes it).
"""

from .base import COMMON_TERMS_FROM, RECALL_BM25, RecallIndexAdapter, RecallIndexMixin, is_recall_index
from .records import (
    MAX_CANDIDATES,
    MAX_RECORD_BATCH,
    MAX_RECORD_CHARS,
    NO_USER,
    RECALL_KINDS,
    RecallCandidate,
    RecallFilter,
    RecallKind,
    RecallPage,
    RecallPrune,
    RecallRecord,
    RecallStatus,
    record_id,
    record_in_scope,
)
from .terms import query_terms, recall_terms

__all__ = [
    "COMMON_TERMS_FROM",
    "MAX_CANDIDATES",
    "MAX_RECORD_BATCH",
    "MAX_RECORD_CHARS",
    "NO_USER",
    "RECALL_BM25",
    "RECALL_KINDS",
    "RecallCandidate",
    "RecallFilter",
    "RecallIndexAdapter",
    "RecallIndexMixin",
    "RecallKind",
    "RecallPage",
    "RecallPrune",
    "RecallRecord",
    "RecallStatus",
    "is_recall_index",
    "query_terms",
    "recall_terms",
    "record_id",
    "record_in_scope",
]
