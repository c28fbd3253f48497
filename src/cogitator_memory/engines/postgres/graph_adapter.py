"""The knowledge graph in a PostgreSQL schema under the spec's name: :class:`PostgresGraphAdapter`.

:class:`~cogitator_memory.PostgresAdapter` keeps the graph next to threads, items and files in
one schema; ``PostgresGraphAdapter`` is that store under the name the spec uses, with its
``initialize()`` and ``close()``. See ``docs/tools.md``.
"""

from __future__ import annotations

from ...result import unwrap
from .adapter import PostgresAdapter


class PostgresGraphAdapter(PostgresAdapter):
    """The knowledge graph in a PostgreSQL schema (the spec's ``PostgresGraphAdapter``): a
    :class:`~cogitator_memory.PostgresAdapter` (same arguments: ``connection_string``,
    ``schema``, ``pool_size``...), with :meth:`initialize` and :meth:`close` besides ``connect``
    and ``disconnect`` (and ``async with``). Needs ``pip install 'cogitator-memory[postgres]'``."""

    async def initialize(self) -> None:
        """Connect and create the tables (calling it again does nothing); raises the store's
        error when it cannot be reached."""
        unwrap(await self.connect())

    async def close(self) -> None:
        """Close the connections. Safe to call twice."""
        unwrap(await self.disconnect())


__all__ = ["PostgresGraphAdapter"]
