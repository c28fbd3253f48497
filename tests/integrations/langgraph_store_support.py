"""What the LangGraph store tests copied from LangGraph need, made for :class:`CogitatorStore`.

``CharacterEmbeddings`` is copied from LangGraph (libs/checkpoint-postgres/tests/embed_test_utils.py,
https://github.com/langchain-ai/langgraph, MIT License, Copyright (c) 2024 LangChain, Inc.);
the rest opens a :class:`CogitatorStore` over a fresh store of each engine.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from cogitator_memory.integrations.langgraph import CogitatorStore, langchain_embedding_service
from cogitator_memory.runtime import Memory, SyncMemory
from engine_configs import memory_config

#: The engines the copied suites run on.
ENGINES = ["sqlite", "postgres", "memory", "redis", "mongodb"]


class CharacterEmbeddings(Embeddings):
    """Simple character-frequency based embeddings using random projections."""

    def __init__(self, dims: int = 50, seed: int = 42):
        """Initialize with embedding dimensions and random seed."""
        self._rng = random.Random(seed)
        self.dims = dims
        # Create projection vector for each character lazily
        self._char_projections: defaultdict[str, list[float]] = defaultdict(
            lambda: [self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)]
        )

    def _embed_one(self, text: str) -> list[float]:
        """Embed a single text."""
        counts = Counter(text)
        total = sum(counts.values())

        if total == 0:
            return [0.0] * self.dims

        embedding = [0.0] * self.dims
        for char, count in counts.items():
            weight = count / total
            char_proj = self._char_projections[char]
            for i, proj in enumerate(char_proj):
                embedding[i] += weight * proj

        norm = math.sqrt(sum(x * x for x in embedding))
        if norm > 0:
            embedding = [x / norm for x in embedding]

        return embedding

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a list of documents."""
        return [self._embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query string."""
        return self._embed_one(text)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CharacterEmbeddings) and self.dims == other.dims


@asynccontextmanager
async def open_memory(engine: str, tmp_path: Path, embeddings: Embeddings | None = None) -> AsyncIterator[Memory]:
    """A connected :class:`Memory` on a fresh store of ``engine``; with ``embeddings``, its
    vectors are made by them (LangGraph's test embeddings, 500 dimensions)."""
    config = memory_config(engine, tmp_path, "lg")
    if embeddings is None:
        config["embedding"] = {"provider": "none"}
        memory = Memory(config)
    else:
        dims = getattr(embeddings, "dims", 500)
        memory = Memory(config, embedding_service=langchain_embedding_service(embeddings, dims))
    async with memory:
        yield memory


@asynccontextmanager
async def open_store(
    engine: str, tmp_path: Path, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None
) -> AsyncIterator[CogitatorStore]:
    """A :class:`CogitatorStore` over a fresh store of ``engine``."""
    embeddings = index.get("embed") if index else None
    async with open_memory(engine, tmp_path, embeddings) as memory:
        store = CogitatorStore(memory, index=index, ttl=ttl)
        try:
            yield store
        finally:
            await store.stop_ttl_sweeper()


@contextmanager
def open_sync_store(
    engine: str, tmp_path: Path, *, index: dict[str, Any] | None = None, ttl: dict[str, Any] | None = None
) -> Iterator[CogitatorStore]:
    """A :class:`CogitatorStore` over a :class:`SyncMemory` on a fresh store of ``engine``."""
    embeddings = index.get("embed") if index else None
    config = memory_config(engine, tmp_path, "lg")
    if embeddings is None:
        config["embedding"] = {"provider": "none"}
        memory = SyncMemory(config)
    else:
        dims = getattr(embeddings, "dims", 500)
        memory = SyncMemory(config, embedding_service=langchain_embedding_service(embeddings, dims))
    with memory:
        store = CogitatorStore(memory, index=index, ttl=ttl)
        try:
            yield store
        finally:
            store.stop_ttl_sweeper()
