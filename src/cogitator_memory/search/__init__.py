"""Keyword and hybrid search: a Unicode tokenizer, BM25, reciprocal rank fusion, hybrid search and MMR.

Everything here is plain Python without I/O except :class:`HybridSearch`, which runs the two
searches of an :class:`~cogitator_memory.vectors.EmbeddingAdapter` and fuses them.
See ``docs/search.md``.
"""

from .bm25 import BM25, BM25Index
from .fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from .hybrid import HybridHit, HybridSearch
from .mmr import maximal_marginal_relevance
from .tokenizer import ENGLISH_STOPWORDS, Tokenizer, index_terms, tokenize

__all__ = [
    "BM25",
    "DEFAULT_RRF_K",
    "ENGLISH_STOPWORDS",
    "BM25Index",
    "HybridHit",
    "HybridSearch",
    "Tokenizer",
    "index_terms",
    "maximal_marginal_relevance",
    "reciprocal_rank_fusion",
    "tokenize",
]
