"""The knowledge graph in a SQLite file under the spec's name: :class:`SQLiteGraphAdapter`.

Here the knowledge graph is kept by the thread stores themselves (every built-in store mixes in
:class:`~cogitator_memory.graph.base.GraphStoreMixin`), next to threads, items and files in the
same file. ``SQLiteGraphAdapter`` is :class:`~cogitator_memory.SQLiteAdapter` under the name the
spec's programmatic setup uses, with its ``initialize()`` and ``close()``::

    graph = SQLiteGraphAdapter(path="./memory.db")
    await graph.initialize()
    tools = create_memory_tools(graph_adapter=graph, core_facts=core_facts, agent_id="jarvis")

A graph store and a thread store of the same file are two connections to one database: what one
writes, the other reads. See ``docs/tools.md``.
"""

from __future__ import annotations

from ...result import unwrap
from .threads import SQLiteAdapter


class SQLiteGraphAdapter(SQLiteAdapter):
    """The knowledge graph in a SQLite file (the spec's ``SQLiteGraphAdapter``): a
    :class:`~cogitator_memory.SQLiteAdapter` (same arguments: ``path``, ``wal_mode``,
    ``busy_timeout``), with :meth:`initialize` and :meth:`close` besides ``connect`` and
    ``disconnect`` (and ``async with``)."""

    async def initialize(self) -> None:
        """Open the file and create the tables (calling it again does nothing); raises the
        store's error when it cannot be opened."""
        unwrap(await self.connect())

    async def close(self) -> None:
        """Close the file. Safe to call twice."""
        unwrap(await self.disconnect())


__all__ = ["SQLiteGraphAdapter"]
