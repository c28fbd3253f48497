"""Helpers of the context tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogitator_memory import MemoryEntry, unwrap
from cogitator_memory.embeddings import HashingEmbedder
from cogitator_memory.threads.base import BaseMemoryAdapter


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that records every text it embeds (a real service, counted)."""

    def __init__(self, dimensions: int = 64) -> None:
        super().__init__(dimensions)
        self.texts: list[str] = []

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return await super()._embed_chunk(texts)


async def say(memory: BaseMemoryAdapter, thread_id: str, role: str, text: str, **extra: Any) -> MemoryEntry:
    """Add a message entry."""
    entry: dict[str, Any] = {"thread_id": thread_id, "message": {"role": role, "content": text, **extra}}
    return unwrap(await memory.add_entry(entry))


async def conversation(memory: BaseMemoryAdapter, thread_id: str, texts: Sequence[str]) -> list[MemoryEntry]:
    """Add the texts as alternating user / assistant messages."""
    return [await say(memory, thread_id, "user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
