"""Fixtures of the context tests: a fresh thread store of each embedded engine, and helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter
from cogitator_memory.threads.base import BaseMemoryAdapter


@pytest.fixture(params=["memory", "sqlite"])
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseMemoryAdapter]:
    store: BaseMemoryAdapter
    store = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=tmp_path / "threads.db")
    async with store:
        yield store
